#include "pipeline/pacer.h"

#include <time.h>

#include <thread>

namespace infertel::pipeline {

std::int64_t Pacer::ThreadCpuNanos() noexcept {
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

bool Pacer::PauseAfter(Clock::duration worked, std::chrono::nanoseconds* pause) const noexcept {
  const std::uint64_t queued = queued_->load(std::memory_order_relaxed);
  if (ratio_ <= 0) {
    *pause = pause_;
    return queued < limit_;
  }
  const double fill = static_cast<double>(queued) / static_cast<double>(limit_);
  if (fill >= kPacerBacklog) return false;  // a backlog: the lane keeps the core
  *pause = std::chrono::duration_cast<std::chrono::nanoseconds>(
      worked * (ratio_ * (1.0 - fill / kPacerBacklog)));
  return true;
}

void Pacer::Between() noexcept {
  if (queued_ == nullptr) return;
  const auto now = Clock::now();
  auto worked = now - last_;
  if (worked < every_) return;
  last_ = now;
  if (ratio_ > 0) {
    // In proportion to the CPU the lane used, not the time that passed: a lane preempted by
    // the gateway meanwhile has not worked, and pausing for that time too left its queue
    // filling (the soak, pinned: spans dropped for want of room).
    const std::int64_t cpu = ThreadCpuNanos();
    worked = std::chrono::nanoseconds(cpu - cpu_last_);
    cpu_last_ = cpu;
  }
  std::chrono::nanoseconds pause{0};
  if (!PauseAfter(worked, &pause)) return;
  // A sleep lasts up to 50 µs longer than asked (the default timer slack): the turns' 20 µs are
  // 20–70 µs, about what the gateway needs for one request at load.
  std::this_thread::sleep_for(pause);
  ++pauses_;
  last_ = Clock::now();
}

}  // namespace infertel::pipeline
