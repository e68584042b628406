#pragma once
// infertel's SLO series (issue "Why was it slow, and for whom"; src/analytics/slo.h judges):
//
//   infertel_slo_requests_total{model,tenant,met}         requests judged, by verdict
//   infertel_slo_misses_total{model,tenant,objective}     objectives missed (ttft, tpot, e2e,
//                                                         error); a request may miss several
//   infertel_goodput_tokens_total{model,tenant}           output tokens of requests that met
//                                                         every objective
//   infertel_slo_attainment_ratio{model,tenant,window}    met / judged over the last 1m and 5m
//
// `tenant` is left out of a series whose requests had none. Bounded: at most max_series
// (model, tenant) pairs; a verdict for a new pair beyond it is dropped and counted.
// Thread-safety: thread-safe, one mutex held per verdict or per read.

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "analytics/slo.h"
#include "core/telemetry.h"
#include "openai/exchange.h"

namespace infertel::metrics {

struct SloFamily {
  std::string_view name;  // exact, as exposed (Prometheus and OTLP)
  std::string_view type;  // counter | gauge
  std::string_view help;
};
// The four families, in the order above.
std::span<const SloFamily> AllSloFamilies();

class SloMetrics {
 public:
  explicit SloMetrics(std::size_t max_series = 4096)
      : max_series_(max_series), windows_(max_series) {}

  // One judged request (verdict.judged), with its output tokens when known.
  void Record(std::string_view model, std::string_view tenant, const openai::SloVerdict& verdict,
              std::optional<std::int64_t> output_tokens, std::int64_t now_unix_s);

  // Prometheus text format 0.0.4.
  std::string RenderPrometheus(std::int64_t now_unix_s) const;
  // Appends the four families (those with a series) to `sm`.
  void AppendOtlp(otlp_metrics::ScopeMetrics* sm, std::uint64_t start_unix_nano,
                  std::uint64_t now_unix_nano) const;
  // Verdicts of pairs beyond the bound.
  std::uint64_t dropped() const;

  struct Totals {
    std::uint64_t judged = 0, met = 0;
    double goodput_tokens = 0;
  };
  // Each (model, tenant)'s cumulative figures.
  std::map<std::pair<std::string, std::string>, Totals> AllTotals() const;

 private:
  struct Series {
    std::uint64_t met = 0, missed = 0;
    std::array<std::uint64_t, 4> misses{};  // ttft, tpot, e2e, error
    double goodput_tokens = 0;
  };
  using Key = std::pair<std::string, std::string>;  // model, tenant

  const std::size_t max_series_;
  mutable std::mutex mu_;
  std::map<Key, Series> series_;  // guarded by mu_
  std::uint64_t dropped_ = 0;     // guarded by mu_
  analytics::AttainmentWindows windows_;
};

}  // namespace infertel::metrics
