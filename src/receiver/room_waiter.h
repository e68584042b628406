#pragma once
// Holds gRPC export calls that found their signal's sink saturated until it has room or their
// wait is over (OtlpReceiverOptions::saturated_wait), then resumes them; the HTTP front end
// waits the same way inside its connection coroutine.
//
// Why a thread of its own: a callback-API handler must not block gRPC's executor, and the
// call's message has already arrived, so a held call costs only its place here. One thread
// checks every waiting call every kRoomPoll: a saturated pipeline drains in milliseconds, and a
// notification from the export lanes would put a cross-thread signal on their hot path for a
// state that only matters under overload.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "receiver/ingest.h"

namespace infertel::receiver::internal {

// How often a waiting request checks for room again.
inline constexpr std::chrono::milliseconds kRoomPoll{1};
// At most this many requests per transport wait at once, holding at most kMaxWaitingBytes of
// gRPC messages; a request beyond either is refused at once.
inline constexpr std::size_t kMaxWaiting = 16;
inline constexpr std::size_t kMaxWaitingBytes = 32u << 20;

class RoomWaiter {
 public:
  using Clock = std::chrono::steady_clock;

  // `ingestor` must outlive the waiter; requests that wait are counted there for `transport`.
  // `wait` > 0.
  RoomWaiter(Ingestor* ingestor, Transport transport, std::chrono::milliseconds wait);
  ~RoomWaiter();  // Stop()
  RoomWaiter(const RoomWaiter&) = delete;
  RoomWaiter& operator=(const RoomWaiter&) = delete;

  // Holds a request of `bytes` for `signal`, counted as waiting before anything can resume it;
  // `resume` runs exactly once, on the waiter's thread, when the sink has room, the wait is over,
  // or Stop() is called (the caller then decides with Ingestor::Throttle as usual). False, and
  // `resume` dropped, when the waiter is full or stopped: the caller goes on at once. `latest`:
  // when the request's own wait must end at the latest (a gRPC call's deadline, less time to
  // answer); the wait ends at the earlier of it and the waiter's `wait`.
  bool Add(Signal signal, std::size_t bytes, Clock::time_point latest,
           std::function<void()> resume);
  // Resumes everything waiting and joins the thread; Add() returns false afterwards.
  void Stop();

 private:
  struct Entry {
    Signal signal;
    std::size_t bytes;
    Clock::time_point deadline;
    std::function<void()> resume;
  };
  void Run();

  Ingestor* ingestor_;
  const Transport transport_;
  const std::chrono::milliseconds wait_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Entry> entries_;  // guarded by mu_
  std::size_t bytes_ = 0;       // guarded by mu_
  bool stopping_ = false;       // guarded by mu_
  std::thread thread_;
};

}  // namespace infertel::receiver::internal
