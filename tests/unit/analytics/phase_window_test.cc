#include "analytics/phase_window.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace infertel::analytics {
namespace phase_window_test {

constexpr std::uint64_t kS = 1'000'000'000;

// A request queued at `q` s, prefilled from `p0` to `p1` s, decoded until `d` s.
PhaseRecord Req(std::uint8_t id, double q, double p0, double p1, double d, std::int64_t prompt) {
  PhaseRecord r;
  r.trace[0] = id;
  r.span[0] = id;
  r.queued_ns = static_cast<std::uint64_t>(q * kS);
  r.prefill_start_ns = static_cast<std::uint64_t>(p0 * kS);
  r.prefill_end_ns = static_cast<std::uint64_t>(p1 * kS);
  r.decode_end_ns = static_cast<std::uint64_t>(d * kS);
  r.prompt_tokens = prompt;
  return r;
}

TEST(PhaseWindowTest, SumsThePrefillsThatRanDuringTheDecode) {
  PhaseWindow w;
  const PhaseRecord self = Req(1, 10, 10, 11, 20, 100);
  w.Add("up", self);
  w.Add("up", Req(2, 12, 12, 13, 14, 3000));     // inside the decode
  w.Add("up", Req(3, 19, 19.5, 21, 22, 500));    // starts before the decode ends
  w.Add("up", Req(4, 5, 5, 11.5, 12, 800));      // ends after the decode began
  w.Add("up", Req(5, 1, 1, 2, 30, 9000));        // prefilled before: not counted
  w.Add("up", Req(6, 21, 21, 22, 23, 9000));     // after: not counted
  w.Add("other", Req(7, 12, 12, 13, 14, 9000));  // another engine
  const PhaseOverlap o = w.Query("up", self);
  EXPECT_EQ(o.prefill_tokens, 3000 + 500 + 800);
  EXPECT_EQ(o.prefills, 3u);
  ASSERT_TRUE(o.largest);
  EXPECT_EQ(o.largest->span[0], 2);
}

TEST(PhaseWindowTest, CountsTheRequestsStillWaitingWhenOneWasQueued) {
  PhaseWindow w;
  const PhaseRecord self = Req(1, 10, 15, 16, 17, 100);
  w.Add("up", Req(2, 8, 12, 13, 14, 10));   // waiting at 10: ahead
  w.Add("up", Req(3, 9, 11, 12, 13, 10));   // waiting at 10: ahead
  w.Add("up", Req(4, 7, 9, 10, 11, 10));    // scheduled before 10: not
  w.Add("up", Req(5, 11, 12, 13, 14, 10));  // queued after: not ahead
  const PhaseOverlap o = w.Query("up", self);
  ASSERT_TRUE(o.requests_ahead);
  EXPECT_EQ(*o.requests_ahead, 2);
  PhaseRecord unknown = self;
  unknown.queued_ns = 0;
  EXPECT_FALSE(w.Query("up", unknown).requests_ahead);
}

TEST(PhaseWindowTest, AnUnknownEngineOrPhaseGivesNothing) {
  PhaseWindow w;
  EXPECT_EQ(w.Query("none", Req(1, 1, 1, 2, 3, 1)).prefill_tokens, 0);
  w.Add("up", Req(2, 1, 1, 2, 3, 50));
  PhaseRecord no_decode = Req(1, 1, 1, 2, 2, 1);  // an empty decode
  EXPECT_EQ(w.Query("up", no_decode).prefill_tokens, 0);
}

TEST(PhaseWindowTest, KeepsOnlyTheNewestPerEngineAndABoundOfEngines) {
  PhaseWindow w(/*per_engine=*/2, /*max_engines=*/1);
  const PhaseRecord self = Req(1, 0, 0, 1, 100, 1);
  w.Add("up", Req(2, 2, 2, 3, 4, 10));
  w.Add("up", Req(3, 2, 2, 3, 4, 20));
  w.Add("up", Req(4, 2, 2, 3, 4, 40));  // pushes out the first
  EXPECT_EQ(w.Query("up", self).prefill_tokens, 60);
  w.Add("second", Req(5, 2, 2, 3, 4, 10));
  EXPECT_EQ(w.engines_refused(), 1u);
  EXPECT_EQ(w.Query("second", self).prefill_tokens, 0);
}

TEST(PhaseWindowTest, ConcurrentAddsAndQueries) {
  PhaseWindow w(/*per_engine=*/64);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&w, t] {
      for (int i = 0; i < 2000; ++i) {
        w.Add("up", Req(static_cast<std::uint8_t>(t + 2), i, i, i + 1, i + 2, 1));
        (void)w.Query("up", Req(1, i, i, i + 1, i + 2, 1));
      }
    });
  }
  for (auto& th : threads) th.join();
  // Every record of the ring overlaps a decode that spans them all.
  EXPECT_EQ(w.Query("up", Req(1, 0, 0, 0.5, 1e6, 1)).prefills, 64u);
}

}  // namespace phase_window_test
}  // namespace infertel::analytics
