#pragma once
// The Prometheus text exposition format (0.0.4), with OpenMetrics 1.0 text tolerated, as the
// engines serve it on /metrics. Tolerant by design: a malformed line is skipped and counted,
// never fatal; what could be read is returned.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace infertel::scrape {

enum class MetricType { kUntyped, kCounter, kGauge, kHistogram, kSummary, kInfo, kStateSet, kGaugeHistogram };
std::string_view MetricTypeName(MetricType t);

using Labels = std::vector<std::pair<std::string, std::string>>;  // in exposition order

struct Sample {
  std::string name;  // as exposed: e.g. vllm:prompt_tokens_total, ..._bucket, ..._sum, ..._created
  Labels labels;     // label values unescaped
  double value = 0;  // NaN and ±Inf as in the text
  std::optional<std::int64_t> timestamp_ms;

  const std::string* Label(std::string_view name) const;
};

struct Family {
  std::string name;  // from # TYPE (or the sample name when untyped); OpenMetrics counters
                     // are named without _total there
  MetricType type = MetricType::kUntyped;
  std::string help;  // unescaped
  std::string unit;  // OpenMetrics # UNIT
  std::vector<Sample> samples;
};

struct ParseResult {
  std::vector<Family> families;  // in exposition order
  std::size_t malformed_lines = 0;
  std::vector<std::string> errors;  // the first few problems, "line N: why"
};

// Parses a whole scrape. Samples are grouped under the family whose # TYPE/# HELP preceded
// them, or whose name is their base name (_total, _bucket, _sum, _count, _created, _info);
// samples with no such family form an untyped family of their own.
ParseResult ParsePrometheusText(std::string_view text);

}  // namespace infertel::scrape
