#pragma once
// Helpers for the metrics tests: fixtures and point lookup.

#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "core/metric_families.h"

namespace infertel::metrics::testing {

inline std::string ReadFixture(std::string_view name) {
  std::ifstream in(std::string(INFERTEL_FIXTURES_DIR) + "/" + std::string(name), std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::optional<std::string> LabelOf(const MetricPoint& p, std::string_view key) {
  for (const auto& [k, v] : p.labels)
    if (k == key) return v;
  return std::nullopt;
}

// Points of one family, optionally filtered by one label value.
inline std::vector<MetricPoint> Of(const std::vector<MetricPoint>& points, MetricId id,
                                   std::string_view key = {}, std::string_view value = {}) {
  std::vector<MetricPoint> out;
  for (const auto& p : points) {
    if (p.id != id) continue;
    if (!key.empty() && LabelOf(p, key) != std::string(value)) continue;
    out.push_back(p);
  }
  return out;
}

}  // namespace infertel::metrics::testing
