#include "engines/sglang/sglang_keys.h"

#include <array>

namespace infertel::engines::sglang {
namespace {

using enum config::ValueType;
using enum config::Apply;
using config::KeyGroup;

constexpr std::array<config::KeySpec, 6> kKeys{{
    {{},
     "otel.instrumentation.sglang.enabled",
     "SGLANG_INSTRUMENTATION_ENABLED",
     kBool,
     "true",
     kRestart,
     "sglang",
     0,
     0,
     {},
     false,
     "C1",
     "SGLang plugin on/off. Off: no traces and no metrics for SGLang upstreams; the gateway only "
     "forwards.",
     KeyGroup::kPlugin},
    {{},
     "otel.instrumentation.sglang.metrics.enabled",
     "OTEL_INSTRUMENTATION_SGLANG_METRICS_ENABLED",
     kBool,
     "true",
     kLive,
     "sglang",
     0,
     0,
     {},
     false,
     "C4",
     "Collect and report SGLang metrics, request-level metrics included without --enable-metrics "
     "(infertel's own reporting only).",
     KeyGroup::kEngine},
    {{},
     "otel.instrumentation.sglang.tracing.level",
     "",
     kInt,
     "3",
     kLive,
     "sglang",
     0,
     4,
     {},
     true,
     "C4",
     "Depth of SGLang's native span tree (0 off, 1 important stages, 2 all but nested, 3 all, 4 "
     "+ run_batch_cpu); new requests only.",
     KeyGroup::kEngine},
    {{},
     "apsara.apm.inference.sglang.log_requests.enabled",
     "",
     kBool,
     "",
     kLive,
     "sglang",
     0,
     0,
     {},
     true,
     "C4",
     "TokenizerManager request logs (engine default off).",
     KeyGroup::kEngine},
    {{},
     "apsara.apm.inference.sglang.log_requests.level",
     "",
     kInt,
     "",
     kLive,
     "sglang",
     0,
     3,
     {},
     true,
     "C4",
     "Request log detail, higher is more (engine default 2).",
     KeyGroup::kEngine},
    {{},
     "apsara.apm.inference.sglang.logging.level",
     "",
     kEnum,
     "",
     kLive,
     "sglang",
     0,
     0,
     "DEBUG|INFO|WARNING|ERROR|CRITICAL",
     true,
     "C4",
     "Level of the `sglang` logger (engine default INFO).",
     KeyGroup::kEngine},
}};

}  // namespace

std::span<const config::KeySpec> KeySpecs() { return kKeys; }

const Keys& keys() {
  // SGLang's request lines take vLLM's trace-context switch (the folders do not include each
  // other: it is found by its console key).
  static const Keys k{config::KeyOf(kKeys[0].console_key),
                      config::KeyOf(kKeys[1].console_key),
                      config::KeyOf(kKeys[2].console_key),
                      config::KeyOf(kKeys[3].console_key),
                      config::KeyOf(kKeys[4].console_key),
                      config::KeyOf(kKeys[5].console_key),
                      config::KeyOf("apsara.apm.inference.vllm.log_trace_context.enabled")};
  return k;
}

}  // namespace infertel::engines::sglang
