#include "ui/store_series.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "core/overview_metrics.h"

namespace infertel::ui {
namespace {

using metrics::OverviewMetric;

struct Cell {
  std::uint64_t requests = 0, errors = 0;
  std::vector<std::int64_t> ok_durations_ns;
};

// The nearest-rank quantile `q` of `v` (reordered): the ceil(q·n)-th smallest.
double Quantile(std::vector<std::int64_t>& v, double q) {
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
  const std::size_t i = std::min(v.size() - 1, rank == 0 ? 0 : rank - 1);
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(i), v.end());
  return static_cast<double>(v[i]) / 1e9;
}

}  // namespace

std::int64_t StepSecondsFor(std::int64_t window_ms, std::size_t max_steps) {
  const std::int64_t min_step = 10;
  const std::int64_t needed = (window_ms / 1000 + static_cast<std::int64_t>(max_steps) - 1) /
                              static_cast<std::int64_t>(std::max<std::size_t>(1, max_steps));
  return std::max(min_step, (needed + min_step - 1) / min_step * min_step);
}

std::string StoreSeriesJson(std::span<const exporting::TraceSummary> traces, std::int64_t since_ms,
                            std::int64_t now_ms, std::int64_t step_s, bool complete) {
  const std::int64_t step_ms = step_s * 1000;
  const std::int64_t first_ms = since_ms / step_ms * step_ms;
  // Whole steps only: the one under way would show too few requests.
  const auto steps =
      static_cast<std::size_t>(std::max<std::int64_t>(0, (now_ms - first_ms) / step_ms));
  // Steps wholly before the oldest trace read are not known when the read was cut short.
  std::size_t known_from = 0;
  if (!complete && !traces.empty())
    known_from = static_cast<std::size_t>(
        std::max<std::int64_t>(0, traces.back().start_time_unix_nano / 1'000'000 - first_ms) /
            step_ms +
        1);
  std::map<std::pair<std::string, std::string>, std::vector<Cell>> cells;
  for (const auto& t : traces) {
    const std::int64_t ms = t.start_time_unix_nano / 1'000'000;
    if (t.model.empty() || ms < first_ms) continue;
    const auto i = static_cast<std::size_t>((ms - first_ms) / step_ms);
    if (i >= steps) continue;
    auto& row = cells[{t.model, t.tenant}];
    if (row.empty()) row.resize(steps);
    Cell& c = row[i];
    ++c.requests;
    if (t.status_code == 2)
      ++c.errors;
    else
      c.ok_durations_ns.push_back(t.duration_ns);
  }
  std::vector<std::int64_t> times;
  for (std::size_t i = 0; i < steps; ++i)
    times.push_back(first_ms + static_cast<std::int64_t>(i + 1) * step_ms);
  std::string out;
  metrics::AppendOverviewHead(&out, "store", step_s, times);
  bool first = true;
  std::vector<std::optional<double>> values(steps);
  for (auto& [key, row] : cells) {
    auto emit = [&](OverviewMetric m, auto value_of) {
      for (std::size_t i = 0; i < steps; ++i)
        values[i] = i < known_from ? std::nullopt : value_of(row[i]);
      metrics::AppendOverviewSeries(&out, first, m, key.first, key.second, "", values);
      first = false;
    };
    const double secs = static_cast<double>(step_s);
    emit(OverviewMetric::kRequestsPerSecond,
         [&](Cell& c) { return std::optional<double>(static_cast<double>(c.requests) / secs); });
    emit(OverviewMetric::kErrorsPerSecond,
         [&](Cell& c) { return std::optional<double>(static_cast<double>(c.errors) / secs); });
    const std::pair<OverviewMetric, double> quantiles[] = {{OverviewMetric::kE2eP50, 0.5},
                                                           {OverviewMetric::kE2eP90, 0.9},
                                                           {OverviewMetric::kE2eP99, 0.99}};
    for (const auto& [m, q] : quantiles)
      emit(m, [&](Cell& c) -> std::optional<double> {
        if (c.ok_durations_ns.empty()) return std::nullopt;
        return Quantile(c.ok_durations_ns, q);
      });
  }
  out += "]}";
  return out;
}

}  // namespace infertel::ui
