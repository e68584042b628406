#pragma once
// Lets an exporter whose work is long stretches of its own CPU (the store rendering and writing
// rows, SQLite committing them) give the core up between items while its lane keeps up.
//
// Why: the agent's threads often share one core. Linux here ticks at 250 Hz and does not
// preempt kernel code, so a gateway thread preempted by such a stretch waited up to a 4 ms
// tick for the core, whatever its slice (docs/performance-history.md, "The store on the gateway's
// core"). Every `every` of work the pacer pauses the lane for `pause`: a short sleep, which
// takes the lane off the run queue so that any runnable thread gets the core. A
// sched_yield() does not do that: Linux's EEVDF scheduler only hands the core to a thread
// that is not ahead of its fair share, and a gateway that was just preempted usually is, so
// the lane ran on (measured: store stretches of up to 3.3 ms with yields, none above 0.9 ms
// with pauses).
// It pauses only while fewer than `backlog_items` wait behind the export in progress: once a
// backlog builds it keeps the core, so pausing never costs the lane its share of a saturated
// core, and its queue never overflows because of it. Each pause still costs a sleep and two
// switches: with the store on a saturated core, pausing until a 4,096-row batch waited instead
// of 512 rows cost about a tenth of the agent's CPU per request (docs/performance-history.md).

#include <atomic>
#include <chrono>
#include <cstdint>

#include "core/thread_name.h"

namespace infertel::pipeline {

class Pacer {
 public:
  using Clock = std::chrono::steady_clock;

  // Never pauses.
  Pacer() = default;
  // `queued_items`: the lane's queue depth (outliving this pacer); pauses while it is below
  // `backlog_items`, for `pause`, at most once per `every` of work.
  Pacer(const std::atomic<std::uint64_t>* queued_items, std::uint64_t backlog_items,
        std::chrono::nanoseconds every = kShortSlice,
        std::chrono::nanoseconds pause = std::chrono::microseconds(20))
      : queued_(queued_items), backlog_(backlog_items), every_(every), pause_(pause) {}

  // Call when an export starts: its first stretch is measured from here.
  void Start() noexcept { last_ = Clock::now(); }
  // Call between items: pauses when `every` has passed since the last pause or Start() and
  // the queue is short. Costs a clock read otherwise.
  void Between() noexcept;

  bool enabled() const noexcept { return queued_ != nullptr; }
  // Pauses taken so far, for tests and benchmarks.
  std::uint64_t pauses() const noexcept { return pauses_; }

 private:
  const std::atomic<std::uint64_t>* queued_ = nullptr;
  std::uint64_t backlog_ = 0;
  std::chrono::nanoseconds every_{0};
  std::chrono::nanoseconds pause_{0};
  Clock::time_point last_{};
  std::uint64_t pauses_ = 0;
};

}  // namespace infertel::pipeline
