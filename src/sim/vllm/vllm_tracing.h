#pragma once
// vLLM's native `llm_request` span (facts/vllm.md §1.3 for V1, §1.5 for V0) and the OTLP
// resource a vLLM API-server process reports, built from the simulator's request timings.
// Pure functions; thread-safe.

#include <cstdint>
#include <optional>
#include <string>

#include "core/telemetry.h"
#include "sim/engine/engine.h"
#include "sim/otlp/span_exporter.h"

namespace infertel::sim {

// Instrumentation scope names: V1 since #31162, and V0 (also V1 before #31162).
inline constexpr std::string_view kVllmScopeV1 = "vllm.tracing.otel";
inline constexpr std::string_view kVllmScopeV0 = "vllm.llm_engine";
// Resource attributes vLLM sets on its tracer provider.
inline constexpr std::string_view kVllmInstrumentingModuleName = "vllm.instrumenting_module_name";
inline constexpr std::string_view kVllmProcessId = "vllm.process_id";
inline constexpr std::string_view kVllmApiServerModule = "vllm.llm_engine";

// The resource of Python's Resource.create() with vLLM's attributes: telemetry.sdk.* first,
// then OTEL_RESOURCE_ATTRIBUTES, service.name (OTEL_SERVICE_NAME, else the one from
// OTEL_RESOURCE_ATTRIBUTES, else `unknown_service`), then vLLM's two attributes.
Resource BuildVllmResource(const SimEnvFn& env, int pid);

// Which V0 detailed-trace attributes to set (--collect-detailed-traces).
struct DetailedTraces {
  bool forward = false;    // model, all
  bool execute = false;    // worker, all
  bool scheduler = false;  // any value
};

// Everything the span is built from. Wall times are ns since the epoch, taken in the
// front end; `record` carries the engine's monotonic timestamps.
struct LlmRequestSpanInput {
  std::string traceparent;  // raw header values, empty when absent
  std::string tracestate;
  std::string request_id;  // the external id (chatcmpl-…, cmpl-…)
  std::uint64_t arrival_wall_ns = 0;
  std::uint64_t first_token_wall_ns = 0;
  std::uint64_t end_wall_ns = 0;
  // V0 only: the wall time at which the engine first scheduled the request.
  std::uint64_t scheduled_wall_ns = 0;
  RequestRecord record;
  int completion_tokens = 0;
  double temperature = 1.0;
  double top_p = 1.0;
  int max_tokens = 0;
  int n = 1;
  int num_sequences = 1;    // V0
  std::string model_path;   // V0: gen_ai.response.model
  DetailedTraces detailed;  // V0
};

// Builds the span, or nullopt when vLLM's ParentBased(AlwaysOn) sampler would not record it
// (a valid parent whose sampled flag is off). A missing or malformed `traceparent` starts a
// new trace.
std::optional<Span> BuildLlmRequestSpanV1(const LlmRequestSpanInput& in);
std::optional<Span> BuildLlmRequestSpanV0(const LlmRequestSpanInput& in);

}  // namespace infertel::sim
