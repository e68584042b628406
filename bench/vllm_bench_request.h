#pragma once
// The OTLP request both OTLP benchmarks use: what vLLM V1's frontend exports, `batch`
// `llm_request` spans under one resource and vLLM's scope, attributes in the order and with
// the types vLLM's do_tracing sets. Ids are zero and every request id is "chatcmpl-bench-0":
// the caller makes them distinct (the sender per send, the microbenchmarks once).

#include <string>
#include <string_view>

#include "core/semconv.h"
#include "core/telemetry.h"

namespace infertel::bench {

inline constexpr std::string_view kVllmScope = "vllm.tracing.otel";

inline TracesRequest VllmBenchRequest(int batch) {
  namespace sc = semconv;
  TracesRequest req;
  auto* rs = req.add_resource_spans();
  auto* res = rs->mutable_resource()->mutable_attributes();
  AddAttr(res, "telemetry.sdk.language", "python");
  AddAttr(res, sc::kTelemetrySdkName, "opentelemetry");
  AddAttr(res, "telemetry.sdk.version", "1.37.0");
  AddAttr(res, sc::kServiceName, "vllm-bench");
  AddAttr(res, "vllm.instrumenting_module_name", "vllm.llm_engine");
  auto* ss = rs->add_scope_spans();
  ss->mutable_scope()->set_name(kVllmScope.data(), kVllmScope.size());
  for (int i = 0; i < batch; ++i) {
    Span* s = ss->add_spans();
    s->set_name(sc::kSpanLlmRequest.data(), sc::kSpanLlmRequest.size());
    s->set_kind(otlp_trace::Span::SPAN_KIND_SERVER);
    s->set_trace_id(std::string(16, '\0'));
    s->set_span_id(std::string(8, '\0'));
    auto* at = s->mutable_attributes();
    AddAttr(at, sc::kGenAiLatencyTimeToFirstToken, 0.0421);
    AddAttr(at, sc::kGenAiLatencyE2e, 1.2034);
    AddAttr(at, sc::kGenAiLatencyTimeInQueue, 0.0031);
    AddAttr(at, sc::kGenAiUsagePromptTokens, 312);
    AddAttr(at, sc::kGenAiUsageCompletionTokens, 128);
    AddAttr(at, sc::kGenAiLatencyTimeInModelPrefill, 0.0357);
    AddAttr(at, sc::kGenAiLatencyTimeInModelDecode, 1.1552);
    AddAttr(at, sc::kGenAiLatencyTimeInModelInference, 1.1909);
    AddAttr(at, sc::kGenAiRequestId, "chatcmpl-bench-0");
    AddAttr(at, sc::kGenAiRequestTopP, 0.95);
    AddAttr(at, sc::kGenAiRequestMaxTokens, 256);
    AddAttr(at, sc::kGenAiRequestTemperature, 0.7);
    AddAttr(at, sc::kGenAiRequestN, 1);
  }
  return req;
}

}  // namespace infertel::bench
