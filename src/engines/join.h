#pragma once
// What the gateway knew about one request, kept so the engine's own spans for that request
// can be joined to its entry span and completed with what the engine does not say.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/ids.h"
#include "openai/exchange.h"

namespace infertel::engines {

struct JoinRecord {
  std::string request_id;  // the X-Request-Id the engine saw
  std::string upstream;
  EngineId engine;
  TraceId trace_id{};
  SpanId entry_span_id{};
  std::optional<std::string> model;  // request model, else response model
  // Cached prompt tokens from the engine's usage; known_zero when the engine's usage proves
  // there were none (prompt_tokens_details present without cached tokens).
  std::optional<std::int64_t> cached_tokens;
  std::optional<std::int64_t> output_tokens;  // from the engine's usage
  bool streamed = false;                      // the response was a stream
  bool ok = false;                            // completed (not cut short nor failed)
  int tracing_level = 1;
  std::string pd_role = "none";
  std::optional<std::int64_t> engine_index;
  std::uint64_t dispatch_wall_ns = 0;           // request written to the engine
  std::uint64_t end_wall_ns = 0;                // the whole response at the gateway (0: unknown)
  std::uint64_t first_token_wall_ns = 0;        // first delta seen (streams)
  std::vector<openai::Exchange::Delta> deltas;  // level 2, wall-clock times in mono_ns→wall
  std::size_t deltas_dropped = 0;
  bool client_aborted = false;
  std::uint64_t start_wall_ns = 0;           // the request read by the gateway
  std::optional<std::int64_t> input_tokens;  // from the engine's usage
  std::uint64_t client_wait_ns = 0;          // Exchange::client_wait_ns
  // The engine failed the request (a non-2xx status or stream error, unreachable, timed out).
  bool engine_failed = false;
  std::string tenant;      // Exchange::tenant: the engine spans inherit it
  openai::SloVerdict slo;  // Exchange::slo
};

// The keys an engine's request span joins by (engine_spans.h, RequestSpans::JoinKeys): at most
// two views into the span's request id attribute, so that a waiting span keeps them without a
// copy.
struct JoinKeyList {
  std::array<std::string_view, 2> keys{};
  std::size_t size = 0;
  const std::string_view* begin() const { return keys.data(); }
  const std::string_view* end() const { return keys.data() + size; }
  bool empty() const { return size == 0; }
};

// Builds a record from a finished exchange (times converted to wall clock).
JoinRecord MakeJoinRecord(const openai::Exchange& ex);

}  // namespace infertel::engines
