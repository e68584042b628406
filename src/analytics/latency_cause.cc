#include "analytics/latency_cause.h"

#include <algorithm>
#include <array>

#include "core/semconv.h"
#include "openai/exchange.h"

namespace infertel::analytics {
namespace sc = semconv;

namespace {

double NonNegative(std::optional<double> v) { return v && *v > 0 ? *v : 0; }

// The components, each at least 0; the engine's part stays unsplit when no phase is known.
void Components(const Timeline& t, Attribution* a) {
  a->gateway_s = NonNegative(t.gateway_s);
  a->client_s = NonNegative(t.client_s);
  a->queue_s = NonNegative(t.queue_s);
  a->prefill_s = NonNegative(t.prefill_s);
  a->decode_s = NonNegative(t.decode_s);
  a->kv_transfer_s = NonNegative(t.kv_transfer_s);
  const bool phases = t.queue_s || t.prefill_s || t.decode_s || t.kv_transfer_s;
  if (!phases) a->engine_unsplit_s = std::max(0.0, t.e2e_s - a->gateway_s - a->client_s);
}

enum class Part { kQueue, kKvTransfer, kPrefill, kDecode, kClient, kGateway, kEngine };

// Which parts an objective is about: a first token comes after the gateway, the queue, the KV
// transfer and the prefill; the time per output token is the decode's and the client's; the
// whole request (an e2e miss, several misses, or none: on demand) is every part.
bool InScope(Part p, std::uint8_t missed) {
  const bool ttft = missed & openai::kSloMissTtft, tpot = missed & openai::kSloMissTpot;
  const bool e2e = missed & openai::kSloMissE2e;
  if (ttft && !tpot && !e2e) return p != Part::kDecode && p != Part::kClient;
  if (tpot && !ttft && !e2e) return p == Part::kDecode || p == Part::kClient || p == Part::kEngine;
  return true;
}

// The largest part in scope (ties: the first in the order below); nullopt when all are 0.
std::optional<Part> Largest(const Attribution& a, std::uint8_t missed) {
  const std::array<std::pair<Part, double>, 7> parts = {{{Part::kQueue, a.queue_s},
                                                         {Part::kKvTransfer, a.kv_transfer_s},
                                                         {Part::kPrefill, a.prefill_s},
                                                         {Part::kDecode, a.decode_s},
                                                         {Part::kClient, a.client_s},
                                                         {Part::kGateway, a.gateway_s},
                                                         {Part::kEngine, a.engine_unsplit_s}}};
  std::optional<Part> best;
  double most = 0;
  for (const auto& [part, s] : parts) {
    if (!InScope(part, missed) || s <= most) continue;
    best = part;
    most = s;
  }
  return best;
}

bool Preempted(const Timeline& t) { return t.preemptions && *t.preemptions > 0; }

// The decode was the largest part: preempted (reported), slowed by others' prefills, or long.
std::string_view DecodeCause(const Timeline& t) {
  if (Preempted(t)) return sc::kLatencyCausePreemption;
  const std::int64_t others = t.interference_prefill_tokens.value_or(0);
  const bool tpot_only = (t.missed & openai::kSloMissTpot) &&
                         !(t.missed & (openai::kSloMissTtft | openai::kSloMissE2e));
  // A slow decode per token is not a long output: any overlap is then the likelier cause.
  if (others >= CauseThresholds::kInterferenceTokens || (tpot_only && others > 0))
    return sc::kLatencyCauseInterference;
  return sc::kLatencyCauseLongOutput;
}

}  // namespace

std::optional<double> CacheHitRatio(std::optional<std::int64_t> cached,
                                    std::optional<std::int64_t> prompt) {
  if (!cached || !prompt || *prompt <= 0) return std::nullopt;
  return std::clamp(static_cast<double>(*cached) / static_cast<double>(*prompt), 0.0, 1.0);
}

Attribution Attribute(const Timeline& t) {
  Attribution a;
  a.cache_hit_ratio = CacheHitRatio(t.cached_tokens, t.prompt_tokens);
  Components(t, &a);
  if (t.engine_error || (t.missed & openai::kSloMissError)) {
    a.cause = sc::kLatencyCauseEngineError;
    a.component = "error";
    return a;
  }
  const std::optional<Part> part = Largest(a, t.missed);
  if (!part) return a;
  switch (*part) {
    case Part::kQueue:
    case Part::kKvTransfer:
      // A preempted request goes back to the queue and waits there again.
      a.cause = Preempted(t) ? sc::kLatencyCausePreemption : sc::kLatencyCauseQueue;
      a.component = *part == Part::kQueue ? "queue" : "kv_transfer";
      break;
    case Part::kPrefill:
      a.cause = a.cache_hit_ratio && *a.cache_hit_ratio < CauseThresholds::kCacheMissRatio
                    ? sc::kLatencyCausePrefixCacheMiss
                    : sc::kLatencyCauseLongPrompt;
      a.component = "prefill";
      break;
    case Part::kDecode:
      a.cause = DecodeCause(t);
      a.component = "decode";
      break;
    case Part::kClient:
      a.cause = sc::kLatencyCauseClient;
      a.component = "client";
      break;
    case Part::kGateway:
      a.cause = sc::kLatencyCauseGateway;
      a.component = "gateway";
      break;
    case Part::kEngine:
      a.component = "engine";  // its phases unknown: no cause from the gateway's view alone
      break;
  }
  return a;
}

}  // namespace infertel::analytics
