#pragma once
// vLLM's native `llm_request` span, normalized to the telemetry model (spec M2.2-M2.5):
// kind INTERNAL; V1 durations from vLLM's seconds to integer nanoseconds; the attributes the
// gateway knows and vLLM's span lacks (model name, cached tokens, engine index, PD role);
// the phase children `wait`/`prefill`/`decode` derived from its timestamps and latencies
// (level >= 1); and at level 2 the per-iteration events seen in the token stream.
//
// Pure functions over protobuf messages: no I/O, thread-safe.

#include <google/protobuf/arena.h>

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/telemetry.h"
#include "engines/engine_spans.h"
#include "engines/join.h"

namespace infertel::engines::vllm {

enum class SpanShape { kAuto, kV0, kV1 };

// True for vLLM's request span: name `llm_request` carrying `gen_ai.request.id`.
bool IsVllmRequestSpan(const Span& span);
// The keys a request span joins by: the request id the gateway sent (X-Request-Id), read
// from `gen_ai.request.id` (`chatcmpl-<id>`, `cmpl-<id>`; `<id>_<n>` for sub-prompts also
// gives `<id>`). Views into the span's attribute, valid while the span is unchanged: they are
// computed for every engine span on arrival, and a waiting span keeps them without a copy.
using engines::JoinKeyList;
JoinKeyList JoinKeys(const Span& span);
// The same from the span's gen_ai.request.id value (RequestSpanId), found once.
JoinKeyList JoinKeys(const AnyValue& request_id);
// gen_ai.request.id of a vLLM request span (IsVllmRequestSpan), nullptr for any other span:
// the check and the join keys' source in one pass over the attributes.
const AnyValue* RequestSpanId(const Span& span);

// True for the instrumentation scopes of vLLM's own tracer: `vllm.tracing.otel` (since
// 2026-02) and `vllm.llm_engine` (V0, and V1 before). No SGLang span is made under them.
bool IsVllmScopeName(std::string_view scope_name);

// V0 or V1, from the span's attributes and scope; `hint` (the upstream's override or what
// /version said) decides when the span alone does not.
SpanShape DetectShape(const Span& span, std::string_view scope_name, SpanShape hint);

struct NormalizeContext {
  const JoinRecord* record = nullptr;  // nullptr: no gateway exchange matched
  SpanShape shape = SpanShape::kAuto;
  int level = 1;                             // tracing level when unmatched (matched: the record's)
  std::string_view pd_role = "none";         // when unmatched (matched: the record's)
  std::optional<std::int64_t> engine_index;  // when unmatched
  std::string_view model;                    // when unmatched (matched: the record's)
  std::size_t max_events = 128;              // OTEL_SPAN_EVENT_COUNT_LIMIT
};

// The longest latency taken from a span, in seconds (7 days): beyond it, or negative, NaN or
// infinite, a latency attribute is removed, no phase is derived from it, and it is counted.
inline constexpr double kMaxLatencySeconds = 7 * 24 * 3600;

// What Normalize refused of a span's latency attributes.
using NormalizeReport = SpanReport;

// Normalizes `span` in place and appends the derived phase spans to *phases, made on `arena`
// (not null; the assembler passes the arena the span was received on, pipeline/held.h).
NormalizeReport Normalize(Span* span, std::string_view scope_name, const NormalizeContext& ctx,
                          google::protobuf::Arena* arena, std::vector<Span*>* phases);
// The same with the phases as heap copies (tests, tools).
NormalizeReport Normalize(Span* span, std::string_view scope_name, const NormalizeContext& ctx,
                          std::vector<Span>* phases);

}  // namespace infertel::engines::vllm
