#pragma once
// The recent past of what the web UI's overview charts (GET /api/v1/metrics): every step
// (5 s), per (model, tenant) the requests and errors per second, the p50/p90/p99 of time to
// first token, inter-token gaps and request duration, SLO attainment and goodput; per
// upstream the engine's KV-cache usage, running and waiting requests and preemptions per
// second. The agent's cumulative figures are read at each step (Record) and the step's values
// computed from the difference with the previous reading, so that a step holds a few numbers,
// not histograms.
//
// Bounded: at most max_steps steps (an hour at 5 s by default) and max_series series (a
// series is one metric of one model/tenant or upstream); values of further series are
// dropped and counted. Thread-safety: thread-safe (one mutex for the record, one for the
// request counts, which the gateway's threads add to).

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/latency_buckets.h"
#include "core/overview_metrics.h"

namespace infertel::metrics {

using Buckets = std::array<std::uint64_t, kLatencyBuckets>;  // per bucket, not cumulative

// One (model, tenant)'s cumulative figures at a moment.
struct KeyTotals {
  std::uint64_t requests = 0, errors = 0;
  Buckets ttft{}, itl{}, e2e{};
  std::uint64_t slo_judged = 0, slo_met = 0;
  double goodput_tokens = 0;
};
// One upstream's engine state at a moment (absent: the engine does not report it). With
// `scrapes`, the first three are sums over that many scrapes, and a step's state is their
// increase over the scrapes' (an engine whose families add up each scrape's state).
struct EngineState {
  std::optional<double> kv_cache_usage, running, waiting, preemptions_total;
  std::optional<double> scrapes;
};
struct OverviewReading {
  std::map<std::pair<std::string, std::string>, KeyTotals> keys;  // (model, tenant)
  std::map<std::string, EngineState> upstreams;
};

// The quantile `q` of the observations counted in `b` (bounds: kLatencyBounds), interpolated
// linearly inside its bucket as Prometheus' histogram_quantile does; nullopt for none.
std::optional<double> BucketQuantile(const Buckets& b, double q);

class OverviewHistory {
 public:
  explicit OverviewHistory(std::size_t max_steps = 720, std::size_t max_series = 2048)
      : max_steps_(max_steps), max_series_(max_series) {}

  // A finished request of (model, tenant); thread-safe, from the gateway's threads. The
  // counts are read back by Requests() into a reading.
  void CountRequest(std::string_view model, std::string_view tenant, bool error);
  // Adds the request counts to `reading`'s keys.
  void AddRequestCounts(OverviewReading* reading) const;

  // Takes a reading made at `unix_ms`: its step is the difference with the previous one.
  void Record(std::int64_t unix_ms, OverviewReading reading);

  // {"source":"agent","step_seconds":S,"times":[unix ms…],"series":[{"metric","model","tenant",
  //  "upstream","values":[number|null…]}…]} for the steps since `since_unix_ms`.
  std::string Json(std::int64_t since_unix_ms, int step_seconds) const;

  // Values of series beyond max_series, and requests not counted for the same reason.
  std::uint64_t dropped() const;
  // The memory the steps' values take: at most max_steps x max_series x 16 bytes (22.5 MiB
  // with the defaults; docs/limits.md).
  std::size_t ValueBytes() const;

 private:
  struct SeriesKey {
    OverviewMetric metric;
    std::string model, tenant, upstream;
    auto operator<=>(const SeriesKey&) const = default;
  };
  struct Step {
    using Value = std::pair<std::uint32_t, double>;  // series id, value
    std::int64_t unix_ms = 0;
    std::vector<Value> values;
  };
  void Add(Step* step, SeriesKey key, std::optional<double> value);  // mu_ held
  void AddKeySteps(Step* step, double seconds, const OverviewReading& now);
  void AddUpstreamSteps(Step* step, double seconds, const OverviewReading& now);

  const std::size_t max_steps_, max_series_;
  mutable std::mutex mu_;
  std::optional<std::pair<std::int64_t, OverviewReading>> previous_;  // guarded by mu_
  std::deque<Step> steps_;                                            // guarded by mu_
  std::map<SeriesKey, std::uint32_t> ids_;                            // guarded by mu_
  std::vector<const SeriesKey*> keys_;                                // by id; guarded by mu_
  std::uint64_t dropped_ = 0;                                         // guarded by mu_

  // (model, tenant) → requests, errors; found by views, so that a request allocates nothing.
  struct ViewLess {
    using is_transparent = void;
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      using Views = std::pair<std::string_view, std::string_view>;
      return Views(a.first, a.second) < Views(b.first, b.second);
    }
  };
  std::atomic<std::uint64_t> counts_refused_{0};  // requests of pairs beyond max_series
  mutable std::mutex counts_mu_;
  std::map<std::pair<std::string, std::string>, std::pair<std::uint64_t, std::uint64_t>, ViewLess>
      counts_;  // guarded by counts_mu_
};

}  // namespace infertel::metrics
