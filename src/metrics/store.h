#pragma once
// The agent's metric series (spec M3, M5), per source (one source per upstream): counters the
// gateway adds to, counters mirrored from an engine's cumulative values, and gauges replaced
// on every scrape. Snapshot() merges the sources by the family's MergeRule for exposition.
//
// Thread-safety: AddSource before use; everything else is thread-safe (one mutex per source,
// held for a map update).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/engine_id.h"
#include "core/metric_families.h"

namespace infertel::metrics {

// A counter delta whose labels are one of a few label sets it shares with other deltas (one
// exchange's measurements): `labels` indexes those sets.
struct LabeledDelta {
  MetricId id = MetricId::kNone;
  std::uint8_t labels = 0;
  double value = 0;
};

class MetricStore {
 public:
  MetricStore();
  ~MetricStore();
  // Registers a source and the engine it measures. Not thread-safe: call before use.
  void AddSource(std::string name, EngineId engine);

  // Adds deltas to counters (gateway measurements, snapshot counters). Unknown source: ignored.
  void Add(std::string_view source, std::span<const MetricPoint> deltas);
  // The same for deltas labelled by `label_sets[delta.labels]`; a label set is copied only for
  // a series seen for the first time.
  void Add(std::string_view source, std::span<const MetricLabels> label_sets,
           std::span<const LabeledDelta> deltas);
  // Replaces the counters mirrored from the engine with these cumulative totals (a scrape's
  // after reset handling and expiry, ScrapedSeries): a series not given is gone. Kept apart
  // from the counters Add feeds.
  void ReplaceScrapedCounters(std::string_view source, std::span<const MetricPoint> totals);
  // Replaces every gauge of the source (a scrape's result; empty clears them).
  void ReplaceGauges(std::string_view source, std::vector<MetricPoint> gauges);

  // Every series of the sources `include` accepts (all when null), merged across sources,
  // in family order then label order.
  std::vector<MetricPoint> Snapshot(
      const std::function<bool(std::string_view source, EngineId engine)>& include = {}) const;

 private:
  struct Source;
  Source* Find(std::string_view name) const;
  std::vector<std::unique_ptr<Source>> sources_;
};

// Turns an engine's cumulative counter readings into totals that never go down: the first
// reading is taken as is; an increase is added; a decrease means the engine restarted, and
// the new reading (counted since the restart) is added.
//
// Thread-safety: not thread-safe; one per scrape target.
class CounterTracker {
 public:
  using Clock = std::chrono::steady_clock;
  // `now` is when the reading was taken (for ForgetUnseenSince).
  double Observe(const MetricPoint& reading, Clock::time_point now = {});
  bool Tracks(const MetricPoint& p) const;
  std::size_t size() const { return series_.size(); }
  // Forgets every series last observed before `cutoff`; returns how many.
  std::size_t ForgetUnseenSince(Clock::time_point cutoff);
  // Every series tracked, with its total.
  std::vector<MetricPoint> Totals() const;
  std::uint64_t resets() const { return resets_; }

 private:
  struct State {
    double last = 0;
    double total = 0;
    Clock::time_point seen;
  };
  std::map<std::pair<MetricId, MetricLabels>, State> series_;
  std::uint64_t resets_ = 0;
};

// Bounds on the series one scrape target may have.
struct ScrapeLimits {
  // Counters tracked plus gauges of the latest scrape; a new series beyond it is refused.
  std::size_t max_series = 10000;
  // A counter absent from every successful scrape for this long is forgotten (Prometheus marks
  // a vanished series stale; gauges go at once, being replaced on every scrape).
  std::chrono::milliseconds stale_after{std::chrono::minutes(5)};
};

// What one scrape did to a target's series.
struct ScrapeUpdate {
  std::uint64_t resets = 0;      // counter series that went back (engine restarts)
  std::uint64_t over_limit = 0;  // new series refused: max_series reached
  std::uint64_t expired = 0;     // counter series forgotten: unseen for stale_after
};

// The series of one scrape target, within ScrapeLimits: counters carried over engine restarts
// (CounterTracker) until they go stale, and the gauges of the latest scrape. A series already
// kept is always updated; a new one is kept only while there is room.
//
// Thread-safety: not thread-safe; the scrape thread only.
class ScrapedSeries {
 public:
  using Clock = CounterTracker::Clock;
  explicit ScrapedSeries(ScrapeLimits limits = {}) : limits_(limits) {}

  // One successful scrape: `counters` (cumulative readings) and `gauges` (current values),
  // each sorted or not. On return `gauges` holds the gauges kept.
  ScrapeUpdate Update(const std::vector<MetricPoint>& counters, std::vector<MetricPoint>* gauges,
                      Clock::time_point now);
  // The counters' totals, for MetricStore::ReplaceScrapedCounters.
  std::vector<MetricPoint> CounterTotals() const { return counters_.Totals(); }
  // Counters tracked plus gauges kept at the latest Update.
  std::size_t size() const { return counters_.size() + gauges_; }

 private:
  ScrapeLimits limits_;
  CounterTracker counters_;
  std::size_t gauges_ = 0;
};

}  // namespace infertel::metrics
