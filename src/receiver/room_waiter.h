#pragma once
// Holds OTLP requests that found their signal's sink saturated until it has room or their wait
// is over (OtlpReceiverOptions::saturated_wait), then resumes them: gRPC calls, resumed here
// (decoded and answered on this thread), and OTLP/HTTP requests, whose connection coroutine
// is resumed on its own executor with the body still unread.
//
// Why a thread of its own: a callback-API handler must not block gRPC's executor, and a
// held call costs only its place here. The thread looks again when the sink's RoomBell rings
// (an export lane took a batch: pipeline/room_bell.h), and otherwise every kRoomPoll for a
// sink without a bell, or every `fallback_poll` for one with a bell (a safety net: nothing
// but a lane frees room). Looking every millisecond instead cost the HTTP receiver about a
// thousand wake-ups a second under a steady overload (docs/performance-history.md).

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "pipeline/room_bell.h"
#include "receiver/ingest.h"

namespace infertel::receiver::internal {

// How often a waiting request checks for room again when its sink has no RoomBell, and when
// it has one.
inline constexpr std::chrono::milliseconds kRoomPoll{1};
inline constexpr std::chrono::milliseconds kRoomPollWithBell{20};
// At most this many requests per transport wait at once, holding at most kMaxWaitingBytes of
// gRPC messages; a request beyond either is refused at once.
inline constexpr std::size_t kMaxWaiting = 16;
inline constexpr std::size_t kMaxWaitingBytes = 32u << 20;

class RoomWaiter {
 public:
  using Clock = std::chrono::steady_clock;

  // `ingestor` and its sinks must outlive the waiter; requests that wait are counted there for
  // `transport`. `wait` > 0. The waiter listens to every signal's RoomBell from here on.
  RoomWaiter(Ingestor* ingestor, Transport transport, std::chrono::milliseconds wait,
             std::chrono::milliseconds fallback_poll = kRoomPollWithBell);
  ~RoomWaiter();  // Stop()
  RoomWaiter(const RoomWaiter&) = delete;
  RoomWaiter& operator=(const RoomWaiter&) = delete;

  // Holds a request of `bytes` for `signal`, counted as waiting before anything can resume it;
  // `resume` runs exactly once, on the waiter's thread, when the sink has room, the wait is over,
  // or Stop() is called (the caller then decides with Ingestor::Throttle as usual). False, and
  // `resume` dropped, when the waiter is full or stopped: the caller goes on at once. `latest`:
  // when the request's own wait must end at the latest (a gRPC call's deadline, less time to
  // answer); the wait ends at the earlier of it and the waiter's `wait`. `count`: false for a
  // request waiting again, already counted as one that waited.
  bool Add(Signal signal, std::size_t bytes, Clock::time_point latest, std::function<void()> resume,
           bool count = true);
  // Resumes everything waiting, stops listening to the bells and joins the thread; Add()
  // returns false afterwards.
  void Stop();

 private:
  struct Entry {
    Signal signal;
    std::size_t bytes;
    Clock::time_point deadline;
    std::function<void()> resume;
    pipeline::RoomBell* bell;  // the signal's, counted in while this waits; may be null
  };
  void Run();
  void Rung();  // a bell's listener
  // Takes entry `i` out, counts it out of its bell and returns its `resume`; with mu_ held.
  std::function<void()> Remove(std::size_t i);

  Ingestor* ingestor_;
  const Transport transport_;
  const std::chrono::milliseconds wait_;
  const std::chrono::milliseconds fallback_poll_;
  std::array<pipeline::RoomBell*, 3> bells_{};  // by Signal; null: that sink has none
  std::array<std::size_t, 3> listening_{};      // the handles of our listeners
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Entry> entries_;  // guarded by mu_
  std::size_t bytes_ = 0;       // guarded by mu_
  bool rung_ = false;           // guarded by mu_: a bell rang since the last look
  bool stopping_ = false;       // guarded by mu_
  std::thread thread_;
};

}  // namespace infertel::receiver::internal
