#include "scrape/prometheus_text.h"

namespace infertel::scrape {

std::string_view MetricTypeName(MetricType t) {
  switch (t) {
    case MetricType::kCounter: return "counter";
    case MetricType::kGauge: return "gauge";
    case MetricType::kHistogram: return "histogram";
    case MetricType::kSummary: return "summary";
    case MetricType::kInfo: return "info";
    case MetricType::kStateSet: return "stateset";
    case MetricType::kGaugeHistogram: return "gaugehistogram";
    case MetricType::kUntyped: break;
  }
  return "untyped";
}

const std::string* Sample::Label(std::string_view name) const {
  for (const auto& [k, v] : labels)
    if (k == name) return &v;
  return nullptr;
}

}  // namespace infertel::scrape
