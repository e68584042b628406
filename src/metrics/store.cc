#include "metrics/store.h"

#include <algorithm>
#include <mutex>

namespace infertel::metrics {

using Key = std::pair<MetricId, MetricLabels>;

namespace {

// A point's series looked up without copying its labels into a Key.
struct KeyRef {
  MetricId id;
  const MetricLabels& labels;
};

// Key order (std::pair's), also against a KeyRef: the gateway adds its counter deltas with
// find() on the point's own labels, and copies them only for a new series.
struct KeyLess {
  using is_transparent = void;
  static bool Less(MetricId a, const MetricLabels& la, MetricId b, const MetricLabels& lb) {
    return a != b ? a < b : la < lb;
  }
  bool operator()(const Key& a, const Key& b) const { return a < b; }
  bool operator()(const Key& a, const KeyRef& b) const {
    return Less(a.first, a.second, b.id, b.labels);
  }
  bool operator()(const KeyRef& a, const Key& b) const {
    return Less(a.id, a.labels, b.first, b.second);
  }
};

using Series = std::map<Key, double, KeyLess>;

// The value of `p`'s series in `m`, made (at 0) when new; labels are copied only then.
double& ValueOf(Series& m, MetricId id, const MetricLabels& labels) {
  if (auto it = m.find(KeyRef{id, labels}); it != m.end()) return it->second;
  return m.emplace(Key{id, labels}, 0.0).first->second;
}
double& ValueOf(Series& m, const MetricPoint& p) { return ValueOf(m, p.id, p.labels); }

}  // namespace

struct MetricStore::Source {
  std::string name;
  EngineId engine;
  mutable std::mutex mu;
  Series counters;          // guarded by mu: the gateway's measurements (Add)
  Series scraped_counters;  // guarded by mu: the engine's, replaced on every scrape
  Series gauges;            // guarded by mu
};

MetricStore::MetricStore() = default;
MetricStore::~MetricStore() = default;

void MetricStore::AddSource(std::string name, EngineId engine) {
  if (Find(name)) return;
  auto s = std::make_unique<Source>();
  s->name = std::move(name);
  s->engine = engine;
  sources_.push_back(std::move(s));
}

MetricStore::Source* MetricStore::Find(std::string_view name) const {
  for (const auto& s : sources_)
    if (s->name == name) return s.get();
  return nullptr;
}

void MetricStore::Add(std::string_view source, std::span<const MetricPoint> deltas) {
  Source* s = Find(source);
  if (!s) return;
  std::lock_guard lock(s->mu);
  for (const auto& p : deltas) ValueOf(s->counters, p) += p.value;
}

void MetricStore::Add(std::string_view source, std::span<const MetricLabels> label_sets,
                      std::span<const LabeledDelta> deltas) {
  Source* s = Find(source);
  if (!s) return;
  std::lock_guard lock(s->mu);
  for (const auto& d : deltas)
    if (d.labels < label_sets.size()) ValueOf(s->counters, d.id, label_sets[d.labels]) += d.value;
}

void MetricStore::ReplaceScrapedCounters(std::string_view source,
                                         std::span<const MetricPoint> totals) {
  Source* s = Find(source);
  if (!s) return;
  Series next;
  for (const auto& p : totals) next.emplace(Key{p.id, p.labels}, p.value);
  std::lock_guard lock(s->mu);
  s->scraped_counters.swap(next);
}

void MetricStore::ReplaceGauges(std::string_view source, std::vector<MetricPoint> gauges) {
  Source* s = Find(source);
  if (!s) return;
  Series next;
  for (auto& p : gauges) next[{p.id, std::move(p.labels)}] = p.value;
  std::lock_guard lock(s->mu);
  s->gauges.swap(next);
}

std::vector<MetricPoint> MetricStore::Snapshot(
    const std::function<bool(std::string_view, EngineId)>& include) const {
  struct Acc {
    double sum = 0;
    int n = 0;
  };
  std::map<Key, Acc> merged;
  for (const auto& s : sources_) {
    if (include && !include(s->name, s->engine)) continue;
    std::lock_guard lock(s->mu);
    for (const auto* m : {&s->counters, &s->scraped_counters, &s->gauges})
      for (const auto& [key, value] : *m) {
        Acc& a = merged[key];
        a.sum += value;
        ++a.n;
      }
  }
  std::vector<MetricPoint> out;
  out.reserve(merged.size());
  for (auto& [key, a] : merged) {
    double v = Family(key.first).merge == MergeRule::kMean ? a.sum / a.n : a.sum;
    out.push_back({key.first, key.second, v});
  }
  // Families in the table's listing order (the engines' families follow the agent's ids, but
  // an exposition lists them as the documentation does); a family's series stay by labels.
  std::stable_sort(out.begin(), out.end(), [](const MetricPoint& a, const MetricPoint& b) {
    return ListingRank(a.id) < ListingRank(b.id);
  });
  return out;
}

double CounterTracker::Observe(const MetricPoint& reading, Clock::time_point now) {
  auto [it, inserted] = series_.try_emplace({reading.id, reading.labels});
  State& st = it->second;
  st.seen = now;
  if (inserted) {
    st.total = reading.value;
  } else if (reading.value >= st.last) {
    st.total += reading.value - st.last;
  } else {
    st.total += reading.value;
    ++resets_;
  }
  st.last = reading.value;
  return st.total;
}

bool CounterTracker::Tracks(const MetricPoint& p) const {
  return series_.contains({p.id, p.labels});
}

std::size_t CounterTracker::ForgetUnseenSince(Clock::time_point cutoff) {
  return std::erase_if(series_, [&](const auto& kv) { return kv.second.seen < cutoff; });
}

std::vector<MetricPoint> CounterTracker::Totals() const {
  std::vector<MetricPoint> out;
  out.reserve(series_.size());
  for (const auto& [key, st] : series_) out.push_back({key.first, key.second, st.total});
  return out;
}

ScrapeUpdate ScrapedSeries::Update(const std::vector<MetricPoint>& counters,
                                   std::vector<MetricPoint>* gauges, Clock::time_point now) {
  ScrapeUpdate u;
  const std::uint64_t resets_before = counters_.resets();
  // Series already kept first: they are seen now, so the expiry below spares them, and a full
  // target never refuses a series it has.
  std::vector<const MetricPoint*> fresh;
  for (const auto& p : counters) {
    if (counters_.Tracks(p))
      counters_.Observe(p, now);
    else
      fresh.push_back(&p);
  }
  u.expired = counters_.ForgetUnseenSince(now - limits_.stale_after);
  for (const MetricPoint* p : fresh) {
    if (counters_.size() >= limits_.max_series) {
      ++u.over_limit;
      continue;
    }
    counters_.Observe(*p, now);
  }
  u.resets = counters_.resets() - resets_before;
  const std::size_t room = limits_.max_series - std::min(limits_.max_series, counters_.size());
  if (gauges->size() > room) {
    u.over_limit += gauges->size() - room;
    gauges->resize(room);
  }
  gauges_ = gauges->size();
  return u;
}

}  // namespace infertel::metrics
