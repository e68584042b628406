#include "pipeline/room_bell.h"

#include <algorithm>
#include <utility>

namespace infertel::pipeline {

std::size_t RoomBell::Listen(Listener listener) {
  std::lock_guard lock(mu_);
  const std::size_t handle = next_++;
  listeners_.emplace_back(handle, std::move(listener));
  return handle;
}

void RoomBell::Unlisten(std::size_t handle) {
  std::lock_guard lock(mu_);
  std::erase_if(listeners_, [handle](const auto& l) { return l.first == handle; });
}

void RoomBell::BeginWait() noexcept {
  waiters_.fetch_add(1, std::memory_order_relaxed);
  // Pairs with the fence in Ring(): either the ringing lane sees this waiter, or this waiter's
  // next look at the queue sees the room that lane made.
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void RoomBell::Ring() noexcept {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (waiters_.load(std::memory_order_relaxed) == 0) return;
  std::lock_guard lock(mu_);
  for (const auto& [handle, listener] : listeners_) listener();
}

}  // namespace infertel::pipeline
