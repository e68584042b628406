#include "config/keys.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <vector>

namespace infertel::config {
namespace {

using enum ValueType;
using enum Apply;

// The keys of the agent as a whole, in the order of enum Key.
constexpr std::array<KeySpec, kAgentKeyCount> kAgentKeys{{
    {Key::kCaptureMessageContent,
     "otel.instrumentation.genai.capture-message-content",
     "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
     kBool,
     "true",
     kLive,
     "",
     0,
     0,
     {},
     false,
     "C2",
     "Capture input and output content (gen_ai.input.messages / gen_ai.output.messages).",
     KeyGroup::kApplication},
    {Key::kMessageContentMaxLength,
     "otel.instrumentation.genai.message-content.max-length",
     "OTEL_INSTRUMENTATION_GENAI_MESSAGE_CONTENT_MAX_LENGTH",
     kInt,
     "8192",
     kLive,
     "",
     1,
     16 * 1024 * 1024,
     {},
     false,
     "C2",
     "Content length limit in characters; each longer content item is truncated.",
     KeyGroup::kApplication},
    {Key::kMessageContentCaptureStrategy,
     "otel.instrumentation.genai.message-content.capture-strategy",
     "OTEL_INSTRUMENTATION_GENAI_MESSAGE_CONTENT_CAPTURE_STRATEGY", kEnum, "span", kLive, "", 0, 0,
     "span|event|span_and_event", false, "C2",
     "Where captured content goes: span attributes (span), a "
     "gen_ai.client.inference.operation.details log event (event), or both. Also accepts "
     "SPAN_ONLY, EVENT_ONLY, SPAN_AND_EVENT.",
     KeyGroup::kApplication},
    {Key::kCaptureMultimodal,
     "infertel.genai.capture-multimodal",
     "INFERTEL_GENAI_CAPTURE_MULTIMODAL",
     kBool,
     "false",
     kLive,
     "",
     0,
     0,
     {},
     false,
     "infertel",
     "Record image and audio parts as references (URI, or mime type, size and hash of inline "
     "data). The spec names no key for this switch (C2: client frameworks only), so this one is "
     "infertel's own.",
     KeyGroup::kApplication},
    {Key::kSemconvStabilityOptIn, "otel.semconv-stability.opt-in", "OTEL_SEMCONV_STABILITY_OPT_IN",
     kList, "", kLive, "", 0, 0,
     "gen_ai_latest_experimental|gen_ai_latest_experimental/dup|http|http/dup|database|"
     "database/dup|messaging|messaging/dup|rpc|rpc/dup|code|code/dup",
     false, "OpenTelemetry",
     "Which names GenAI telemetry uses (the conventions' own switch; other instrumentations' "
     "values are accepted and ignored). Unset: the telemetry model's. "
     "`gen_ai_latest_experimental`: the latest OpenTelemetry GenAI conventions' instead "
     "(attribute renames, gen_ai.provider.name, the gen_ai.client.* and gen_ai.server.* "
     "histograms in place of the model's latency and token families); "
     "`gen_ai_latest_experimental/dup`: both.",
     KeyGroup::kApplication},
    {Key::kUpstreamConnectTimeoutMs,
     "infertel.upstream.connect-timeout-ms",
     "INFERTEL_UPSTREAM_CONNECT_TIMEOUT_MS",
     kInt,
     "10000",
     kLive,
     "",
     1,
     24 * 3600 * 1000,
     {},
     false,
     "infertel",
     "Milliseconds to open a connection to the engine. On expiry the client gets a 504 in "
     "OpenAI's error shape and the entry span an ERROR status."},
    {Key::kUpstreamFirstByteTimeoutMs,
     "infertel.upstream.first-byte-timeout-ms",
     "INFERTEL_UPSTREAM_FIRST_BYTE_TIMEOUT_MS",
     kInt,
     "600000",
     kLive,
     "",
     1,
     24 * 3600 * 1000,
     {},
     false,
     "infertel",
     "Milliseconds from the request sent to the engine's first answer: its response header, and "
     "for a stream its first event (engines send a stream's header before the request leaves "
     "their queue). Long: a request may wait minutes in the queue. On expiry: 504 in OpenAI's "
     "error shape (an SSE error event once a stream's header went out), ERROR span."},
    {Key::kUpstreamIdleTimeoutMs,
     "infertel.upstream.idle-timeout-ms",
     "INFERTEL_UPSTREAM_IDLE_TIMEOUT_MS",
     kInt,
     "300000",
     kLive,
     "",
     1,
     24 * 3600 * 1000,
     {},
     false,
     "infertel",
     "Milliseconds the engine may stay silent between two pieces of a response body or stream, "
     "once it began. On expiry a stream ends with an SSE error event and [DONE], a body not yet "
     "sent gets a 504; ERROR span."},
    {Key::kDrainTimeoutMs,
     "infertel.shutdown.drain-timeout-ms",
     "INFERTEL_DRAIN_TIMEOUT_MS",
     kInt,
     "30000",
     kLive,
     "",
     0,
     24 * 3600 * 1000,
     {},
     false,
     "infertel",
     "On SIGTERM or SIGINT: milliseconds in-flight requests may take to finish after the agent "
     "stops accepting, before they are cut; then every exporter is flushed."},
    {Key::kTenantFrom, "infertel.tenant.from", "INFERTEL_TENANT_FROM", kList, "", kLive, "", 0, 0,
     "header:*|user|api_key_hash", false, "infertel",
     "Where a request's tenant comes from: an ordered list, the first source that gives a value "
     "wins. `header:NAME` (a request header, e.g. header:x-tenant-id), `user` (the OpenAI user "
     "field), `api_key_hash` (key- and 12 hex digits of the API key's SHA-256; never the key). "
     "Unset: no tenant. Entry spans carry infertel.tenant, engine spans inherit it, metrics "
     "carry the tenant label.",
     KeyGroup::kAnalytics},
    {Key::kTenantMax,
     "infertel.tenant.max",
     "INFERTEL_TENANT_MAX",
     kInt,
     "100",
     kLive,
     "",
     1,
     10000,
     {},
     false,
     "infertel",
     "Tenants kept apart, first come; every later one is `other` (counted by "
     "infertel_tenants_folded_total). A tenant once admitted keeps its name.",
     KeyGroup::kAnalytics},
    {Key::kSloTtftMs,
     "infertel.slo.ttft-ms",
     "INFERTEL_SLO_TTFT_MS",
     kInt,
     "",
     kLive,
     "",
     1,
     24 * 3600 * 1000,
     {},
     false,
     "infertel",
     "Objective for time to first token, in milliseconds (streamed responses: a response not "
     "streamed shows its client no first token before its end, which the e2e objective "
     "covers). Unset: none.",
     KeyGroup::kAnalytics},
    {Key::kSloTpotMs,
     "infertel.slo.tpot-ms",
     "INFERTEL_SLO_TPOT_MS",
     kInt,
     "",
     kLive,
     "",
     1,
     3600 * 1000,
     {},
     false,
     "infertel",
     "Objective for time per output token, in milliseconds: a streamed request's time from its "
     "first to its last token over its output tokens less one. Unset: none.",
     KeyGroup::kAnalytics},
    {Key::kSloE2eMs,
     "infertel.slo.e2e-ms",
     "INFERTEL_SLO_E2E_MS",
     kInt,
     "",
     kLive,
     "",
     1,
     24 * 3600 * 1000,
     {},
     false,
     "infertel",
     "Objective for a request's whole duration at the gateway, in milliseconds. Unset: none.",
     KeyGroup::kAnalytics},
    {Key::kSloModels, "infertel.slo.models", "", kTable, "", kLive, "", 1, 24 * 3600 * 1000,
     "ttft-ms|tpot-ms|e2e-ms", false, "infertel",
     "Per-model objectives over the three above, in the console document: a mapping of model "
     "name to any of ttft-ms, tpot-ms, e2e-ms (JSON text through the admin API). A field a "
     "model leaves out takes the general objective.",
     KeyGroup::kAnalytics},
}};

constexpr bool AgentKeysInOrder() {
  for (std::size_t i = 0; i < kAgentKeys.size(); ++i)
    if (IndexOf(kAgentKeys[i].key) != i) return false;
  return true;
}
static_assert(AgentKeysInOrder(), "kAgentKeys rows must follow the order of enum Key");

[[noreturn]] void Fail(const char* what, std::string_view detail = {}) {
  std::fprintf(stderr, "infertel: key table: %s%.*s\n", what, static_cast<int>(detail.size()),
               detail.data());
  std::abort();
}

// Written only while open (AddKeys, under `mu`); read only once closed, without a lock.
struct Table {
  std::mutex mu;
  std::atomic<bool> closed{false};
  std::vector<KeySpec> by_key;   // index: the key
  std::vector<KeySpec> listing;  // by group, then as added

