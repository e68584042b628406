#include "core/clock.h"

namespace infertel {

std::uint64_t WallNanos() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count());
}

std::uint64_t MonoNanos() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

Stopwatch Stopwatch::Start() { return Stopwatch{WallNanos(), MonoNanos()}; }

}  // namespace infertel
