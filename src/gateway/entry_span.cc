#include "gateway/entry_span.h"

#include <fmt/format.h>

#include <algorithm>

#include "analytics/latency_attributes.h"
#include "analytics/slo.h"
#include "core/semconv.h"
#include "core/static_key.h"
#include "engines/registry.h"

namespace infertel::gateway {
namespace sc = semconv;

namespace {

// The attributes a common entry span can carry at most (BuildEntrySpan below); an engine's
// own attributes may grow the array once more.
constexpr int kEntrySpanAttributes = 32;

std::string SpanName(const openai::Exchange& ex) {
  std::string name(openai::OperationName(ex.op));
  // The GenAI convention's "{operation} {model}"; the operation alone when no model is known.
  if (ex.request.model && !ex.request.model->empty()) {
    name += ' ';
    name += *ex.request.model;
  }
  return name;
}

}  // namespace

void AddRequestParameters(const openai::RequestInfo& rq, Attributes* a) {
  if (rq.model) AddAttr(a, Key<sc::kGenAiRequestModel>(), *rq.model);
  if (rq.n) AddAttr(a, Key<sc::kGenAiRequestChoiceCount>(), *rq.n);
  if (rq.temperature) AddAttr(a, Key<sc::kGenAiRequestTemperature>(), *rq.temperature);
  if (rq.top_p) AddAttr(a, Key<sc::kGenAiRequestTopP>(), *rq.top_p);
  if (rq.top_k) AddAttr(a, Key<sc::kGenAiRequestTopK>(), *rq.top_k);
  if (rq.max_tokens) AddAttr(a, Key<sc::kGenAiRequestMaxTokens>(), *rq.max_tokens);
}

void AddFinishReasons(const openai::ResponseInfo& rs, Attributes* a) {
  if (rs.finish_reasons.empty()) return;
  auto* arr =
      AddKey(a, Key<sc::kGenAiResponseFinishReasons>())->mutable_value()->mutable_array_value();
  for (const auto& r : rs.finish_reasons) arr->add_values()->set_string_value(r);
}

// infertel's own: the request's tenant and its verdict against the latency objectives.
void AddAnalytics(const openai::Exchange& ex, Attributes* a) {
  if (!ex.tenant.empty()) AddAttr(a, Key<sc::kInfertelTenant>(), ex.tenant);
  if (!ex.slo.judged) return;
  AddAttr(a, Key<sc::kInfertelSloMet>(), ex.slo.met());
  auto* arr = AddKey(a, Key<sc::kInfertelSloMissed>())->mutable_value()->mutable_array_value();
  for (std::string_view name : analytics::MissedNames(ex.slo.missed))
    arr->add_values()->set_string_value(std::string(name));
}

namespace {
// What the latest GenAI conventions add to the model's attributes: the provider (the engine
// that served the request) and, for a stream, its time to first chunk; then the names the two
// spell differently (core/genai_dialect.h).
void AddLatestConventions(const openai::Exchange& ex, Attributes* a) {
  AddAttr(a, Key<sc::kGenAiProviderName>(), engines::Profile(ex.engine).name());
  if (ex.streamed)
    if (auto ttft = analytics::MeasureLatency(ex).ttft_s)
      AddAttr(a, Key<sc::kGenAiResponseTimeToFirstChunk>(), *ttft);
  ApplyGenAiDialect(a, ex.genai_dialect);
}
}  // namespace

void BuildEntrySpan(const openai::Exchange& ex, Span* span, const EngineFacts& engine) {
  span->set_trace_id(std::string(AsBytes(ex.trace_id)));
  span->set_span_id(std::string(AsBytes(ex.span_id)));
  if (ex.parent_span_id) span->set_parent_span_id(std::string(AsBytes(*ex.parent_span_id)));
  if (!ex.trace_state.empty()) span->set_trace_state(ex.trace_state);
  span->set_name(SpanName(ex));
  span->set_kind(otlp_trace::Span::SPAN_KIND_INTERNAL);
  span->set_start_time_unix_nano(ex.start.wall_start_ns);
  span->set_end_time_unix_nano(ex.start.WallAt(std::max(ex.end_mono_ns, ex.start.mono_start_ns)));

  auto* a = span->mutable_attributes();
  // Room for every attribute at once: grown one Add at a time, the array was made four times
  // (4, 8, 16, 32 slots), each copy left behind on the arena.
  a->Reserve(kEntrySpanAttributes);
  const auto& rq = ex.request;
  const auto& rs = ex.response;
  AddAttr(a, Key<sc::kGenAiSpanKind>(), openai::SpanKindFor(ex.op));
  AddAttr(a, Key<sc::kGenAiOperationName>(), openai::OperationName(ex.op));
  AddRequestParameters(rq, a);
  if (rq.parsed) AddAttr(a, Key<sc::kGenAiRequestIsStream>(), rq.stream);
  const engines::EngineProfile& profile = engines::Profile(ex.engine);
  const engines::EntrySpanShape shape = profile.entry_span_shape();
  if (rq.user && shape.user_and_session) AddAttr(a, Key<sc::kGenAiUserId>(), *rq.user);
  // In streaming mode the request is identified by the id every chunk carries.
  if (ex.streamed && rs.id && shape.user_and_session) AddAttr(a, Key<sc::kSessionId>(), *rs.id);
  if (rs.id) AddAttr(a, Key<sc::kGenAiResponseId>(), *rs.id);
  if (rs.model && (shape.response_model_when_streamed || !ex.streamed))
    AddAttr(a, Key<sc::kGenAiResponseModel>(), *rs.model);
  AddFinishReasons(rs, a);
  if (rs.usage.input_tokens) AddAttr(a, Key<sc::kGenAiUsageInputTokens>(), *rs.usage.input_tokens);
  if (rs.usage.output_tokens)
    AddAttr(a, Key<sc::kGenAiUsageOutputTokens>(), *rs.usage.output_tokens);
  if (rs.usage.total_tokens) AddAttr(a, Key<sc::kGenAiUsageTotalTokens>(), *rs.usage.total_tokens);
  if (!rs.usage.invalid.empty()) AddAttr(a, Key<sc::kInfertelInvalidUsage>(), rs.usage.invalid);
  profile.AddEntryAttributes(ex, engine, a);
  analytics::AddEntryLatencyAttributes(ex, a);
  if (ex.capture_content && ex.content_on_span) {
    if (!rq.input_messages_json.empty())
      AddAttr(a, Key<sc::kGenAiInputMessages>(), rq.input_messages_json);
    if (!rs.output_messages_json.empty())
      AddAttr(a, Key<sc::kGenAiOutputMessages>(), rs.output_messages_json);
  }

  AddAnalytics(ex, a);
  if (SpeaksLatest(ex.genai_dialect)) AddLatestConventions(ex, a);
  if (!rq.parsed) {
    // Forwarded untouched, but the span says why it knows less.
    AddAttr(a, Key<sc::kInfertelParseError>(), rq.parse_error);
  }
  if (ex.outcome != openai::Outcome::kOk) {
    AddAttr(a, Key<sc::kErrorType>(),
            ex.error_type.empty() ? std::string_view("_OTHER") : ex.error_type);
    span->mutable_status()->set_code(otlp_trace::Status::STATUS_CODE_ERROR);
    span->mutable_status()->set_message(ex.error_message);
  }
}

namespace {
// A streamed chat's entry span with every M2.1 attribute takes about 3 KiB of arena.
constexpr std::size_t kEntrySpanArenaBlock = 4096;
}  // namespace

EntrySpanEmitter::EntrySpanEmitter(pipeline::TraceSink* sink, Resource resource)
    : sink_(sink), header_(pipeline::Held<TracesRequest>::Make()) {
  auto* rs = header_.request->add_resource_spans();
  *rs->mutable_resource() = std::move(resource);
  rs->add_scope_spans()->mutable_scope()->set_name(std::string(semconv::kAgentScopeName));
}

void EntrySpanEmitter::OnExchangeFinished(const openai::Exchange& ex) noexcept {
  auto held = pipeline::Held<TracesRequest>::MakeWithBlock<kEntrySpanArenaBlock>();
  held.memory->Keep(header_.memory);
  const auto& header_rs = header_.request->resource_spans(0);
  auto* rs = pipeline::AddBorrowed(held.request->mutable_resource_spans(), header_rs);
  auto* ss = pipeline::AddBorrowed(rs->mutable_scope_spans(), header_rs.scope_spans(0));
  EngineFacts facts;
  // Only an engine that follows facts beyond its span generation has any here: no lock for
  // the others.
  if (auto probe = engines::Profile(ex.engine).facts_probe(); probe && !probe->generation_only) {
    std::lock_guard lock(facts_mu_);
    if (auto it = facts_.find(ex.upstream_name); it != facts_.end()) facts = it->second;
  }
  BuildEntrySpan(ex, ss->add_spans(), facts);
  sink_->SubmitHeld(std::move(held));
}

void EntrySpanEmitter::SetEngineFacts(const std::string& upstream, EngineFacts facts) {
  std::lock_guard lock(facts_mu_);
  facts_[upstream] = facts;
}

}  // namespace infertel::gateway
