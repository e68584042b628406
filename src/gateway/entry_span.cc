#include "gateway/entry_span.h"

#include "core/semconv.h"

namespace infertel::gateway {
namespace sc = semconv;

namespace {

std::string SpanName(const Exchange& ex) {
  std::string name(openai::OperationName(ex.op));
  // The GenAI convention's "{operation} {model}"; the operation alone when no model is known.
  if (ex.request.model && !ex.request.model->empty()) {
    name += ' ';
    name += *ex.request.model;
  }
  return name;
}

}  // namespace

void BuildEntrySpan(const Exchange& ex, Span* span) {
  span->set_trace_id(std::string(AsBytes(ex.trace_id)));
  span->set_span_id(std::string(AsBytes(ex.span_id)));
  if (ex.parent_span_id) span->set_parent_span_id(std::string(AsBytes(*ex.parent_span_id)));
  if (!ex.trace_state.empty()) span->set_trace_state(ex.trace_state);
  span->set_name(SpanName(ex));
  span->set_kind(otlp_trace::Span::SPAN_KIND_INTERNAL);
  span->set_start_time_unix_nano(ex.start.wall_start_ns);
  span->set_end_time_unix_nano(ex.start.WallAt(std::max(ex.end_mono_ns, ex.start.mono_start_ns)));

  auto* a = span->mutable_attributes();
  const auto& rq = ex.request;
  const auto& rs = ex.response;
  AddAttr(a, sc::kGenAiSpanKind, openai::SpanKindFor(ex.op));
  AddAttr(a, sc::kGenAiOperationName, openai::OperationName(ex.op));
  if (rq.model) AddAttr(a, sc::kGenAiRequestModel, *rq.model);
  if (rq.n) AddAttr(a, sc::kGenAiRequestChoiceCount, *rq.n);
  if (rq.temperature) AddAttr(a, sc::kGenAiRequestTemperature, *rq.temperature);
  if (rq.top_p) AddAttr(a, sc::kGenAiRequestTopP, *rq.top_p);
  if (rq.top_k) AddAttr(a, sc::kGenAiRequestTopK, *rq.top_k);
  if (rq.max_tokens) AddAttr(a, sc::kGenAiRequestMaxTokens, *rq.max_tokens);
  if (rq.parsed) AddAttr(a, sc::kGenAiRequestIsStream, rq.stream);
  if (rq.user) AddAttr(a, sc::kGenAiUserId, *rq.user);
  // In streaming mode the request is identified by the id every chunk carries.
  if (ex.streamed && rs.id) AddAttr(a, sc::kSessionId, *rs.id);
  if (rs.id) AddAttr(a, sc::kGenAiResponseId, *rs.id);
  if (rs.model) AddAttr(a, sc::kGenAiResponseModel, *rs.model);
  if (!rs.finish_reasons.empty()) {
    auto* kv = a->Add();
    kv->set_key(std::string(sc::kGenAiResponseFinishReasons));
    auto* arr = kv->mutable_value()->mutable_array_value();
    for (const auto& r : rs.finish_reasons) arr->add_values()->set_string_value(r);
  }
  if (rs.usage.input_tokens) AddAttr(a, sc::kGenAiUsageInputTokens, *rs.usage.input_tokens);
  if (rs.usage.output_tokens) AddAttr(a, sc::kGenAiUsageOutputTokens, *rs.usage.output_tokens);
  if (rs.usage.total_tokens) AddAttr(a, sc::kGenAiUsageTotalTokens, *rs.usage.total_tokens);
  if (ex.capture_content) {
    if (!rq.input_messages_json.empty())
      AddAttr(a, sc::kGenAiInputMessages, rq.input_messages_json);
    if (!rs.output_messages_json.empty())
      AddAttr(a, sc::kGenAiOutputMessages, rs.output_messages_json);
  }

  if (!rq.parsed) {
    // Forwarded untouched, but the span says why it knows less.
    AddAttr(a, sc::kInfertelParseError, rq.parse_error);
  }
  if (ex.outcome != Outcome::kOk) {
    AddAttr(a, sc::kErrorType, ex.error_type.empty() ? std::string_view("_OTHER") : ex.error_type);
    span->mutable_status()->set_code(otlp_trace::Status::STATUS_CODE_ERROR);
    span->mutable_status()->set_message(ex.error_message);
  }
}

EntrySpanEmitter::EntrySpanEmitter(pipeline::TraceSink* sink, Resource resource)
    : sink_(sink), resource_(std::move(resource)) {}

void EntrySpanEmitter::OnExchangeFinished(const Exchange& ex) noexcept {
  TracesRequest req;
  auto* rs = req.add_resource_spans();
  *rs->mutable_resource() = resource_;
  auto* ss = rs->add_scope_spans();
  ss->mutable_scope()->set_name(std::string(semconv::kAgentScopeName));
  BuildEntrySpan(ex, ss->add_spans());
  sink_->Submit(std::move(req));
}

}  // namespace infertel::gateway
