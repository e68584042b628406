#pragma once
// The latency attribution of one request on demand, from the spans of its trace as they were
// stored (`infertel traces --explain TRACE_ID`): its timeline is rebuilt from the entry span
// (the gateway's parts, the verdict, the usage) and the engine's request span and phases (the
// model's names: gen_ai.latency.*, `wait`, `prefill`, `decode`, `kv_transfer`), with the evidence
// recorded at ingest where only the live agent could see it (infertel.queue.requests_ahead and
// infertel.interference.prefill_tokens: the other requests of the same engine), and the rules of
// latency_cause.h applied to it. The caller reads the store; nothing here does.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "analytics/latency_cause.h"

namespace infertel::analytics {

// An attribute's value as stored: integers and doubles stay apart where the text tells (a
// double with no fraction reads as an integer), arrays of strings are kept, the rest dropped.
using AttrValue =
    std::variant<std::monostate, bool, std::int64_t, double, std::string, std::vector<std::string>>;

// One span of the trace, as far as the explanation reads it.
struct TraceSpan {
  std::string span_id, parent_span_id;  // hex
  std::string name, scope;
  std::int64_t start_ns = 0, end_ns = 0;  // wall clock, unix ns
  bool error = false;                     // status ERROR
  std::map<std::string, AttrValue, std::less<>> attributes;
  std::vector<std::string> event_names;
};

struct Explanation {
  bool found = false;  // the trace has an entry span
  std::string entry_name;
  bool engine_span = false;  // the engine's request span was among the spans
  bool judged = false;       // the entry span has a verdict (infertel.slo.met)
  Timeline timeline;
  Attribution attribution;
  std::string recorded_cause;  // infertel.latency.cause as recorded at ingest, if any
};

// The attribution of the request whose spans are `spans` (one trace). The entry span is the
// agent's own (scope "infertel") that names an operation; the engine's request span is the
// other span carrying gen_ai.latency.* (integers: nanoseconds, as normalized; doubles:
// seconds, as the engine sent them).
Explanation ExplainTrace(const std::vector<TraceSpan>& spans);

// The explanation as text, one line per part, then the cause.
std::string RenderExplanation(const Explanation& e);

}  // namespace infertel::analytics
