#pragma once
// Translation of vLLM's /metrics (facts/vllm.md §2) into the families of spec M3: V1 into
// M3.3 + M3.1, V0 into M3.2 + M3.1. One table of rules per generation (vllm_metrics.cc).
// Old and new vLLM names (gpu_cache_usage_perc / kv_cache_usage_perc, gpu_prefix_cache_* /
// prefix_cache_*) are both understood; when a scrape has both, only the new one is read.
//
// Pure functions; thread-safe.

#include <cstddef>
#include <string_view>
#include <vector>

#include "core/metric_families.h"
#include "scrape/prometheus_text.h"

namespace infertel::engines::vllm {

enum class MetricsGeneration { kUnknown, kV0, kV1 };

// Which vLLM generation served this exposition: V1 labels its series with `engine` and has
// names V0 never had (kv_cache_usage_perc, *prefix_cache_queries); V0 has names V1 never had
// (num_requests_swapped, cpu_cache_usage_perc, *_prefix_cache_hit_rate). kUnknown when the
// exposition has neither kind of evidence (then V1, the maintained generation, is assumed).
MetricsGeneration DetectMetricsGeneration(const scrape::ParseResult& scrape);

struct TranslatedMetrics {
  // Cumulative values exactly as the engine reports them (resets are handled by the caller).
  std::vector<metrics::MetricPoint> counters;
  // Current values; only series the engine really reported (never a made-up 0).
  std::vector<metrics::MetricPoint> gauges;
  // Samples refused for their value: NaN or ±Inf, or a negative counter (OpenMetrics: a
  // counter's total is a non-NaN, non-negative number). Each is left out of its series.
  std::size_t invalid_values = 0;
};

TranslatedMetrics TranslateMetrics(const scrape::ParseResult& scrape, MetricsGeneration generation);

// Whether TranslateMetrics or DetectMetricsGeneration reads the family of this name (as the
// parser groups it): the parser keeps no other (scrape::ParseOptions::keep_family).
bool ReadsFamily(std::string_view family);
// Whether a sample of such a family is read: not a histogram's buckets (but for the +Inf
// bucket of vllm:iteration_tokens_total, read when its _count is missing), nor _created.
bool ReadsSample(std::string_view sample);

}  // namespace infertel::engines::vllm
