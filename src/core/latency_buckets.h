#pragma once
// The bucket bounds of infertel's latency histograms (metrics/latency_histograms.h), in
// seconds: fine from a millisecond to a second, where inter-token gaps and prefills fall, and
// on to ten minutes, where long generations end. Here, below openai/ and metrics/, so that a
// stream's inter-token gaps are counted into these buckets as they arrive.

#include <algorithm>
#include <array>
#include <cstddef>

namespace infertel {

inline constexpr std::array<double, 28> kLatencyBounds = {
    0.001, 0.002, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5,
    0.75,  1,     1.5,   2,    3,    5,    7.5,  10,   20,  30,   60,  120, 300, 600};
// Buckets: one per bound (value <= bound) and the last for +Inf.
inline constexpr std::size_t kLatencyBuckets = kLatencyBounds.size() + 1;

// The bucket of `seconds`: the first whose bound is not below it (+Inf's for NaN too).
inline std::size_t LatencyBucket(double seconds) {
  return static_cast<std::size_t>(
      std::lower_bound(kLatencyBounds.begin(), kLatencyBounds.end(), seconds) -
      kLatencyBounds.begin());
}

}  // namespace infertel
