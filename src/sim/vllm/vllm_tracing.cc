#include "sim/vllm/vllm_tracing.h"

#include "core/ids.h"
#include "core/semconv.h"
#include "sim/otlp/python_resource.h"

namespace infertel::sim {
namespace {

double Seconds(std::uint64_t from_ns, std::uint64_t to_ns) {
  return (static_cast<double>(to_ns) - static_cast<double>(from_ns)) / 1e9;
}

// Starts the span: ids, parent and trace state from the incoming headers, kind, times.
std::optional<Span> StartSpan(const LlmRequestSpanInput& in) {
  Span span;
  auto parent = TraceParent::Parse(in.traceparent);
  if (parent) {
    if ((parent->flags & 1) == 0) return std::nullopt;  // ParentBased: parent not sampled
    span.set_trace_id(std::string(AsBytes(parent->trace_id)));
    span.set_parent_span_id(std::string(AsBytes(parent->span_id)));
    std::string_view ts = in.tracestate;
    while (!ts.empty() && (ts.front() == ' ' || ts.front() == '\t')) ts.remove_prefix(1);
    while (!ts.empty() && (ts.back() == ' ' || ts.back() == '\t')) ts.remove_suffix(1);
    if (!ts.empty()) span.set_trace_state(std::string(ts));
  } else {
    span.set_trace_id(std::string(AsBytes(NewTraceId())));
  }
  span.set_span_id(std::string(AsBytes(NewSpanId())));
  span.set_name(std::string(semconv::kSpanLlmRequest));
  span.set_kind(otlp_trace::Span::SPAN_KIND_SERVER);
  span.set_start_time_unix_nano(in.arrival_wall_ns);
  span.set_end_time_unix_nano(in.end_wall_ns);
  return span;
}

}  // namespace

Resource BuildVllmResource(const SimEnvFn& env, int pid) {
  Resource r = PythonSdkResource(env);
  if (env) {
    if (auto name = env("OTEL_SERVICE_NAME"); name && !name->empty())
      SetResourceString(&r, semconv::kServiceName, *name);
  }
  if (!FindAttr(r.attributes(), semconv::kServiceName))
    AddAttr(r.mutable_attributes(), semconv::kServiceName, "unknown_service");
  SetResourceString(&r, kVllmInstrumentingModuleName, kVllmApiServerModule);
  SetResourceString(&r, kVllmProcessId, std::to_string(pid));
  return r;
}

std::optional<Span> BuildLlmRequestSpanV1(const LlmRequestSpanInput& in) {
  auto span = StartSpan(in);
  if (!span) return std::nullopt;
  auto* a = span->mutable_attributes();
  const RequestRecord& r = in.record;
  // Order as vLLM's do_tracing sets them.
  AddAttr(a, semconv::kGenAiLatencyTimeToFirstToken,
          Seconds(in.arrival_wall_ns, in.first_token_wall_ns));
  AddAttr(a, semconv::kGenAiLatencyE2e, Seconds(in.arrival_wall_ns, in.end_wall_ns));
  AddAttr(a, semconv::kGenAiLatencyTimeInQueue, Seconds(r.arrival_mono_ns, r.scheduled_mono_ns));
  AddAttr(a, semconv::kGenAiUsagePromptTokens, static_cast<std::int64_t>(r.prompt_tokens));
  AddAttr(a, semconv::kGenAiUsageCompletionTokens, static_cast<std::int64_t>(in.completion_tokens));
  AddAttr(a, semconv::kGenAiLatencyTimeInModelPrefill,
          Seconds(r.scheduled_mono_ns, r.first_token_mono_ns));
  AddAttr(a, semconv::kGenAiLatencyTimeInModelDecode,
          Seconds(r.first_token_mono_ns, r.last_token_mono_ns));
  AddAttr(a, semconv::kGenAiLatencyTimeInModelInference,
          Seconds(r.scheduled_mono_ns, r.last_token_mono_ns));
  AddAttr(a, semconv::kGenAiRequestId, in.request_id);
  // Request parameters only when truthy (so temperature 0 is absent).
  if (in.top_p != 0) AddAttr(a, semconv::kGenAiRequestTopP, in.top_p);
  if (in.max_tokens != 0)
    AddAttr(a, semconv::kGenAiRequestMaxTokens, static_cast<std::int64_t>(in.max_tokens));
  if (in.temperature != 0) AddAttr(a, semconv::kGenAiRequestTemperature, in.temperature);
  if (in.n != 0) AddAttr(a, semconv::kGenAiRequestN, static_cast<std::int64_t>(in.n));
  return span;
}

std::optional<Span> BuildLlmRequestSpanV0(const LlmRequestSpanInput& in) {
  auto span = StartSpan(in);
  if (!span) return std::nullopt;
  auto* a = span->mutable_attributes();
  const RequestRecord& r = in.record;
  AddAttr(a, semconv::kGenAiResponseModel, in.model_path);
  AddAttr(a, semconv::kGenAiRequestId, in.request_id);
  AddAttr(a, semconv::kGenAiRequestTemperature, in.temperature);
  AddAttr(a, semconv::kGenAiRequestTopP, in.top_p);
  AddAttr(a, semconv::kGenAiRequestMaxTokens, static_cast<std::int64_t>(in.max_tokens));
  AddAttr(a, semconv::kGenAiRequestN, static_cast<std::int64_t>(in.n));
  AddAttr(a, semconv::kGenAiUsageNumSequences, static_cast<std::int64_t>(in.num_sequences));
  AddAttr(a, semconv::kGenAiUsagePromptTokens, static_cast<std::int64_t>(r.prompt_tokens));
  AddAttr(a, semconv::kGenAiUsageCompletionTokens, static_cast<std::int64_t>(in.completion_tokens));
  AddAttr(a, semconv::kGenAiLatencyTimeInQueue, Seconds(in.arrival_wall_ns, in.scheduled_wall_ns));
  AddAttr(a, semconv::kGenAiLatencyTimeToFirstToken,
          Seconds(in.arrival_wall_ns, in.first_token_wall_ns));
  AddAttr(a, semconv::kGenAiLatencyE2e, Seconds(in.arrival_wall_ns, in.end_wall_ns));
  if (in.detailed.scheduler)
    AddAttr(a, semconv::kGenAiLatencyTimeInScheduler, static_cast<double>(r.scheduler_ns) / 1e9);
  if (in.detailed.forward)
    AddAttr(a, semconv::kGenAiLatencyTimeInModelForward, static_cast<double>(r.forward_ns) / 1e9);
  if (in.detailed.execute)
    AddAttr(a, semconv::kGenAiLatencyTimeInModelExecute, static_cast<double>(r.execute_ns) / 1e9);
  return span;
}

}  // namespace infertel::sim
