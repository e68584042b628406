#pragma once
// Lets an exporter whose work is long stretches of its own CPU (the store rendering and writing
// rows, SQLite committing them) give the core up between items, so that a gateway thread on
// the same core never waits long for it.
//
// Why: the agent's threads often share one core. Linux here ticks at 250 Hz and does not
// preempt kernel code, so a gateway thread preempted by such a stretch waits up to a 4 ms tick
// for the core, whatever its slice (docs/performance-history.md, "The store on the gateway's
// core"). A sched_yield() does not help: Linux's EEVDF scheduler only hands the core to a
// thread that is not ahead of its fair share, and a gateway that was just preempted usually
// is. A sleep takes the lane off the run queue, so that any runnable thread gets the core.
//
// Two rules, chosen by how many CPUs the agent may use (BatchOptions::pacing):
// - Turns (the default): every `every` of work a short `pause`, while fewer than
//   `backlog_items` wait behind the export in progress. Once a backlog builds the lane keeps
//   the core, so its queue never overflows because of the pauses. Cheap: with the store on a
//   saturated core, pausing until a 4,096-row batch waited instead of 512 rows cost about a
//   tenth of the agent's CPU per request. With a second CPU the lane's long turns mostly run
//   there, and this is all it needs.
// - In proportion (an agent allowed one CPU): after each `every` a pause of `ratio` times the
//   CPU the lane used meanwhile (its thread's CPU clock: time it spent preempted is not work)
//   while its queue is empty, less as the queue fills, none once it holds kPacerBacklog of its
//   bound. On one CPU a lane with a backlog of its own batch otherwise takes the core for
//   tick-long turns until the batch is done, and every request in flight waits each turn ("The
//   pinned tail, request by request"): in proportion, the lane uses at most 1 / (1 + ratio) of
//   the core while it keeps up, in turns of `every`. One that falls behind gets more of the
//   core as its queue grows, and all of it well before the queue's bound.

#include <atomic>
#include <chrono>
#include <cstdint>

#include "core/thread_name.h"

namespace infertel::pipeline {

enum class PaceRule { kTurns, kInProportion };

// In proportion: a turn of work between two pauses. At 100 µs the switches cost up to a quarter
// more of the lane's CPU per span at saturation; 400 µs cost none the bench could see, and the
// gateway waits at most that long (docs/performance-history.md).
inline constexpr std::chrono::microseconds kPacerStretch{400};
// In proportion: pause per unit of work with an empty queue, so that a lane keeping up takes at
// most a quarter of a busy core.
inline constexpr double kPacerRatio = 3.0;
// In proportion: the share of the queue's bound from which the lane no longer pauses (the
// pause shrinks to nothing on the way there). A quarter, the store lane's own batch: at half,
// a pinned agent's queue settled so high under the soak's bursts that it overflowed.
inline constexpr double kPacerBacklog = 0.25;

class Pacer {
 public:
  using Clock = std::chrono::steady_clock;

  // Never pauses.
  Pacer() = default;
  // Turns. `queued_items`: the lane's queue depth (outliving this pacer); pauses while it is
  // below `backlog_items`, for `pause`, at most once per `every` of work.
  Pacer(const std::atomic<std::uint64_t>* queued_items, std::uint64_t backlog_items,
        std::chrono::nanoseconds every = kShortSlice,
        std::chrono::nanoseconds pause = std::chrono::microseconds(20))
      : queued_(queued_items), limit_(backlog_items), every_(every), pause_(pause) {}
  // In proportion, against the queue's bound `capacity_items`.
  static Pacer InProportion(const std::atomic<std::uint64_t>* queued_items,
                            std::uint64_t capacity_items,
                            std::chrono::nanoseconds every = kPacerStretch,
                            double ratio = kPacerRatio) {
    Pacer p(queued_items, capacity_items == 0 ? 1 : capacity_items, every);
    p.ratio_ = ratio;
    return p;
  }

  // Call when a stretch of work starts: it is measured from here.
  void Start() noexcept {
    last_ = Clock::now();
    if (ratio_ > 0) cpu_last_ = ThreadCpuNanos();
  }
  // Call between items: pauses, by the pacer's rule, when `every` has passed since the last
  // pause or Start(). Costs a clock read otherwise.
  void Between() noexcept;

  bool enabled() const noexcept { return queued_ != nullptr; }
  PaceRule rule() const noexcept { return ratio_ > 0 ? PaceRule::kInProportion : PaceRule::kTurns; }
  // Pauses taken so far, for tests and benchmarks.
  std::uint64_t pauses() const noexcept { return pauses_; }

 private:
  // Whether to pause after `worked`, and how long.
  bool PauseAfter(Clock::duration worked, std::chrono::nanoseconds* pause) const noexcept;
  // The calling thread's CPU time (a system call: read once per stretch, not per item).
  static std::int64_t ThreadCpuNanos() noexcept;

  const std::atomic<std::uint64_t>* queued_ = nullptr;
  std::uint64_t limit_ = 0;  // turns: the backlog; in proportion: the queue's bound
  std::chrono::nanoseconds every_{0};
  std::chrono::nanoseconds pause_{0};
  double ratio_ = 0;  // in proportion when above 0
  Clock::time_point last_{};
  std::int64_t cpu_last_ = 0;  // in proportion: the thread's CPU time at the stretch's start
  std::uint64_t pauses_ = 0;
};

}  // namespace infertel::pipeline
