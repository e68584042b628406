#include "metrics/overview_history.h"

#include <cmath>

namespace infertel::metrics {
namespace {

// The increase of a cumulative figure; nullopt when it went down (the agent's series were
// reset, or the engine restarted): that step has no value rather than a wrong one.
template <typename T>
std::optional<double> Increase(T now, T before) {
  if (now < before) return std::nullopt;
  return static_cast<double>(now - before);
}

std::optional<Buckets> BucketIncrease(const Buckets& now, const Buckets& before) {
  Buckets d{};
  for (std::size_t i = 0; i < d.size(); ++i) {
    if (now[i] < before[i]) return std::nullopt;
    d[i] = now[i] - before[i];
  }
  return d;
}

}  // namespace

std::optional<double> BucketQuantile(const Buckets& b, double q) {
  std::uint64_t total = 0;
  for (auto n : b) total += n;
  if (total == 0) return std::nullopt;
  const double rank = q * static_cast<double>(total);
  std::uint64_t below = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (static_cast<double>(below + b[i]) < rank || b[i] == 0) {
      below += b[i];
      continue;
    }
    // The +Inf bucket has no upper bound: its observations are said to be at the last bound.
    if (i == kLatencyBounds.size()) return kLatencyBounds.back();
    const double lower = i == 0 ? 0.0 : kLatencyBounds[i - 1];
    const double upper = kLatencyBounds[i];
    const double within = (rank - static_cast<double>(below)) / static_cast<double>(b[i]);
    return lower + (upper - lower) * std::clamp(within, 0.0, 1.0);
  }
  return kLatencyBounds.back();
}

