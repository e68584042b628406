#include "pipeline/pacer.h"

#include <thread>

namespace infertel::pipeline {

bool Pacer::PauseAfter(Clock::duration worked, std::chrono::nanoseconds* pause) const noexcept {
  const std::uint64_t queued = queued_->load(std::memory_order_relaxed);
  if (ratio_ <= 0) {
    *pause = pause_;
    return queued < limit_;
  }
  const double fill = static_cast<double>(queued) / static_cast<double>(limit_);
  if (fill >= 0.5) return false;  // a backlog: the lane keeps the core
  *pause =
      std::chrono::duration_cast<std::chrono::nanoseconds>(worked * (ratio_ * (1.0 - 2.0 * fill)));
  return true;
}

void Pacer::Between() noexcept {
  if (queued_ == nullptr) return;
  const auto now = Clock::now();
  const auto worked = now - last_;
  if (worked < every_) return;
  last_ = now;
  std::chrono::nanoseconds pause{0};
  if (!PauseAfter(worked, &pause)) return;
  // A sleep lasts up to 50 µs longer than asked (the default timer slack): the turns' 20 µs are
  // 20–70 µs, about what the gateway needs for one request at load.
  std::this_thread::sleep_for(pause);
  ++pauses_;
  last_ = Clock::now();
}

}  // namespace infertel::pipeline
