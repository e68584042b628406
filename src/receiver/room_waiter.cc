#include "receiver/room_waiter.h"

#include <algorithm>
#include <cstddef>
#include <utility>

#include "core/thread_name.h"

namespace infertel::receiver::internal {

RoomWaiter::RoomWaiter(Ingestor* ingestor, Transport transport, std::chrono::milliseconds wait)
    : ingestor_(ingestor), transport_(transport), wait_(wait) {
  entries_.reserve(kMaxWaiting);
  thread_ = std::thread([this] {
    NameThisThread("otlp-room-wait");
    Run();
  });
}

RoomWaiter::~RoomWaiter() { Stop(); }

bool RoomWaiter::Add(Signal signal, std::size_t bytes, Clock::time_point latest,
                     std::function<void()> resume) {
  {
    std::lock_guard lock(mu_);
    if (stopping_ || entries_.size() >= kMaxWaiting || bytes_ + bytes > kMaxWaitingBytes)
      return false;
    entries_.push_back({signal, bytes, std::min(Clock::now() + wait_, latest), std::move(resume)});
    bytes_ += bytes;
    ingestor_->CountWaiting(transport_, signal);
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
    // Resumed outside the lock: a resumed call decodes and submits its whole message. One call
    // per pass is resumed for room, and the pass is repeated at once after it: the room it
    // found is what it takes, so the next waiting call must look again rather than be resumed
    // only to find the sink saturated by the first and be refused.
    const Clock::time_point now = Clock::now();
    bool resumed_for_room = false;
    for (std::size_t i = 0; i < entries_.size();) {
      Entry& e = entries_[i];
      bool go = stopping_ || now >= e.deadline;
      if (!go && !resumed_for_room && !ingestor_->Saturated(e.signal)) go = resumed_for_room = true;
      if (go) {
        due.push_back(std::move(e.resume));
        bytes_ -= e.bytes;
        entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(i));  // oldest first
      } else {
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
    cv_.wait_for(lock, kRoomPoll, [this] { return stopping_; });
  }
}

}  // namespace infertel::receiver::internal
