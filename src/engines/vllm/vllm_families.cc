#include "engines/vllm/vllm_families.h"

#include <array>
#include <cstdio>
#include <cstdlib>

#include "core/semconv.h"

namespace infertel::engines::vllm {
namespace {

using K = metrics::MetricKind;
using M = metrics::MergeRule;
using metrics::MetricId;

constexpr std::string_view kVllmGatewayDims =
    "callType, rpcType, model_name (or `other`), engine_index (where known)";
constexpr std::string_view kV0Dims = "callType, rpcType";
constexpr std::string_view kV1Dims = "callType, rpcType, engine_index, model_name";
constexpr std::string_view kCommonEngineDims =
    "callType, rpcType; V1 also engine_index, model_name";
// vLLM's dimensions of the agent's families it shares with other engines.
constexpr std::string_view kSharedDims =
    "vLLM: callType, rpcType, model_name (or `other`), engine_index (where known)";

// clang-format off
constexpr std::array<metrics::MetricFamily, 28> kRows{{
  {{}, "vllm_iter_count", K::kCounter, "count", "vllm", "", "M3.1",
   kCommonEngineDims, "Engine scheduling iterations",
   "`vllm:iteration_tokens_total_count` (one observation per engine step)"},
  {{}, "gen_ai_vllm_request_success", K::kCounter, "count", "vllm", "", "M3.1",
   "callType, rpcType, finished_reason; V1 also engine_index, model_name",
   "Finished requests by finished_reason (aborted ones under `abort`, never as a success)",
   "`vllm:request_success_total{finished_reason}`"},
  {{}, "genai_llm_first_token_seconds", K::kCounter, "s", "vllm", "", "M3.1",
   kVllmGatewayDims, "Cumulative time to first token",
   "gateway measurement: request received to first content delta (streams); a response not "
   "streamed: the engine's request span's `gen_ai.latency.time_to_first_token` (vLLM V1)",
   M::kSum, semconv::kMetricServerTimeToFirstToken},
  metrics::AgentFamily(MetricId::kTimePerOutputToken, kSharedDims,
                        "vLLM (last − first token) / (output tokens − 1) per stream (a response "
                        "not streamed: the engine span's decode time instead)"),
  metrics::AgentFamily(MetricId::kRequestDuration, kSharedDims),
  {{}, "gpu_cache_usage_sys", K::kGauge, "ratio", "vllm", "v0", "M3.2",
   kV0Dims, "GPU KV cache usage", "`vllm:gpu_cache_usage_perc`", M::kMean},
  {{}, "cpu_cache_usage_sys", K::kGauge, "ratio", "vllm", "v0", "M3.2",
   kV0Dims, "CPU KV cache usage",
   "`vllm:cpu_cache_usage_perc` (hidden behind `--show-hidden-metrics-for-version=0.8` from 0.9)", M::kMean},
  {{}, "num_running_sys", K::kGauge, "count", "vllm", "v0", "M3.2",
   kV0Dims, "Running sequences", "`vllm:num_requests_running`"},
  {{}, "num_waiting_sys", K::kGauge, "count", "vllm", "v0", "M3.2",
   kV0Dims, "Waiting sequences", "`vllm:num_requests_waiting`"},
  {{}, "num_swapped_sys", K::kGauge, "count", "vllm", "v0", "M3.2",
   kV0Dims, "Swapped-out sequences", "`vllm:num_requests_swapped` (hidden from 0.9 like cpu_cache_usage_perc)"},
  {{}, "num_prompt_tokens_iter", K::kCounter, "tokens", "vllm", "v0", "M3.2",
   kV0Dims, "Prompt tokens processed in iterations", "`vllm:prompt_tokens_total`"},
  {{}, "num_generation_tokens_iter", K::kCounter, "tokens", "vllm", "v0",
   "M3.2", kV0Dims, "Generated tokens in iterations", "`vllm:generation_tokens_total`"},
  {{}, "num_tokens_iter", K::kCounter, "tokens", "vllm", "v0", "M3.2",
   kV0Dims, "All tokens processed in iterations",
   "`vllm:prompt_tokens_total` + `vllm:generation_tokens_total`"},
  {{}, "num_preemption_iter", K::kCounter, "count", "vllm", "v0", "M3.2",
   kV0Dims, "Preemptions in iterations", "`vllm:num_preemptions_total`"},
  {{}, "gen_ai_vllm_num_requests_running", K::kGauge, "count", "vllm", "v1",
   "M3.3", kV1Dims, "Requests in the running batch", "`vllm:num_requests_running`"},
  {{}, "gen_ai_vllm_num_requests_waiting", K::kGauge, "count", "vllm", "v1",
   "M3.3", kV1Dims, "Requests waiting", "`vllm:num_requests_waiting`"},
  {{}, "gen_ai_vllm_kv_cache_usage_perc", K::kGauge, "ratio", "vllm", "v1",
   "M3.3", kV1Dims, "KV cache usage, 0 to 1",
   "`vllm:kv_cache_usage_perc`, or the deprecated `vllm:gpu_cache_usage_perc` when the new name is absent",
   M::kMean},
  {{}, "gen_ai_vllm_prefix_cache_queries", K::kCounter, "tokens",
   "vllm", "v1", "M3.3", kV1Dims, "Prefix cache queried tokens",
   "`vllm:prefix_cache_queries_total`, or the deprecated `vllm:gpu_prefix_cache_queries_total` when the new name is absent"},
  {{}, "gen_ai_vllm_prefix_cache_hits", K::kCounter, "tokens", "vllm", "v1",
   "M3.3", kV1Dims, "Prefix cache hit tokens",
   "`vllm:prefix_cache_hits_total`, or the deprecated `vllm:gpu_prefix_cache_hits_total` when the new name is absent"},
  {{}, "gen_ai_vllm_num_preemptions", K::kCounter, "count", "vllm", "v1",
   "M3.3", kV1Dims, "Cumulative preemptions", "`vllm:num_preemptions_total`"},
  {{}, "gen_ai_vllm_prompt_tokens", K::kCounter, "tokens", "vllm", "v1", "M3.3",
   kV1Dims, "Prefill tokens", "`vllm:prompt_tokens_total`"},
  {{}, "gen_ai_vllm_generation_tokens", K::kCounter, "tokens", "vllm", "v1",
   "M3.3", kV1Dims, "Generated tokens", "`vllm:generation_tokens_total`"},
  {{}, "gen_ai_vllm_request_params_n", K::kCounter, "count", "vllm", "v1",
   "M3.3", kV1Dims, "Sum of request n", "`vllm:request_params_n_sum`"},
  {{}, "gen_ai_vllm_request_params_max_tokens", K::kCounter, "tokens",
   "vllm", "v1", "M3.3", kV1Dims, "Sum of request max_tokens",
   "`vllm:request_params_max_tokens_sum` (vLLM observes it only when max_tokens is set)"},
  {{}, "gen_ai_vllm_request_queue_time_seconds", K::kCounter, "s",
   "vllm", "v1", "M3.3", kV1Dims, "Cumulative WAITING time", "`vllm:request_queue_time_seconds_sum`"},
  {{}, "gen_ai_vllm_request_prefill_time_seconds", K::kCounter, "s",
   "vllm", "v1", "M3.3", kV1Dims, "Cumulative prefill time", "`vllm:request_prefill_time_seconds_sum`"},
  {{}, "gen_ai_vllm_request_decode_time_seconds", K::kCounter, "s",
   "vllm", "v1", "M3.3", kV1Dims, "Cumulative decode time", "`vllm:request_decode_time_seconds_sum`"},
  {{}, "gen_ai_vllm_request_inference_time_seconds", K::kCounter, "s",
   "vllm", "v1", "M3.3", kV1Dims, "Cumulative RUNNING time", "`vllm:request_inference_time_seconds_sum`"},
}};
// clang-format on

}  // namespace

std::span<const metrics::MetricFamily> MetricFamilyRows() { return kRows; }

metrics::MetricId Id(VllmMetric m) {
  static const std::size_t first = [] {
    // The own rows were added together, in order: the first one's id gives the others.
    const auto id = metrics::FindMetric(kRows[0].name);
    if (!id) {
      std::fputs("infertel: vLLM's metric families are not in the table\n", stderr);
      std::abort();
    }
    return metrics::IndexOf(*id);
  }();
  return static_cast<MetricId>(first + static_cast<std::size_t>(m));
}

}  // namespace infertel::engines::vllm
