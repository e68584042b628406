#pragma once
// Every metric family of the telemetry model (spec M3 for vLLM, M5 for SGLang): its exact
// name, type, unit, dimensions and where its value comes from, in one table. The exposition,
// the OTLP encoder, the translators and docs/telemetry-reference.md all read this table.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace infertel::metrics {

enum class MetricId : std::uint8_t {
  // M3.1 / M5: measured at the gateway, API-layer dimensions.
  kUsageTokens,
  // M3.1: vLLM, both generations.
  kVllmIterCount,
  kVllmRequestSuccess,
  kFirstTokenSeconds,
  kTimePerOutputToken,  // also M5 (SGLang)
  kRequestDuration,     // also M5 (SGLang)
  // M3.2: vLLM V0.
  kGpuCacheUsageSys,
  kCpuCacheUsageSys,
  kNumRunningSys,
  kNumWaitingSys,
  kNumSwappedSys,
  kNumPromptTokensIter,
  kNumGenerationTokensIter,
  kNumTokensIter,
  kNumPreemptionIter,
  // M3.3: vLLM V1.
  kVllmNumRequestsRunning,
  kVllmNumRequestsWaiting,
  kVllmKvCacheUsagePerc,
  kVllmPrefixCacheQueries,
  kVllmPrefixCacheHits,
  kVllmNumPreemptions,
  kVllmPromptTokens,
  kVllmGenerationTokens,
  kVllmRequestParamsN,
  kVllmRequestParamsMaxTokens,
  kVllmRequestQueueTime,
  kVllmRequestPrefillTime,
  kVllmRequestDecodeTime,
  kVllmRequestInferenceTime,
  // M5: SGLang snapshot counters (one snapshot added per stats period).
  kSglangNumRunningReqs,
  kSglangNumQueueReqs,
  kSglangNumUsedTokens,
  kSglangTokenUsage,
  kSglangGenThroughput,
  kSglangCacheHitRate,
  kSglangSpecAcceptLength,
  kSglangLogCount,
  // M5: SGLang request totals and latencies (measured at the gateway).
  kSglangPromptTokensTotal,
  kSglangGenerationTokensTotal,
  kSglangCachedTokensTotal,
  kSglangNumRequestsTotal,
  kTimeToFirstToken,
  kSglangInterTokenLatency,
  kCount,
};
inline constexpr std::size_t kMetricCount = static_cast<std::size_t>(MetricId::kCount);

enum class MetricKind : std::uint8_t { kCounter, kGauge };

// Which engine (and vLLM generation) a family belongs to.
enum class MetricScope : std::uint8_t { kAnyEngine, kVllm, kVllmV0, kVllmV1, kSglang };

// How series of the same name and labels from several upstreams combine.
enum class MergeRule : std::uint8_t { kSum, kMean };

struct MetricFamily {
  MetricId id;
  std::string_view name;  // exact spec name; OTLP uses it as is
  MetricKind kind;
  std::string_view unit;  // as the spec writes it
  MetricScope scope;
  std::string_view section;     // spec section, e.g. "M3.3"
  std::string_view dimensions;  // for docs: the dimension keys
  std::string_view help;        // one line
  std::string_view source;      // for docs: engine metric read, or gateway measurement
  MergeRule merge = MergeRule::kSum;
};

std::span<const MetricFamily> AllMetricFamilies();
const MetricFamily& Family(MetricId id);
std::optional<MetricId> FindMetric(std::string_view name);

// The name a Prometheus exposition uses: counters end in `_total` (added unless the spec name
// already ends so), as prometheus_client does and promtool requires.
std::string PrometheusName(const MetricFamily& family);

// ---- Dimension keys and fixed values (spec M3, M5).
inline constexpr std::string_view kDimCallType = "callType";
inline constexpr std::string_view kDimCallKind = "callKind";
inline constexpr std::string_view kDimRpcType = "rpcType";
inline constexpr std::string_view kDimEngineIndex = "engine_index";
inline constexpr std::string_view kDimModelName = "model_name";
inline constexpr std::string_view kDimFinishedReason = "finished_reason";
inline constexpr std::string_view kDimModelNameApi = "modelName";
inline constexpr std::string_view kDimSpanKind = "spanKind";
inline constexpr std::string_view kDimUsageType = "usageType";
inline constexpr std::string_view kCallTypeGenAi = "gen_ai";
inline constexpr std::string_view kCallKindCustomEntry = "custom_entry";
inline constexpr std::string_view kRpcTypeLlm = "2100";
inline constexpr std::string_view kUsageTypeInput = "input";
inline constexpr std::string_view kUsageTypeOutput = "output";

// One value of one series. Labels are sorted by key, so equal series compare equal.
using MetricLabels = std::vector<std::pair<std::string, std::string>>;
struct MetricPoint {
  MetricId id = MetricId::kCount;
  MetricLabels labels;
  double value = 0;
};
// Sorts labels by key (stable for equal keys) so points can be compared and merged.
void SortLabels(MetricLabels* labels);

// Renders the families as the Markdown table in docs/telemetry-reference.md (between
// `<!-- metrics:begin -->` and `<!-- metrics:end -->`).
std::string MetricsMarkdownTable();

}  // namespace infertel::metrics
