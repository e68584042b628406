#pragma once
// The Prometheus text exposition format (0.0.4), with OpenMetrics 1.0 text tolerated, as the
// engines serve it on /metrics. Tolerant by design: a malformed line is skipped and counted,
// never fatal; what could be read is returned.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace infertel::scrape {

enum class MetricType {
  kUntyped,
  kCounter,
  kGauge,
  kHistogram,
  kSummary,
  kInfo,
  kStateSet,
  kGaugeHistogram
};
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
  // Samples not kept because ParseOptions::max_samples were kept already.
  std::size_t samples_over_limit = 0;
  std::vector<std::string> errors;  // the first few problems, "line N: why"

  // The family with exactly this name, or nullptr. Linear in the number of families.
  const Family* Find(std::string_view name) const;
};

// Lines longer than this are not parsed; each counts as one malformed line.
inline constexpr std::size_t kMaxLineBytes = std::size_t{1} << 20;
// At most this many entries are kept in ParseResult::errors (malformed_lines counts them all).
inline constexpr std::size_t kMaxParseErrors = 20;

struct ParseOptions {
  // The body was served as application/openmetrics-text: integer sample timestamps are then
  // seconds, not milliseconds. (Timestamps with a fraction or exponent are always read as
  // OpenMetrics seconds; plain integers as 0.0.4 milliseconds unless this is set.)
  bool openmetrics = false;
  // At most this many samples are kept (0: no limit); later sample lines are skipped without
  // reading their labels, and counted in ParseResult::samples_over_limit. Bounds the parse's
  // memory whatever the target serves.
  std::size_t max_samples = 0;
  // When set, only families whose name it accepts are kept: a sample or a # HELP/TYPE/UNIT
  // line of another family costs no memory (and a sample skipped so does not count toward
  // max_samples). Called with the family's name as grouped (see ParsePrometheusText).
  std::function<bool(std::string_view family)> keep_family;
  // When set, only samples whose name it accepts are kept (e.g. a histogram's _sum but not
  // its buckets); the others are skipped like those of a family not kept.
  std::function<bool(std::string_view sample)> keep_sample;
};

// Parses a whole scrape in one pass. Samples are grouped under the family whose # TYPE/# HELP
// preceded them when their name is that family's name or it plus _total, _created, _bucket,
// _count, _sum, _info, _gcount or _gsum; otherwise under the family named by their base name
// (for _created also <base>_total); samples with no such family form an untyped family named
// after the sample. `# EOF` ends the parse. Exemplars (` # {...} v` after the value) are
// ignored. Malformed lines (bad names or label syntax, unterminated quotes, bad values or
// timestamps, lines over kMaxLineBytes) are skipped and counted; parsing never fails. Lines
// skipped by ParseOptions::keep_family, keep_sample or max_samples are not checked.
// Thread-safe (no shared state); the result owns copies of everything it holds.
ParseResult ParsePrometheusText(std::string_view text);
ParseResult ParsePrometheusText(std::string_view text, const ParseOptions& options);

}  // namespace infertel::scrape
