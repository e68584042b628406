#pragma once
// infertel's own latency distributions, beside the seed's cumulative counters (which stay as
// they are): histograms of time to first token, every inter-token gap, time per output token
// and request duration (measured at the gateway), and of queue, prefill and decode time (from
// the engine's own request spans). Labelled `model`, `tenant` and `engine_index` (where known);
// each bucket keeps the trace id of its latest observation as an exemplar, so that a slow bucket
// leads to a trace. Buckets: core/latency_buckets.h.
//
// Bounded: at most max_series series in all; an observation for a new series beyond it is
// dropped and counted. Thread-safe: one mutex, held for one exchange's observations.

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>

#include "core/ids.h"
#include "core/latency_buckets.h"
#include "core/telemetry.h"
#include "openai/exchange.h"

namespace infertel::metrics {

enum class Latency : std::uint8_t {
  kTimeToFirstToken,
  kInterToken,
  kTimePerOutputToken,
  kRequestDuration,
  kQueueTime,
  kPrefillTime,
  kDecodeTime,
  kCount,
};
inline constexpr std::size_t kLatencyCount = static_cast<std::size_t>(Latency::kCount);

struct LatencyFamily {
  Latency id;
  std::string_view name;  // exact, as exposed (Prometheus and OTLP)
  std::string_view help;
};
std::span<const LatencyFamily> AllLatencyFamilies();

// The labels of a series. Empty engine_index: not known.
struct LatencyLabels {
  std::string model;
  std::string tenant;  // empty: the request had none (the label is left out)
  std::string engine_index;
  auto operator<=>(const LatencyLabels&) const = default;
};

class LatencyHistograms {
 public:
  explicit LatencyHistograms(std::size_t max_series = 4096) : max_series_(max_series) {}

  struct Observation {
    Latency id;
    double seconds;
  };
  // One exchange's or engine span's observations, and optionally a stream's inter-token gaps
  // (already counted into buckets), with the trace they came from.
  void Observe(const LatencyLabels& labels, std::span<const Observation> observations,
               const openai::DeltaTimes* gaps, const TraceId& trace, std::uint64_t now_unix_nano);

  // Prometheus text format 0.0.4: classic histograms (`_bucket{le}`, `_sum`, `_count`); with
  // `exemplars`, each bucket line ends in its exemplar as OpenMetrics writes it
  // (` # {trace_id="…"} VALUE TIMESTAMP`), for an OpenMetrics exposition (exposition.h).
  std::string RenderPrometheus(bool exemplars = false) const;
  // Appends one OTLP cumulative histogram per family present, with the exemplars, to `sm`.
  void AppendOtlp(otlp_metrics::ScopeMetrics* sm, std::uint64_t start_unix_nano,
                  std::uint64_t now_unix_nano) const;

  std::uint64_t dropped() const;  // observations of series beyond the bound

  // Family `id`'s bucket counts (not cumulative) per (model, tenant), summed over the engines.
  using BucketCounts = std::array<std::uint64_t, kLatencyBuckets>;
  std::map<std::pair<std::string, std::string>, BucketCounts> Totals(Latency id) const;

 private:
  struct Exemplar {
    TraceId trace{};
    double value = 0;
    std::uint64_t unix_nano = 0;  // 0: none
  };
  struct Series {
    std::array<std::uint64_t, kLatencyBuckets> counts{};  // per bucket, not cumulative
    std::array<Exemplar, kLatencyBuckets> exemplars{};
    double sum = 0;
    std::uint64_t count = 0;
  };
  using Key = std::tuple<Latency, LatencyLabels>;
  Series* Find(const Key& key);  // mu_ held; nullptr past the bound

  const std::size_t max_series_;
  mutable std::mutex mu_;
  std::map<Key, Series> series_;  // ordered: families together, for the exposition
  std::uint64_t dropped_ = 0;
};

}  // namespace infertel::metrics