void OverviewHistory::CountRequest(std::string_view model, std::string_view tenant, bool error) {
  std::lock_guard lock(counts_mu_);
  auto it = counts_.find(std::pair<std::string_view, std::string_view>(model, tenant));
  if (it == counts_.end()) {
    if (counts_.size() >= max_series_) {  // its series would be dropped anyway
      counts_refused_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    it = counts_
             .emplace(std::make_pair(std::string(model), std::string(tenant)), std::make_pair(0, 0))
             .first;
  }
  ++it->second.first;
  if (error) ++it->second.second;
}

void OverviewHistory::AddRequestCounts(OverviewReading* reading) const {
  std::lock_guard lock(counts_mu_);
  for (const auto& [key, c] : counts_) {
    KeyTotals& t = reading->keys[key];
    t.requests = c.first;
    t.errors = c.second;
  }
}

void OverviewHistory::Add(Step* step, SeriesKey key, std::optional<double> value) {
  if (!value || !std::isfinite(*value)) return;
  auto it = ids_.find(key);
  if (it == ids_.end()) {
    if (ids_.size() >= max_series_) {
      ++dropped_;
      return;
    }
    it = ids_.emplace(std::move(key), static_cast<std::uint32_t>(keys_.size())).first;
    keys_.push_back(&it->first);
  }
  step->values.emplace_back(it->second, *value);
}

void OverviewHistory::AddKeySteps(Step* step, double seconds, const OverviewReading& now) {
  using M = OverviewMetric;
  const OverviewReading& before = previous_->second;
  for (const auto& [key, t] : now.keys) {
    auto prev_it = before.keys.find(key);
    const KeyTotals prev = prev_it == before.keys.end() ? KeyTotals{} : prev_it->second;
    auto add = [&](M m, std::optional<double> v) { Add(step, {m, key.first, key.second, {}}, v); };
    auto rate = [&](std::optional<double> d) -> std::optional<double> {
      if (!d) return d;
      return *d / seconds;
    };
    add(M::kRequestsPerSecond, rate(Increase(t.requests, prev.requests)));
    add(M::kErrorsPerSecond, rate(Increase(t.errors, prev.errors)));
    auto quantiles = [&](const Buckets& n, const Buckets& b, M p50) {
      auto d = BucketIncrease(n, b);
      if (!d) return;
      const auto first = static_cast<std::size_t>(p50);
      for (std::size_t i = 0; i < 3; ++i)
        add(static_cast<M>(first + i), BucketQuantile(*d, std::array{0.5, 0.9, 0.99}[i]));
    };
    quantiles(t.ttft, prev.ttft, M::kTtftP50);
    quantiles(t.itl, prev.itl, M::kItlP50);
    quantiles(t.e2e, prev.e2e, M::kE2eP50);
    const auto judged = Increase(t.slo_judged, prev.slo_judged);
    const auto met = Increase(t.slo_met, prev.slo_met);
    if (judged && met && *judged > 0) add(M::kSloAttainment, *met / *judged);
    if (t.slo_judged > 0)
      add(M::kGoodputTokensPerSecond, rate(Increase(t.goodput_tokens, prev.goodput_tokens)));
  }
}

void OverviewHistory::AddUpstreamSteps(Step* step, double seconds, const OverviewReading& now) {
  using M = OverviewMetric;
  const OverviewReading& before = previous_->second;
  for (const auto& [name, e] : now.upstreams) {
    auto add = [&](M m, std::optional<double> v) { Add(step, {m, {}, {}, name}, v); };
    auto prev = before.upstreams.find(name);
    const EngineState* p = prev == before.upstreams.end() ? nullptr : &prev->second;
    // A gauge as read, or a sum over scrapes divided by the scrapes of the step.
    auto state = [&](std::optional<double> EngineState::*f) -> std::optional<double> {
      if (!e.scrapes) return e.*f;
      if (p == nullptr || !p->scrapes || !(e.*f) || !(p->*f) || *e.scrapes <= *p->scrapes)
        return std::nullopt;
      auto d = Increase(*(e.*f), *(p->*f));
      if (!d) return d;
      return *d / (*e.scrapes - *p->scrapes);
    };
    add(M::kKvCacheUsage, state(&EngineState::kv_cache_usage));
    add(M::kRequestsRunning, state(&EngineState::running));
    add(M::kRequestsWaiting, state(&EngineState::waiting));
    if (e.preemptions_total && p != nullptr && p->preemptions_total) {
      auto d = Increase(*e.preemptions_total, *p->preemptions_total);
      if (d) add(M::kPreemptionsPerSecond, *d / seconds);
    }
  }
}

void OverviewHistory::Record(std::int64_t unix_ms, OverviewReading reading) {
  std::lock_guard lock(mu_);
  if (previous_ && unix_ms > previous_->first) {
    const double seconds = static_cast<double>(unix_ms - previous_->first) / 1000.0;
    Step step;
    step.unix_ms = unix_ms;
    step.values.reserve(keys_.size());
    AddKeySteps(&step, seconds, reading);
    AddUpstreamSteps(&step, seconds, reading);
    // An hour of steps is kept: each holds its values and not a vector's room to grow (up to
    // as much again), so that the history stays within steps x series x a value (ValueBytes).
    step.values.shrink_to_fit();
    steps_.push_back(std::move(step));
    while (steps_.size() > max_steps_) steps_.pop_front();
  }
  previous_.emplace(unix_ms, std::move(reading));
}

std::string OverviewHistory::Json(std::int64_t since_unix_ms, int step_seconds) const {
  std::lock_guard lock(mu_);
  std::vector<const Step*> steps;
  for (const Step& s : steps_)
    if (s.unix_ms >= since_unix_ms) steps.push_back(&s);
  // Series id → its value at each step (none where the step has none).
  std::map<std::uint32_t, std::vector<std::optional<double>>> table;
  for (std::size_t i = 0; i < steps.size(); ++i)
    for (const auto& [id, v] : steps[i]->values) {
      auto& row = table[id];
      if (row.empty()) row.resize(steps.size());
      row[i] = v;
    }
  std::vector<std::int64_t> times;
  for (const Step* step : steps) times.push_back(step->unix_ms);
  std::string out;
  AppendOverviewHead(&out, "agent", step_seconds, times);
  bool first = true;
  for (const auto& [id, values] : table) {
    const SeriesKey& k = *keys_[id];
    AppendOverviewSeries(&out, first, k.metric, k.model, k.tenant, k.upstream, values);
    first = false;
  }
  out += "]}";
  return out;
}

std::size_t OverviewHistory::ValueBytes() const {
  std::lock_guard lock(mu_);
  std::size_t n = 0;
  for (const Step& s : steps_) n += s.values.capacity() * sizeof(Step::Value);
  return n;
}

std::uint64_t OverviewHistory::dropped() const {
  std::lock_guard lock(mu_);
  return dropped_ + counts_refused_.load(std::memory_order_relaxed);
}

}  // namespace infertel::metrics
