#pragma once
// The latest OpenTelemetry GenAI conventions' metrics, when OTEL_SEMCONV_STABILITY_OPT_IN asks for
// them (core/genai_dialect.h): histograms with the conventions' names, units, advised bucket
// boundaries and attributes, measured at the gateway (which is the engine's client and the
// user's server):
//
//   gen_ai.client.token.usage            {token}  input and output tokens (gen_ai.token.type)
//   gen_ai.client.operation.duration     s        request to response end, any outcome
//   gen_ai.server.request.duration       s        the same, as the user's server sees it
//   gen_ai.server.time_to_first_token    s        successful streams
//   gen_ai.server.time_per_output_token  s        successful streams, (last - first) / (n - 1)
//
// Over OTLP under these names; in the Prometheus exposition as the OpenTelemetry-to-Prometheus
// rules write them (dots to underscores, `_seconds` for seconds, e.g.
// gen_ai_server_request_duration_seconds). Bounded: at most max_series series in all; values
// of further series are dropped and counted. Thread-safe: one mutex.

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/telemetry.h"

namespace infertel::metrics {

enum class GenAiMetric : std::uint8_t {
  kClientTokenUsage,
  kClientOperationDuration,
  kServerRequestDuration,
  kServerTimeToFirstToken,
  kServerTimePerOutputToken,
  kCount,
};
inline constexpr std::size_t kGenAiMetricCount = static_cast<std::size_t>(GenAiMetric::kCount);

struct GenAiMetricFamily {
  GenAiMetric id;
  std::string_view name;             // the conventions' (OTLP)
  std::string_view prometheus_name;  // as the OpenTelemetry-to-Prometheus rules write it
  std::string_view unit;
  std::string_view help;
  std::span<const double> bounds;  // the conventions' advised bucket boundaries
};
std::span<const GenAiMetricFamily> AllGenAiMetricFamilies();

// A series' attributes; empty ones are left out.
struct GenAiAttributes {
  std::string operation, provider, request_model, error_type, token_type;
  auto operator<=>(const GenAiAttributes&) const = default;
};

class GenAiHistograms {
 public:
  explicit GenAiHistograms(std::size_t max_series = 4096) : max_series_(max_series) {}

  void Observe(GenAiMetric id, const GenAiAttributes& attributes, double value);
  // Prometheus text format 0.0.4, classic histograms.
  std::string RenderPrometheus() const;
  // Appends one OTLP cumulative histogram per family with a series to `sm`.
  void AppendOtlp(otlp_metrics::ScopeMetrics* sm, std::uint64_t start_unix_nano,
                  std::uint64_t now_unix_nano) const;
  std::uint64_t dropped() const;  // values of series beyond the bound

 private:
  struct Series {
    std::vector<std::uint64_t> counts;  // per bucket (bounds + 1), not cumulative
    double sum = 0;
    std::uint64_t count = 0;
  };
  using Key = std::tuple<GenAiMetric, GenAiAttributes>;

  const std::size_t max_series_;
  mutable std::mutex mu_;
  std::map<Key, Series> series_;  // ordered: families together; guarded by mu_
  std::uint64_t dropped_ = 0;     // guarded by mu_
};

}  // namespace infertel::metrics
