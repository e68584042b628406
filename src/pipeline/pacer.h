#pragma once
// Lets an exporter whose work is long stretches of its own CPU (the store rendering and writing
// rows) give the core up between items while its lane keeps up.
//
// Why: the agent's threads often share one core. Linux here ticks at 250 Hz and does not
// preempt kernel code, so a gateway thread that was preempted by such a stretch can wait up to
// a 4 ms tick for the core, whatever its slice (docs/performance.md, "The store on the
// gateway's core"). A lane that yields every kShortSlice hands the core back within that.
// It yields only while fewer than one batch waits behind the export in progress: once a
// backlog builds it keeps the core, so yielding never costs the lane its share of a saturated
// core, and its queue never overflows because of it.

#include <atomic>
#include <chrono>
#include <cstdint>

#include "core/thread_name.h"

namespace infertel::pipeline {

class Pacer {
 public:
  using Clock = std::chrono::steady_clock;

  // Never yields.
  Pacer() = default;
  // `queued_items`: the lane's queue depth (outliving this pacer); yields while it is below
  // `backlog_items`, at most once per `every` of work.
  Pacer(const std::atomic<std::uint64_t>* queued_items, std::uint64_t backlog_items,
        std::chrono::nanoseconds every = kShortSlice)
      : queued_(queued_items), backlog_(backlog_items), every_(every) {}

  // Call when an export starts: its first stretch is measured from here.
  void Start() noexcept { last_ = Clock::now(); }
  // Call between items: gives the core up (sched_yield) when `every` has passed since the last
  // yield or Start() and the queue is short. Costs a clock read otherwise.
  void Between() noexcept;

  bool enabled() const noexcept { return queued_ != nullptr; }
  // Yields taken so far, for tests and benchmarks.
  std::uint64_t yields() const noexcept { return yields_; }

 private:
  const std::atomic<std::uint64_t>* queued_ = nullptr;
  std::uint64_t backlog_ = 0;
  std::chrono::nanoseconds every_{0};
  Clock::time_point last_{};
  std::uint64_t yields_ = 0;
};

}  // namespace infertel::pipeline
