#pragma once
// Clocks. Span timestamps are wall-clock nanoseconds since the Unix epoch (OTLP); durations
// are measured on the monotonic clock so that a wall-clock step cannot make them negative.

#include <chrono>
#include <cstdint>

namespace infertel {

std::uint64_t WallNanos();
std::uint64_t MonoNanos();

// A request's start, taken once on both clocks, so that later monotonic readings can be
// turned into wall-clock timestamps consistent with the start.
struct Stopwatch {
  std::uint64_t wall_start_ns = 0;
  std::uint64_t mono_start_ns = 0;

  static Stopwatch Start();
  // Wall-clock time of a monotonic reading taken after Start().
  std::uint64_t WallAt(std::uint64_t mono_ns) const {
    return wall_start_ns + (mono_ns - mono_start_ns);
  }
  std::uint64_t ElapsedNanos() const { return MonoNanos() - mono_start_ns; }
};

}  // namespace infertel
