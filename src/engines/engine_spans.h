#pragma once
// The engine contract's part for the engine's own spans (profile.h, "Spans"): how the
// assembler (assembler.h) recognises an engine's spans among everything the receivers take,
// and what it does with them. An engine's spans reach the model one of two ways:
//   RequestSpans  one span per request, named after the X-Request-Id the gateway sent. It
//                 waits for its exchange, is completed from the exchange's JoinRecord, and
//                 phase spans are derived from it (SpanJoin::kRequestId).
//   NativeSpans   span trees that continue the trace the gateway propagated, passed on whole
//                 scopes at a time, filtered by their request's tracing level
//                 (SpanJoin::kTraceId). A processor has state of its own: one per assembler.
// The assembler owns the waiting, the bounds, the admission and the counting; an engine says
// only what is its and how it is normalized.

#include <google/protobuf/arena.h>
#include <google/protobuf/repeated_ptr_field.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/ids.h"
#include "core/telemetry.h"
#include "engines/join.h"

namespace infertel::engines {

// What a request span is completed with.
struct SpanContext {
  const JoinRecord* record = nullptr;  // nullptr: no gateway exchange matched
  // The generation of the engine's spans as its facts or the upstream's configuration say
  // ("v0", "v1"); empty: the span alone decides.
  std::string_view generation;
  int level = 1;                             // tracing level when unmatched (matched: the record's)
  std::string_view pd_role = "none";         // when unmatched (matched: the record's)
  std::optional<std::int64_t> engine_index;  // when unmatched
  std::string_view model;                    // when unmatched: the one model served, if known
  std::size_t max_events = 128;              // OTEL_SPAN_EVENT_COUNT_LIMIT
};

// What the engine measured of its request, from its request span, in seconds: for the
// figures the gateway cannot see (a response that is not streamed shows no first token).
struct EngineTimings {
  std::optional<double> queue_s, prefill_s, decode_s, ttft_s, e2e_s;
  bool empty() const { return !queue_s && !prefill_s && !decode_s && !ttft_s && !e2e_s; }
};

// What normalizing refused of a span's latency attributes (counted by the assembler), and
// what the span measured.
struct SpanReport {
  std::uint32_t latency_not_finite = 0;    // NaN or ±Inf
  std::uint32_t latency_out_of_range = 0;  // negative or beyond the engine's bound
  EngineTimings timings;
};

// Told of every engine request span joined to its exchange, with what the engine measured
// (the metrics take the figures the gateway could not). Called on the assembler's threads: must
// not block.
class EngineSpanListener {
 public:
  virtual ~EngineSpanListener() = default;
  virtual void OnEngineSpanJoined(const JoinRecord& record,
                                  const EngineTimings& timings) noexcept = 0;
};

class RequestSpans {
 public:
  virtual ~RequestSpans() = default;
  // Whether a scope is the engine's own tracer's: no other engine's native spans are looked
  // for under it (which spares a look at every attribute of every span of it).
  virtual bool OwnsScope(std::string_view scope_name) const = 0;
  // The attribute naming the request of one of the engine's request spans; nullptr for any
  // other span. Its keys (JoinKeys) are views into it.
  virtual const AnyValue* RequestSpanId(const Span& span) const = 0;
  virtual JoinKeyList JoinKeys(const AnyValue& request_id) const = 0;
  // Normalizes `span` in place and appends the phase spans derived from it to *phases, made
  // on `arena` (the one the span was received on).
  virtual SpanReport Normalize(Span* span, std::string_view scope_name, const SpanContext& ctx,
                               google::protobuf::Arena* arena,
                               std::vector<Span*>* phases) const = 0;
};

// What one scope's native spans came to.
struct NativeResult {
  std::size_t dropped = 0;   // spans above their request's level
  std::size_t pd_links = 0;  // links added between the prefill and decode halves of a request
};

class NativeSpans {
 public:
  virtual ~NativeSpans() = default;
  // Whether a scope's spans are the engine's native spans by the scope's or the resource's
  // name. Asked first, of every scope.
  virtual bool ClaimsScope(const Resource& resource,
                           const otlp_common::InstrumentationScope& scope) const = 0;
  // Whether the scope holds a span only this engine makes, whatever the scope is called (a
  // receiver may relabel it). Asked of scopes no engine claims and no RequestSpans owns.
  virtual bool HasOwnSpan(const otlp_trace::ScopeSpans& scope) const = 0;
  // The gateway saw a request of trace `trace` start, at tracing level `level`, and end.
  // `tenant`: the request's (Exchange::tenant), which its spans inherit; empty: none.
  // Returns how many older requests the engine's bounded table forgot early to make room
  // (counted: infertel_assembler_native_requests_evicted_total).
  virtual std::size_t OnRequestStarted(const TraceId& trace, int level,
                                       std::string_view tenant) = 0;
  virtual void OnRequestFinished(const TraceId& trace) = 0;
  // Processes one scope's spans in place (`level`: the level for traces the gateway did not
  // start).
  virtual NativeResult Process(google::protobuf::RepeatedPtrField<Span>* spans, int level) = 0;
  // The resource the native spans leave with when the agent has one of its own.
  virtual Resource MergeResource(const Resource& agent, const Resource& engine) const = 0;
};

}  // namespace infertel::engines
