#include "core/overview_metrics.h"

#include <fmt/format.h>

#include "core/json.h"

namespace infertel::metrics {

void AppendOverviewHead(std::string* out, std::string_view source, std::int64_t step_seconds,
                        std::span<const std::int64_t> times_unix_ms) {
  *out += "{\"source\":";
  AppendJsonString(out, source);
  fmt::format_to(std::back_inserter(*out), ",\"step_seconds\":{},\"times\":[", step_seconds);
  for (std::size_t i = 0; i < times_unix_ms.size(); ++i)
    fmt::format_to(std::back_inserter(*out), "{}{}", i ? "," : "", times_unix_ms[i]);
  *out += "],\"series\":[";
}

void AppendOverviewSeries(std::string* out, bool first, OverviewMetric metric,
                          std::string_view model, std::string_view tenant,
                          std::string_view upstream,
                          std::span<const std::optional<double>> values) {
  *out += first ? "{\"metric\":" : ",{\"metric\":";
  AppendJsonString(out, OverviewMetricName(metric));
  *out += ",\"model\":";
  AppendJsonString(out, model);
  *out += ",\"tenant\":";
  AppendJsonString(out, tenant);
  *out += ",\"upstream\":";
  AppendJsonString(out, upstream);
  *out += ",\"values\":[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i) *out += ',';
    *out += values[i] ? fmt::format("{:.6g}", *values[i]) : "null";
  }
  *out += "]}";
}

}  // namespace infertel::metrics
