#include "core/metric_families.h"

#include <algorithm>
#include <array>

namespace infertel::metrics {
namespace {

using K = MetricKind;
using S = MetricScope;
using M = MergeRule;

// The gateway's model label may be `other` (docs/limits.md, "Metric labels chosen by outside
// input").
constexpr std::string_view kApiDims =
    "callType, callKind, rpcType, modelName (or `other`), spanKind, usageType";
constexpr std::string_view kVllmGatewayDims =
    "callType, rpcType, model_name (or `other`), engine_index (where known)";
constexpr std::string_view kV0Dims = "callType, rpcType";
constexpr std::string_view kV1Dims = "callType, rpcType, engine_index, model_name";
constexpr std::string_view kCommonEngineDims =
    "callType, rpcType; V1 also engine_index, model_name";
constexpr std::string_view kSglangDims = "callType, callKind, rpcType";
constexpr std::string_view kSharedDims =
    "vLLM: callType, rpcType, model_name (or `other`), engine_index (where known); SGLang: "
    "callType, callKind, rpcType";
constexpr std::string_view kGateway = "gateway measurement";

// clang-format off
constexpr std::array<MetricFamily, kMetricCount> kFamilies{{
  {MetricId::kUsageTokens, "genai_llm_usage_tokens", K::kCounter, "tokens", S::kAnyEngine, "M3.1, M5",
   kApiDims, "Input and output tokens of API requests, by usageType",
   "gateway measurement: the response's usage (or, for a stream without usage, the streamed tokens)"},
  {MetricId::kVllmIterCount, "vllm_iter_count", K::kCounter, "count", S::kVllm, "M3.1",
   kCommonEngineDims, "Engine scheduling iterations",
   "`vllm:iteration_tokens_total_count` (one observation per engine step)"},
  {MetricId::kVllmRequestSuccess, "gen_ai_vllm_request_success", K::kCounter, "count", S::kVllm, "M3.1",
   "callType, rpcType, finished_reason; V1 also engine_index, model_name",
   "Finished requests by finished_reason (aborted ones under `abort`, never as a success)",
   "`vllm:request_success_total{finished_reason}`"},
  {MetricId::kFirstTokenSeconds, "genai_llm_first_token_seconds", K::kCounter, "s", S::kVllm, "M3.1",
   kVllmGatewayDims, "Cumulative time to first token",
   "gateway measurement: request received to first content delta (streams); a response not "
   "streamed: the engine's request span's `gen_ai.latency.time_to_first_token` (vLLM V1)"},
  {MetricId::kTimePerOutputToken, "gen_ai_server_time_per_output_token", K::kCounter, "s", S::kAnyEngine,
   "M3.1, M5", kSharedDims, "Cumulative time per output token",
   "gateway measurement: vLLM (last − first token) / (output tokens − 1) per stream (a response "
   "not streamed: the engine span's decode time instead); SGLang e2e / output tokens"},
  {MetricId::kRequestDuration, "gen_ai_server_request_duration", K::kCounter, "s", S::kAnyEngine,
   "M3.1, M5", kSharedDims, "Cumulative end-to-end request duration",
   "gateway measurement: request received to response complete"},

  {MetricId::kGpuCacheUsageSys, "gpu_cache_usage_sys", K::kGauge, "ratio", S::kVllmV0, "M3.2",
   kV0Dims, "GPU KV cache usage", "`vllm:gpu_cache_usage_perc`", M::kMean},
  {MetricId::kCpuCacheUsageSys, "cpu_cache_usage_sys", K::kGauge, "ratio", S::kVllmV0, "M3.2",
   kV0Dims, "CPU KV cache usage",
   "`vllm:cpu_cache_usage_perc` (hidden behind `--show-hidden-metrics-for-version=0.8` from 0.9)", M::kMean},
  {MetricId::kNumRunningSys, "num_running_sys", K::kGauge, "count", S::kVllmV0, "M3.2",
   kV0Dims, "Running sequences", "`vllm:num_requests_running`"},
  {MetricId::kNumWaitingSys, "num_waiting_sys", K::kGauge, "count", S::kVllmV0, "M3.2",
   kV0Dims, "Waiting sequences", "`vllm:num_requests_waiting`"},
  {MetricId::kNumSwappedSys, "num_swapped_sys", K::kGauge, "count", S::kVllmV0, "M3.2",
   kV0Dims, "Swapped-out sequences", "`vllm:num_requests_swapped` (hidden from 0.9 like cpu_cache_usage_perc)"},
  {MetricId::kNumPromptTokensIter, "num_prompt_tokens_iter", K::kCounter, "tokens", S::kVllmV0, "M3.2",
   kV0Dims, "Prompt tokens processed in iterations", "`vllm:prompt_tokens_total`"},
  {MetricId::kNumGenerationTokensIter, "num_generation_tokens_iter", K::kCounter, "tokens", S::kVllmV0,
   "M3.2", kV0Dims, "Generated tokens in iterations", "`vllm:generation_tokens_total`"},
  {MetricId::kNumTokensIter, "num_tokens_iter", K::kCounter, "tokens", S::kVllmV0, "M3.2",
   kV0Dims, "All tokens processed in iterations",
   "`vllm:prompt_tokens_total` + `vllm:generation_tokens_total`"},
  {MetricId::kNumPreemptionIter, "num_preemption_iter", K::kCounter, "count", S::kVllmV0, "M3.2",
   kV0Dims, "Preemptions in iterations", "`vllm:num_preemptions_total`"},

  {MetricId::kVllmNumRequestsRunning, "gen_ai_vllm_num_requests_running", K::kGauge, "count", S::kVllmV1,
   "M3.3", kV1Dims, "Requests in the running batch", "`vllm:num_requests_running`"},
  {MetricId::kVllmNumRequestsWaiting, "gen_ai_vllm_num_requests_waiting", K::kGauge, "count", S::kVllmV1,
   "M3.3", kV1Dims, "Requests waiting", "`vllm:num_requests_waiting`"},
  {MetricId::kVllmKvCacheUsagePerc, "gen_ai_vllm_kv_cache_usage_perc", K::kGauge, "ratio", S::kVllmV1,
   "M3.3", kV1Dims, "KV cache usage, 0 to 1",
   "`vllm:kv_cache_usage_perc`, or the deprecated `vllm:gpu_cache_usage_perc` when the new name is absent",
   M::kMean},
  {MetricId::kVllmPrefixCacheQueries, "gen_ai_vllm_prefix_cache_queries", K::kCounter, "tokens",
   S::kVllmV1, "M3.3", kV1Dims, "Prefix cache queried tokens",
   "`vllm:prefix_cache_queries_total`, or the deprecated `vllm:gpu_prefix_cache_queries_total` when the new name is absent"},
  {MetricId::kVllmPrefixCacheHits, "gen_ai_vllm_prefix_cache_hits", K::kCounter, "tokens", S::kVllmV1,
   "M3.3", kV1Dims, "Prefix cache hit tokens",
   "`vllm:prefix_cache_hits_total`, or the deprecated `vllm:gpu_prefix_cache_hits_total` when the new name is absent"},
  {MetricId::kVllmNumPreemptions, "gen_ai_vllm_num_preemptions", K::kCounter, "count", S::kVllmV1,
   "M3.3", kV1Dims, "Cumulative preemptions", "`vllm:num_preemptions_total`"},
  {MetricId::kVllmPromptTokens, "gen_ai_vllm_prompt_tokens", K::kCounter, "tokens", S::kVllmV1, "M3.3",
   kV1Dims, "Prefill tokens", "`vllm:prompt_tokens_total`"},
  {MetricId::kVllmGenerationTokens, "gen_ai_vllm_generation_tokens", K::kCounter, "tokens", S::kVllmV1,
   "M3.3", kV1Dims, "Generated tokens", "`vllm:generation_tokens_total`"},
  {MetricId::kVllmRequestParamsN, "gen_ai_vllm_request_params_n", K::kCounter, "count", S::kVllmV1,
   "M3.3", kV1Dims, "Sum of request n", "`vllm:request_params_n_sum`"},
  {MetricId::kVllmRequestParamsMaxTokens, "gen_ai_vllm_request_params_max_tokens", K::kCounter, "tokens",
   S::kVllmV1, "M3.3", kV1Dims, "Sum of request max_tokens",
   "`vllm:request_params_max_tokens_sum` (vLLM observes it only when max_tokens is set)"},
  {MetricId::kVllmRequestQueueTime, "gen_ai_vllm_request_queue_time_seconds", K::kCounter, "s",
   S::kVllmV1, "M3.3", kV1Dims, "Cumulative WAITING time", "`vllm:request_queue_time_seconds_sum`"},
  {MetricId::kVllmRequestPrefillTime, "gen_ai_vllm_request_prefill_time_seconds", K::kCounter, "s",
   S::kVllmV1, "M3.3", kV1Dims, "Cumulative prefill time", "`vllm:request_prefill_time_seconds_sum`"},
  {MetricId::kVllmRequestDecodeTime, "gen_ai_vllm_request_decode_time_seconds", K::kCounter, "s",
   S::kVllmV1, "M3.3", kV1Dims, "Cumulative decode time", "`vllm:request_decode_time_seconds_sum`"},
  {MetricId::kVllmRequestInferenceTime, "gen_ai_vllm_request_inference_time_seconds", K::kCounter, "s",
   S::kVllmV1, "M3.3", kV1Dims, "Cumulative RUNNING time", "`vllm:request_inference_time_seconds_sum`"},

  {MetricId::kSglangNumRunningReqs, "sglang_num_running_reqs", K::kCounter, "count", S::kSglang, "M5",
   kSglangDims, "Snapshot of running requests, one added per stats period",
   "`sglang:num_running_reqs` (0.3.x: `sglang:num_requests_running`)"},
  {MetricId::kSglangNumQueueReqs, "sglang_num_queue_reqs", K::kCounter, "count", S::kSglang, "M5",
   kSglangDims, "Snapshot of queued requests, one added per stats period",
   "`sglang:num_queue_reqs` (0.3.x: `sglang:num_requests_waiting`)"},
  {MetricId::kSglangNumUsedTokens, "sglang_num_used_tokens", K::kCounter, "tokens", S::kSglang, "M5",
   kSglangDims, "Snapshot of used KV token slots, one added per stats period",
   "`sglang:num_used_tokens` (absent in 0.3.x)"},
  {MetricId::kSglangTokenUsage, "sglang_token_usage", K::kCounter, "ratio", S::kSglang, "M5",
   kSglangDims, "Snapshot of KV token usage, one added per stats period", "`sglang:token_usage`"},
  {MetricId::kSglangGenThroughput, "sglang_gen_throughput", K::kCounter, "token/s", S::kSglang, "M5",
   kSglangDims, "Snapshot of generation throughput, one added per stats period", "`sglang:gen_throughput`"},
  {MetricId::kSglangCacheHitRate, "gen_ai_sglang_cache_hit_rate", K::kCounter, "ratio", S::kSglang, "M5",
   kSglangDims, "Snapshot of the prefix cache hit rate, one added per stats period",
   "`sglang:cache_hit_rate` when the engine has it (0.3.x reports a percentage; divided by 100)"},
  {MetricId::kSglangSpecAcceptLength, "sglang_spec_accept_length", K::kCounter, "tokens", S::kSglang, "M5",
   kSglangDims, "Snapshot of the speculative accept length, one added per stats period",
   "`sglang:spec_accept_length` (only with speculative decoding)"},
  {MetricId::kSglangLogCount, "sglang_log_count", K::kCounter, "count", S::kSglang, "M5",
   kSglangDims, "Stats periods added to the snapshot counters (divide by it to average them)",
   "one per successful scrape of the engine's /metrics"},
  {MetricId::kSglangPromptTokensTotal, "prompt_tokens_total", K::kCounter, "tokens", S::kSglang, "M5",
   kSglangDims, "Cumulative input tokens", kGateway},
  {MetricId::kSglangGenerationTokensTotal, "generation_tokens_total", K::kCounter, "tokens", S::kSglang,
   "M5", kSglangDims, "Cumulative output tokens", kGateway},
  {MetricId::kSglangCachedTokensTotal, "gen_ai_sglang_cached_tokens_total", K::kCounter, "tokens",
   S::kSglang, "M5", kSglangDims, "Cumulative cached input tokens",
   "gateway measurement: usage.prompt_tokens_details.cached_tokens (SGLang reports it with --enable-cache-report)"},
  {MetricId::kSglangNumRequestsTotal, "num_requests_total", K::kCounter, "count", S::kSglang, "M5",
   kSglangDims, "Cumulative requests that reached the engine", kGateway},
  {MetricId::kTimeToFirstToken, "gen_ai_server_time_to_first_token", K::kCounter, "s", S::kSglang, "M5",
   kSglangDims, "Cumulative time to first token",
   "gateway measurement: request received to first content delta (streams)"},
  {MetricId::kSglangInterTokenLatency, "sglang_inter_token_latency_seconds", K::kCounter, "s", S::kSglang,
   "M5", kSglangDims, "Cumulative inter-token latency (the true gaps between streamed tokens)",
   "gateway measurement: sum of gaps between consecutive stream deltas"},
}};
// clang-format on

constexpr bool TableInOrder() {
  for (std::size_t i = 0; i < kFamilies.size(); ++i)
    if (static_cast<std::size_t>(kFamilies[i].id) != i) return false;
  return true;
}
static_assert(TableInOrder(), "kFamilies must list MetricId in enum order");

std::string_view KindName(MetricKind k) { return k == MetricKind::kCounter ? "Counter" : "Gauge"; }

}  // namespace

std::span<const MetricFamily> AllMetricFamilies() { return kFamilies; }

const MetricFamily& Family(MetricId id) { return kFamilies[static_cast<std::size_t>(id)]; }

std::optional<MetricId> FindMetric(std::string_view name) {
  for (const auto& f : kFamilies)
    if (f.name == name) return f.id;
  return std::nullopt;
}

std::string PrometheusName(const MetricFamily& family) {
  std::string name(family.name);
  if (family.kind == MetricKind::kCounter &&
      !(name.size() >= 6 && name.compare(name.size() - 6, 6, "_total") == 0))
    name += "_total";
  return name;
}

void SortLabels(MetricLabels* labels) {
  std::stable_sort(labels->begin(), labels->end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
}

std::string MetricsMarkdownTable() {
  std::string out =
      "| metric | type | unit | spec | dimensions | source |\n"
      "| --- | --- | --- | --- | --- | --- |\n";
  for (const auto& f : kFamilies) {
    out += "| `";
    out += f.name;
    out += "` | ";
    out += KindName(f.kind);
    out += " | ";
    out += f.unit;
    out += " | ";
    out += f.section;
    out += " | ";
    out += f.dimensions;
    out += " | ";
    out += f.source;
    out += " |\n";
  }
  return out;
}

}  // namespace infertel::metrics
