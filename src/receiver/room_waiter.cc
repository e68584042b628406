#include "receiver/room_waiter.h"

#include <algorithm>
#include <cstddef>
#include <utility>

#include "core/thread_name.h"

namespace infertel::receiver::internal {

namespace {
constexpr Signal kSignals[] = {Signal::kTraces, Signal::kLogs, Signal::kMetrics};
}  // namespace

RoomWaiter::RoomWaiter(Ingestor* ingestor, Transport transport, std::chrono::milliseconds wait,
                       std::chrono::milliseconds fallback_poll)
    : ingestor_(ingestor), transport_(transport), wait_(wait), fallback_poll_(fallback_poll) {
  entries_.reserve(kMaxWaiting);
  for (Signal s : kSignals) {
    const auto i = static_cast<std::size_t>(s);
    bells_[i] = ingestor_->Room(s);
    // Two signals may share one sink's bell (never in the agent; possible in a test): one
    // listener is enough.
    const bool seen = std::find(bells_.begin(), bells_.begin() + static_cast<std::ptrdiff_t>(i),
                                bells_[i]) != bells_.begin() + static_cast<std::ptrdiff_t>(i);
    if (bells_[i] != nullptr && !seen) listening_[i] = bells_[i]->Listen([this] { Rung(); });
  }
  thread_ = std::thread([this] {
    NameThisThread("otlp-room-wait");
    Run();
  });
}

RoomWaiter::~RoomWaiter() { Stop(); }

bool RoomWaiter::Add(Signal signal, std::size_t bytes, Clock::time_point latest,
                     std::function<void()> resume, bool count) {
  {
    std::lock_guard lock(mu_);
    if (stopping_ || entries_.size() >= kMaxWaiting || bytes_ + bytes > kMaxWaitingBytes)
      return false;
    pipeline::RoomBell* bell = bells_[static_cast<std::size_t>(signal)];
    // Counted in before the thread's first look at the sink: room made after that look rings.
    if (bell != nullptr) bell->BeginWait();
    entries_.push_back(
        {signal, bytes, std::min(Clock::now() + wait_, latest), std::move(resume), bell});
    bytes_ += bytes;
    if (count) ingestor_->CountWaiting(transport_, signal);
  }
  cv_.notify_one();
  return true;
}

void RoomWaiter::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
  // After the join: no entry is left counted in, and a lane ringing now finds no listener of
  // ours once Unlisten returns.
  for (std::size_t i = 0; i < bells_.size(); ++i)
    if (listening_[i] != 0) bells_[i]->Unlisten(listening_[i]);
}

void RoomWaiter::Rung() {
  {
    std::lock_guard lock(mu_);
    rung_ = true;
  }
  cv_.notify_one();
}

std::function<void()> RoomWaiter::Remove(std::size_t i) {
  Entry& e = entries_[i];
  std::function<void()> resume = std::move(e.resume);
  bytes_ -= e.bytes;
  if (e.bell != nullptr) e.bell->EndWait();
  entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(i));  // oldest first
  return resume;
}

void RoomWaiter::Run() {
  std::vector<std::function<void()>> due;
  std::unique_lock lock(mu_);
  for (;;) {
    if (entries_.empty()) {
      if (stopping_) return;
      cv_.wait(lock, [this] { return stopping_ || !entries_.empty(); });
      continue;
    }
    // Resumed outside the lock: a resumed gRPC call decodes and submits its whole message. One
    // call per pass is resumed for room, and the pass is repeated at once after it: the room it
    // found is what it takes, so the next waiting call must look again rather than be resumed
    // only to find the sink saturated by the first and be refused. (A resumed HTTP request
    // reads its body after this pass, so the next one may find the same room: each looks
    // again on its own thread, and waits again if the room is gone.)
    rung_ = false;
    const Clock::time_point now = Clock::now();
    bool resumed_for_room = false;
    Clock::time_point next = Clock::time_point::max();
    for (std::size_t i = 0; i < entries_.size();) {
      Entry& e = entries_[i];
      bool go = stopping_ || now >= e.deadline;
      if (!go && !resumed_for_room && !ingestor_->Saturated(e.signal)) go = resumed_for_room = true;
      if (go) {
        due.push_back(Remove(i));
      } else {
        next = std::min({next, e.deadline, now + (e.bell != nullptr ? fallback_poll_ : kRoomPoll)});
        ++i;
      }
    }
    if (!due.empty()) {
      lock.unlock();
      for (auto& resume : due) resume();
      due.clear();
      lock.lock();
      continue;
    }
    cv_.wait_until(lock, next, [this] { return stopping_ || rung_; });
  }
}

}  // namespace infertel::receiver::internal
