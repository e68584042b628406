#pragma once
// The series of the web UI's overview, by their names in its API (GET /api/v1/metrics): one
// table, read by the agent's overview history (metrics/overview_history.h) and by the store's
// answer when no agent runs (ui/store_series.h).

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace infertel::metrics {

enum class OverviewMetric : std::uint8_t {
  kRequestsPerSecond,
  kErrorsPerSecond,
  kTtftP50,
  kTtftP90,
  kTtftP99,
  kItlP50,
  kItlP90,
  kItlP99,
  kE2eP50,
  kE2eP90,
  kE2eP99,
  kSloAttainment,
  kGoodputTokensPerSecond,
  kKvCacheUsage,
  kRequestsRunning,
  kRequestsWaiting,
  kPreemptionsPerSecond,
  kCount,
};
inline constexpr std::size_t kOverviewMetricCount =
    static_cast<std::size_t>(OverviewMetric::kCount);

// The API's names, in the order of OverviewMetric.
inline constexpr std::array<std::string_view, kOverviewMetricCount> kOverviewMetrics{
    "requests_per_second",       "errors_per_second",    "ttft_p50_seconds", "ttft_p90_seconds",
    "ttft_p99_seconds",          "itl_p50_seconds",      "itl_p90_seconds",  "itl_p99_seconds",
    "e2e_p50_seconds",           "e2e_p90_seconds",      "e2e_p99_seconds",  "slo_attainment_ratio",
    "goodput_tokens_per_second", "kv_cache_usage_ratio", "requests_running", "requests_waiting",
    "preemptions_per_second",
};
constexpr std::string_view OverviewMetricName(OverviewMetric m) {
  return kOverviewMetrics[static_cast<std::size_t>(m)];
}

// The answer's JSON, written the same by both sources: its head up to the series' opening
// bracket, then each series (`first`: the first, with no comma before it); the caller closes
// with "]}". A value without a number is null.
void AppendOverviewHead(std::string* out, std::string_view source, std::int64_t step_seconds,
                        std::span<const std::int64_t> times_unix_ms);
void AppendOverviewSeries(std::string* out, bool first, OverviewMetric metric,
                          std::string_view model, std::string_view tenant,
                          std::string_view upstream, std::span<const std::optional<double>> values);

}  // namespace infertel::metrics
