#include "engines/span_causes.h"

#include <fmt/format.h>

#include "analytics/latency_attributes.h"
#include "core/semconv.h"
#include "core/static_key.h"

namespace infertel::engines {
namespace sc = semconv;

namespace {

std::optional<std::int64_t> IntAttr(const Span& span, std::string_view key) {
  const AnyValue* v = FindAttr(span.attributes(), key);
  if (v == nullptr || !v->has_int_value()) return std::nullopt;
  return v->int_value();
}

template <typename Id>
Id IdOf(const std::string& bytes) {
  Id id{};
  if (bytes.size() == id.size()) std::copy(bytes.begin(), bytes.end(), id.begin());
  return id;
}

// The request's phases on the gateway's clock, from the phase spans derived from it: `wait`
// from its queueing to its scheduling, `prefill` to the first token, `decode` to the last.
analytics::PhaseRecord PhasesOf(const Span& span, const std::vector<Span*>& phases,
                                std::optional<std::int64_t> prompt) {
  analytics::PhaseRecord r;
  r.trace = IdOf<TraceId>(span.trace_id());
  r.span = IdOf<SpanId>(span.span_id());
  r.prompt_tokens = prompt.value_or(0);
  for (const Span* p : phases) {
    if (p->name() == sc::kSpanWait) {
      r.queued_ns = p->start_time_unix_nano();
      r.prefill_start_ns = std::max(r.prefill_start_ns, p->end_time_unix_nano());
    } else if (p->name() == sc::kSpanPrefill) {
      r.prefill_start_ns = p->start_time_unix_nano();
      r.prefill_end_ns = p->end_time_unix_nano();
    } else if (p->name() == sc::kSpanDecode) {
      if (r.prefill_end_ns == 0) r.prefill_end_ns = p->start_time_unix_nano();
      r.decode_end_ns = p->end_time_unix_nano();
    }
  }
  return r;
}

std::optional<double> KvTransferSeconds(const std::vector<Span*>& phases) {
  std::optional<double> s;
  for (const Span* p : phases) {
    if (p->name() != sc::kSpanKvTransfer || p->end_time_unix_nano() < p->start_time_unix_nano())
      continue;
    s = s.value_or(0) +
        static_cast<double>(p->end_time_unix_nano() - p->start_time_unix_nano()) / 1e9;
  }
  return s;
}

// The request's timeline: the gateway's parts from its record, the engine's from its span.
analytics::Timeline TimelineOf(const JoinRecord& r, const EngineTimings& timings,
                               std::optional<std::int64_t> prompt,
                               const std::vector<Span*>& phases) {
  analytics::Timeline t;
  if (r.end_wall_ns > r.start_wall_ns && r.start_wall_ns != 0)
    t.e2e_s = static_cast<double>(r.end_wall_ns - r.start_wall_ns) / 1e9;
  if (r.dispatch_wall_ns > r.start_wall_ns && r.start_wall_ns != 0)
    t.gateway_s = static_cast<double>(r.dispatch_wall_ns - r.start_wall_ns) / 1e9;
  t.client_s = static_cast<double>(r.client_wait_ns) / 1e9;
  t.engine_error = r.engine_failed;
  t.queue_s = timings.queue_s;
  t.prefill_s = timings.prefill_s;
  t.decode_s = timings.decode_s;
  t.kv_transfer_s = KvTransferSeconds(phases);
  t.prompt_tokens = prompt;
  t.output_tokens = r.output_tokens;
  t.cached_tokens = r.cached_tokens;
  t.missed = r.slo.missed;
  return t;
}

void LinkLargest(const analytics::PhaseRecord& largest, Span* span) {
  auto* link = span->add_links();
  link->set_trace_id(std::string(AsBytes(largest.trace)));
  link->set_span_id(std::string(AsBytes(largest.span)));
  AddAttr(link->mutable_attributes(), Key<sc::kInfertelInterferencePrefillTokens>(),
          largest.prompt_tokens);
}

}  // namespace

std::string EngineKey(const JoinRecord& record) {
  return record.engine_index ? fmt::format("{}#{}", record.upstream, *record.engine_index)
                             : record.upstream;
}

void SpanCauses::OnSpan(const JoinRecord* record, Span* span, const std::vector<Span*>& phases,
                        const EngineTimings& timings) {
  if (record == nullptr) return;
  std::optional<std::int64_t> prompt = IntAttr(*span, sc::kGenAiUsagePromptTokens);
  if (!prompt) prompt = record->input_tokens;
  const std::string key = EngineKey(*record);
  const analytics::PhaseRecord self = PhasesOf(*span, phases, prompt);
  window_.Add(key, self);
  auto* attrs = span->mutable_attributes();
  // The cached count and the prompt of the same usage, where the response had one.
  if (auto ratio = analytics::CacheHitRatio(record->cached_tokens,
                                            record->input_tokens ? record->input_tokens : prompt))
    AddAttr(attrs, Key<sc::kInfertelCacheHitRatio>(), *ratio);
  if (record->slo.missed == 0) return;
  analytics::Timeline t = TimelineOf(*record, timings, prompt, phases);
  const analytics::PhaseOverlap overlap = window_.Query(key, self);
  t.requests_ahead = overlap.requests_ahead;
  if (self.decode_end_ns > self.prefill_end_ns && self.prefill_end_ns != 0)
    t.interference_prefill_tokens = overlap.prefill_tokens;
  if (record->client_wait_ns == 0) t.client_s.reset();  // no attribute for nothing
  const analytics::Attribution a = analytics::Attribute(t);
  analytics::AddCauseAttributes(t, a, attrs);
  if (overlap.largest) LinkLargest(*overlap.largest, span);
}

}  // namespace infertel::engines
