#include "engines/vllm/vllm_keys.h"

#include <array>

namespace infertel::engines::vllm {
namespace {

using enum config::ValueType;
using enum config::Apply;
using config::KeyGroup;

constexpr std::array<config::KeySpec, 7> kKeys{{
    {{},
     "otel.instrumentation.vllm.enabled",
     "OTEL_INSTRUMENTATION_VLLM_ENABLED",
     kBool,
     "true",
     kRestart,
     "vllm",
     0,
     0,
     {},
     false,
     "C1",
     "vLLM plugin on/off. Off: no traces and no metrics for vLLM upstreams; the gateway only "
     "forwards.",
     KeyGroup::kPlugin},
    {{},
     "otel.instrumentation.vllm.metrics.enabled",
     "OTEL_INSTRUMENTATION_VLLM_METRICS_ENABLED",
     kBool,
     "true",
     kLive,
     "vllm",
     0,
     0,
     {},
     false,
     "C3",
     "Collect and report vLLM metrics (infertel's own reporting only).",
     KeyGroup::kEngine},
    {{},
     "otel.instrumentation.vllm.tracing.level",
     "OTEL_INSTRUMENTATION_VLLM_TRACING_LEVEL",
     kInt,
     "1",
     kLive,
     "vllm",
     0,
     2,
     {},
     false,
     "C3",
     "0: llm_request only; 1: + wait/prefill/decode/kv_transfer; 2: + per-iteration events with "
     "token detail (forces logprobs upstream).",
     KeyGroup::kEngine},
    {{},
     "apsara.apm.inference.vllm.log_requests.enabled",
     "",
     kBool,
     "",
     kLive,
     "vllm",
     0,
     0,
     {},
     true,
     "C3",
     "Request logs: received, added, aborted, failed (engine default off).",
     KeyGroup::kEngine},
    {{},
     "apsara.apm.inference.vllm.log_iteration_details.enabled",
     "",
     kBool,
     "",
     kLive,
     "vllm",
     0,
     0,
     {},
     true,
     "C3",
     "Per-iteration detail logs (engine default off).",
     KeyGroup::kEngine},
    {{},
     "apsara.apm.inference.vllm.log_trace_context.enabled",
     "",
     kBool,
     "false",
     kLive,
     "vllm",
     0,
     0,
     {},
     true,
     "C3",
     "Inject TraceId and SpanId into log line prefixes.",
     KeyGroup::kEngine},
    {{},
     "apsara.apm.inference.vllm.logging.level",
     "",
     kEnum,
     "",
     kLive,
     "vllm",
     0,
     0,
     "DEBUG|INFO|WARNING|ERROR|CRITICAL",
     true,
     "C3",
     "Log level (engine default INFO).",
     KeyGroup::kEngine},
}};

}  // namespace

std::span<const config::KeySpec> KeySpecs() { return kKeys; }

const Keys& keys() {
  static const Keys k{config::KeyOf(kKeys[0].console_key), config::KeyOf(kKeys[1].console_key),
                      config::KeyOf(kKeys[2].console_key), config::KeyOf(kKeys[3].console_key),
                      config::KeyOf(kKeys[4].console_key), config::KeyOf(kKeys[5].console_key),
                      config::KeyOf(kKeys[6].console_key)};
  return k;
}

}  // namespace infertel::engines::vllm
