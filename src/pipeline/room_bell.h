#pragma once
// Rung by a queue each time it frees room (an export lane took a batch out of its queue), so
// that what waits for room (OTLP requests that found the pipeline saturated, receiver/
// room_waiter.h) looks again at once instead of every millisecond.
//
// Why: a request that finds the export queues three-quarters full waits for room rather than
// being refused. Polling for it every millisecond cost the OTLP/HTTP receiver about a thousand
// wake-ups a second under a steady overload, a fifth to a third of its CPU per span
// (docs/performance-history.md, "Waking requests that wait for room"). Room only comes when a lane
// takes a batch, a few hundred times a second at most, so the lane says so.
//
// Cost to the lane: a fence and a load per batch while nothing waits; a listener's work (a
// notify) per batch while something does. Listeners must not block and must not ring.

#include <atomic>
#include <cstddef>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

namespace infertel::pipeline {

class RoomBell {
 public:
  using Listener = std::function<void()>;

  RoomBell() = default;
  RoomBell(const RoomBell&) = delete;
  RoomBell& operator=(const RoomBell&) = delete;

  // Adds a listener, run on the ringing thread under the bell's mutex; returns its handle for
  // Unlisten. A listener must be removed before what it calls goes away.
  std::size_t Listen(Listener listener);
  void Unlisten(std::size_t handle);

  // A waiter counts itself in before it checks for room the first time, and out when it stops
  // waiting. While none is counted, Ring() runs no listener. BeginWait() orders the count
  // before the caller's next reads of the queue's depth, and Ring() orders the queue's new
  // depth before its read of the count, so a waiter that still saw a full queue is rung.
  void BeginWait() noexcept;
  void EndWait() noexcept { waiters_.fetch_sub(1, std::memory_order_relaxed); }

  // Called by the queue after it freed room, outside its own locks.
  void Ring() noexcept;

  std::size_t waiters() const noexcept { return waiters_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::size_t> waiters_{0};
  std::mutex mu_;  // guards listeners_ and next_
  std::vector<std::pair<std::size_t, Listener>> listeners_;
  std::size_t next_ = 1;
};

}  // namespace infertel::pipeline
