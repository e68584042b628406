#include "receiver/room_waiter.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "pipeline/room_bell.h"

namespace infertel::receiver::internal {
namespace {

using namespace std::chrono_literals;
using Clock = RoomWaiter::Clock;

// A trace sink whose saturation the test sets, with a bell the test rings (or not).
class BelledSink : public pipeline::TraceSink {
 public:
  void Submit(TracesRequest&&) noexcept override {}
  bool Saturated(std::size_t) const noexcept override { return saturated.load(); }
  pipeline::RoomBell* Room() noexcept override { return &bell; }
  std::atomic<bool> saturated{true};
  pipeline::RoomBell bell;
};

struct Fixture {
  BelledSink sink;
  ReceiverStats stats;
  Ingestor ingestor{ReceiverSinks{&sink, nullptr, nullptr}, &stats};
};

// One waiting request: `Resume()` is what the waiter calls, `when` says when it did.
struct Resumed {
  std::promise<Clock::time_point> promise;
  std::future<Clock::time_point> when = promise.get_future();
  std::function<void()> Resume() {
    return [this] { promise.set_value(Clock::now()); };
  }
};

// With a bell, the waiter does not look every millisecond: room that comes without a ring is
// found only by the fallback poll (10 s here), and a ring resumes the request at once.
TEST(RoomWaiterTest, ARingResumesAWaitingRequestAndNothingElseLooksEarly) {
  Fixture f;
  RoomWaiter waiter(&f.ingestor, Transport::kGrpc, 30s, /*fallback_poll=*/10s);
  Resumed r;
  auto& when = r.when;
  ASSERT_TRUE(waiter.Add(Signal::kTraces, 100, Clock::time_point::max(), r.Resume()));
  EXPECT_EQ(f.sink.bell.waiters(), 1u);  // counted in: a lane's ring reaches the waiter
  std::this_thread::sleep_for(50ms);     // the waiter has looked once and found no room
  f.sink.saturated = false;              // room, but no ring
  EXPECT_EQ(when.wait_for(300ms), std::future_status::timeout);
  const Clock::time_point rung = Clock::now();
  f.sink.bell.Ring();
  ASSERT_EQ(when.wait_for(5s), std::future_status::ready);
  EXPECT_LT(when.get() - rung, 2s);
  EXPECT_EQ(f.sink.bell.waiters(), 0u);  // counted out when resumed
  EXPECT_EQ(f.stats.at(Transport::kGrpc, Signal::kTraces).waited_requests.load(), 1u);
}

// A ring while the sink is still saturated resumes nothing; the request waits on.
TEST(RoomWaiterTest, ARingWithoutRoomResumesNothing) {
  Fixture f;
  RoomWaiter waiter(&f.ingestor, Transport::kHttp, 30s, /*fallback_poll=*/10s);
  Resumed r;
  auto& when = r.when;
  ASSERT_TRUE(waiter.Add(Signal::kTraces, 0, Clock::time_point::max(), r.Resume()));
  for (int i = 0; i < 5; ++i) f.sink.bell.Ring();
  EXPECT_EQ(when.wait_for(200ms), std::future_status::timeout);
  f.sink.saturated = false;
  f.sink.bell.Ring();
  EXPECT_EQ(when.wait_for(5s), std::future_status::ready);
}

// The end of a request's own wait is kept to, however long the fallback poll.
TEST(RoomWaiterTest, ARequestIsResumedAtItsDeadlineWithoutARing) {
  Fixture f;
  RoomWaiter waiter(&f.ingestor, Transport::kGrpc, 30s, /*fallback_poll=*/10s);
  Resumed r;
  auto& when = r.when;
  const Clock::time_point start = Clock::now();
  ASSERT_TRUE(waiter.Add(Signal::kTraces, 0, start + 150ms, r.Resume()));
  ASSERT_EQ(when.wait_for(5s), std::future_status::ready);
  const auto waited = when.get() - start;
  EXPECT_GE(waited, 150ms);
  EXPECT_LT(waited, 2s);
}

// A request added again after a resume (an HTTP request that found the room taken) is not
// counted as a second request that waited.
TEST(RoomWaiterTest, ARequestWaitingAgainIsCountedOnce) {
  Fixture f;
  f.sink.saturated = false;
  RoomWaiter waiter(&f.ingestor, Transport::kHttp, 30s);
  for (bool count : {true, false, false}) {
    Resumed r;
    auto& when = r.when;
    ASSERT_TRUE(waiter.Add(Signal::kTraces, 0, Clock::time_point::max(), r.Resume(), count));
    ASSERT_EQ(when.wait_for(5s), std::future_status::ready);
  }
  EXPECT_EQ(f.stats.at(Transport::kHttp, Signal::kTraces).waited_requests.load(), 1u);
}

// Stopping resumes what waits and stops listening: a later ring reaches nothing of the waiter.
TEST(RoomWaiterTest, StopResumesEverythingAndLeavesTheBell) {
  Fixture f;
  auto waiter = std::make_unique<RoomWaiter>(&f.ingestor, Transport::kGrpc, 30s, 10s);
  Resumed r;
  auto& when = r.when;
  ASSERT_TRUE(waiter->Add(Signal::kTraces, 0, Clock::time_point::max(), r.Resume()));
  waiter->Stop();
  EXPECT_EQ(when.wait_for(0s), std::future_status::ready);
  EXPECT_EQ(f.sink.bell.waiters(), 0u);
  waiter.reset();
  f.sink.bell.BeginWait();
  f.sink.bell.Ring();  // would call into the destroyed waiter (AddressSanitizer) if it listened
  f.sink.bell.EndWait();
}

}  // namespace
}  // namespace infertel::receiver::internal
