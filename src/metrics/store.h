#pragma once
// The agent's metric series (spec M3, M5), per source (one source per upstream): counters the
// gateway adds to, counters mirrored from an engine's cumulative values, and gauges replaced
// on every scrape. Snapshot() merges the sources by the family's MergeRule for exposition.
//
// Thread-safety: AddSource before use; everything else is thread-safe (one mutex per source,
// held for a map update).

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/metric_families.h"

namespace infertel::metrics {

// A counter delta whose labels are one of a few label sets it shares with other deltas (one
// exchange's measurements): `labels` indexes those sets.
struct LabeledDelta {
  MetricId id = MetricId::kCount;
  std::uint8_t labels = 0;
  double value = 0;
};

class MetricStore {
 public:
  MetricStore();
  ~MetricStore();
  // Registers a source; `engine` is kVllm or kSglang. Not thread-safe: call before use.
  void AddSource(std::string name, MetricScope engine);

  // Adds deltas to counters (gateway measurements, snapshot counters). Unknown source: ignored.
  void Add(std::string_view source, std::span<const MetricPoint> deltas);
  // The same for deltas labelled by `label_sets[delta.labels]`; a label set is copied only for
  // a series seen for the first time.
  void Add(std::string_view source, std::span<const MetricLabels> label_sets,
           std::span<const LabeledDelta> deltas);
  // Sets counters to cumulative totals (engine counters after reset handling).
  void SetCounters(std::string_view source, std::span<const MetricPoint> totals);
  // Replaces every gauge of the source (a scrape's result; empty clears them).
  void ReplaceGauges(std::string_view source, std::vector<MetricPoint> gauges);

  // Every series of the sources `include` accepts (all when null), merged across sources,
  // in family order then label order.
  std::vector<MetricPoint> Snapshot(
      const std::function<bool(std::string_view source, MetricScope engine)>& include = {}) const;

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
  double Observe(const MetricPoint& reading);
  std::uint64_t resets() const { return resets_; }

 private:
  struct State {
    double last = 0;
    double total = 0;
  };
  std::map<std::pair<MetricId, MetricLabels>, State> series_;
  std::uint64_t resets_ = 0;
};

}  // namespace infertel::metrics