  Table() {
    by_key.reserve(kMaxKeys);
    by_key.assign(kAgentKeys.begin(), kAgentKeys.end());
  }
};

Table& Instance() {
  static Table t;
  return t;
}

const Table& Closed() {
  const Table& t = Instance();
  if (!t.closed.load(std::memory_order_acquire))
    Fail("read before the engines registered their keys (call engines::RegisterEngines() first)");
  return t;
}

}  // namespace

Key AddKeys(std::span<const KeySpec> specs) {
  Table& t = Instance();
  std::lock_guard lock(t.mu);
  if (t.closed.load(std::memory_order_relaxed)) Fail("keys added once the table is closed");
  if (t.by_key.size() + specs.size() > kMaxKeys) Fail("more keys than kMaxKeys");
  const Key first = static_cast<Key>(t.by_key.size());
  for (const KeySpec& spec : specs) {
    for (const KeySpec& have : t.by_key)
      if (have.console_key == spec.console_key) Fail("console key added twice: ", spec.console_key);
    t.by_key.push_back(spec);
    t.by_key.back().key = static_cast<Key>(t.by_key.size() - 1);
  }
  return first;
}

void CloseKeys() {
  Table& t = Instance();
  std::lock_guard lock(t.mu);
  if (t.closed.load(std::memory_order_relaxed)) return;
  t.listing = t.by_key;
  std::stable_sort(t.listing.begin(), t.listing.end(),
                   [](const KeySpec& a, const KeySpec& b) { return a.group < b.group; });
  t.closed.store(true, std::memory_order_release);
}

bool KeysClosed() { return Instance().closed.load(std::memory_order_acquire); }

std::span<const KeySpec> AllKeys() { return Closed().listing; }
std::size_t KeyCount() { return Closed().by_key.size(); }

const KeySpec& Spec(Key key) {
  const Table& t = Closed();
  if (IndexOf(key) >= t.by_key.size()) Fail("no such key");
  return t.by_key[IndexOf(key)];
}

std::optional<Key> FindByConsoleKey(std::string_view console_key) {
  for (const auto& s : Closed().by_key)
    if (s.console_key == console_key) return s.key;
  return std::nullopt;
}

Key KeyOf(std::string_view console_key) {
  const auto key = FindByConsoleKey(console_key);
  if (!key) Fail("no such key: ", console_key);
  return *key;
}

}  // namespace infertel::config
