#pragma once
// Why a request was slow: its time split into components (the gateway's own, the queue, the
// prefill, the decode, the KV transfer, the client's), and the main cause named from them and
// their evidence (semconv::kLatencyCause*). A pure function of a plain timeline, so that the
// assembler (a joined engine span), the entry span (the gateway's view alone) and the CLI
// (spans read back from the store) decide by one set of rules. The rules and their thresholds
// are in docs/telemetry-reference.md, "Latency causes"; each has a test on a constructed
// timeline (tests/unit/analytics/latency_cause_test.cc).

#include <cstdint>
#include <optional>
#include <string_view>

namespace infertel::analytics {

// What is known of one request's time, in seconds; nullopt: not measured.
struct Timeline {
  // The gateway's view (the exchange).
  double e2e_s = 0;                 // request read → response written to the client
  std::optional<double> gateway_s;  // request read → request written to the engine
  std::optional<double> client_s;   // waiting for the client to take the response
  bool engine_error = false;        // the engine failed it (status, stream error, gone, timeout)
  // The engine's own view (its request span and the phases derived from it).
  std::optional<double> queue_s, prefill_s, decode_s, kv_transfer_s;
  std::optional<std::int64_t> requests_ahead;  // same engine, queued earlier, still waiting
  std::optional<std::int64_t> prompt_tokens, output_tokens, cached_tokens;
  std::optional<std::int64_t> preemptions;  // only where the engine reports them per request
  // Prompt tokens of the same engine's other requests whose prefill overlapped this request's
  // decode (nullopt: not looked at).
  std::optional<std::int64_t> interference_prefill_tokens;
  // The objectives missed (openai::SloMiss bits); 0 explains the whole request (on demand).
  std::uint8_t missed = 0;
};

// Where the time went, and why.
struct Attribution {
  // Components in seconds (0 when not measured). `engine_unsplit`: the engine's part when its
  // phases are unknown (the time from dispatch to the end, less the client's).
  double gateway_s = 0, client_s = 0, queue_s = 0, prefill_s = 0, decode_s = 0, kv_transfer_s = 0,
         engine_unsplit_s = 0;
  // One of semconv::kLatencyCause*; empty when the evidence decides nothing (the engine's
  // phases are unknown and the gateway's own parts are not the largest).
  std::string_view cause;
  // Which component decided it ("queue", "prefill", …, "error"), for the CLI.
  std::string_view component;
  // The evidence, as the attributes carry it.
  std::optional<double> cache_hit_ratio;
};

// The thresholds of the rules (docs/telemetry-reference.md, "Latency causes").
struct CauseThresholds {
  // prefill largest: below this hit ratio the prompt was mostly computed, a prefix-cache miss.
  static constexpr double kCacheMissRatio = 0.5;
  // decode largest: others' prefill tokens over the decode from which it is interference.
  static constexpr std::int64_t kInterferenceTokens = 1024;
};

// cached / prompt, when both are known and prompt > 0 (clamped to [0, 1]).
std::optional<double> CacheHitRatio(std::optional<std::int64_t> cached,
                                    std::optional<std::int64_t> prompt);

// The components and the cause of `t` (the rules above).
Attribution Attribute(const Timeline& t);

}  // namespace infertel::analytics
