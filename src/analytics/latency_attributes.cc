#include "analytics/latency_attributes.h"

#include "core/semconv.h"
#include "core/static_key.h"

namespace infertel::analytics {
namespace sc = semconv;

bool EngineFailed(const openai::Exchange& ex) {
  using openai::Outcome;
  return ex.outcome == Outcome::kEngineError || ex.outcome == Outcome::kUpstreamUnavailable ||
         ex.outcome == Outcome::kUpstreamTimeout;
}

Timeline GatewayTimeline(const openai::Exchange& ex) {
  Timeline t;
  const std::uint64_t start = ex.start.mono_start_ns;
  if (ex.end_mono_ns > start) t.e2e_s = static_cast<double>(ex.end_mono_ns - start) / 1e9;
  if (ex.upstream_sent_mono_ns > start)
    t.gateway_s = static_cast<double>(ex.upstream_sent_mono_ns - start) / 1e9;
  t.client_s = static_cast<double>(ex.client_wait_ns) / 1e9;
  t.engine_error = EngineFailed(ex);
  t.prompt_tokens = ex.response.usage.input_tokens;
  t.output_tokens = ex.response.usage.output_tokens;
  t.cached_tokens = ex.response.usage.cached_tokens;
  t.missed = ex.slo.missed;
  return t;
}

void AddCauseAttributes(const Timeline& t, const Attribution& a, Attributes* attrs) {
  if (!a.cause.empty()) AddAttr(attrs, Key<sc::kInfertelLatencyCause>(), a.cause);
  if (t.gateway_s) AddAttr(attrs, Key<sc::kInfertelLatencyGateway>(), a.gateway_s);
  if (t.client_s) AddAttr(attrs, Key<sc::kInfertelLatencyClient>(), a.client_s);
  if (t.requests_ahead) AddAttr(attrs, Key<sc::kInfertelQueueRequestsAhead>(), *t.requests_ahead);
  if (t.interference_prefill_tokens)
    AddAttr(attrs, Key<sc::kInfertelInterferencePrefillTokens>(), *t.interference_prefill_tokens);
  if (t.preemptions) AddAttr(attrs, Key<sc::kInfertelPreemptions>(), *t.preemptions);
}

namespace {

// The causes the gateway's view decides alone; the others need the engine's phases.
bool GatewayCause(std::string_view cause) {
  return cause == sc::kLatencyCauseClient || cause == sc::kLatencyCauseGateway ||
         cause == sc::kLatencyCauseEngineError;
}

}  // namespace

void AddEntryLatencyAttributes(const openai::Exchange& ex, Attributes* attrs) {
  Timeline t = GatewayTimeline(ex);
  if (auto ratio = CacheHitRatio(t.cached_tokens, t.prompt_tokens))
    AddAttr(attrs, Key<sc::kInfertelCacheHitRatio>(), *ratio);
  if (ex.slo.missed == 0) {
    // Kept for an explanation on demand (infertel traces --explain).
    if (ex.client_wait_ns > 0) AddAttr(attrs, Key<sc::kInfertelLatencyClient>(), *t.client_s);
    return;
  }
  Attribution a = Attribute(t);
  if (!GatewayCause(a.cause)) a.cause = {};  // the engine span's to say
  if (ex.client_wait_ns == 0) t.client_s.reset();
  AddCauseAttributes(t, a, attrs);
}

}  // namespace infertel::analytics
