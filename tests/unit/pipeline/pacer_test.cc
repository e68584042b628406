#include "pipeline/pacer.h"

#include <gtest/gtest.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace infertel::pipeline {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

TEST(PacerTest, ADefaultPacerNeverPauses) {
  Pacer p;
  EXPECT_FALSE(p.enabled());
  p.Start();
  std::this_thread::sleep_for(1ms);
  for (int i = 0; i < 10; ++i) p.Between();
  EXPECT_EQ(p.pauses(), 0u);
}

TEST(PacerTest, PausesOncePerIntervalWhileTheQueueIsShort) {
  std::atomic<std::uint64_t> queued{3};
  Pacer p(&queued, 4, 2ms);
  EXPECT_TRUE(p.enabled());
  p.Start();
  p.Between();  // well inside the first interval
  EXPECT_EQ(p.pauses(), 0u);
  std::this_thread::sleep_for(3ms);
  p.Between();
  EXPECT_EQ(p.pauses(), 1u);
  p.Between();  // the interval starts again after the pause
  EXPECT_EQ(p.pauses(), 1u);
  std::this_thread::sleep_for(3ms);
  p.Between();
  EXPECT_EQ(p.pauses(), 2u);
}

TEST(PacerTest, KeepsTheCoreWhileABacklogWaits) {
  std::atomic<std::uint64_t> queued{4};  // one full batch waiting
  Pacer p(&queued, 4, 0ns);
  p.Start();
  for (int i = 0; i < 10; ++i) p.Between();
  EXPECT_EQ(p.pauses(), 0u);
  queued = 0;  // the lane caught up
  for (int i = 0; i < 10; ++i) p.Between();
  EXPECT_EQ(p.pauses(), 10u);
}

TEST(PacerTest, PausesInTurnsUnlessMadeInProportion) {
  std::atomic<std::uint64_t> queued{0};
  EXPECT_EQ(Pacer(&queued, 4).rule(), PaceRule::kTurns);
  EXPECT_EQ(Pacer::InProportion(&queued, 8).rule(), PaceRule::kInProportion);
}

// In turns a pause is short whatever the work before it: 20 us asked.
TEST(PacerTest, InTurnsAPauseIsShortWhateverTheWork) {
  std::atomic<std::uint64_t> queued{0};
  Pacer p(&queued, 4, 2ms);
  p.Start();
  std::this_thread::sleep_for(10ms);  // a stretch of "work"
  const auto before = Clock::now();
  p.Between();
  EXPECT_EQ(p.pauses(), 1u);
  EXPECT_LT(Clock::now() - before, 10ms);  // in proportion it would be 30 ms
}

// Work: this thread's CPU clock advanced by `d` (a busy loop, however long the machine makes it
// take).
void Spin(std::chrono::nanoseconds d) {
  auto cpu = [] {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
  };
  const auto until = cpu() + d;
  while (cpu() < until) {
  }
}

// In proportion the pause is the CPU used since the last one times the ratio: a lane that keeps
// up works at most 1 / (1 + ratio) of the time.
TEST(PacerTest, InProportionPausesInProportionToTheWork) {
  std::atomic<std::uint64_t> queued{0};
  Pacer p = Pacer::InProportion(&queued, 16, 4ms, 3.0);
  p.Start();
  p.Between();  // well inside the first stretch
  EXPECT_EQ(p.pauses(), 0u);
  Spin(5ms);
  const auto before = Clock::now();
  p.Between();
  EXPECT_EQ(p.pauses(), 1u);
  EXPECT_GE(Clock::now() - before, 15ms);  // at least 3 x 5 ms
}

// Time the lane spent off the CPU (preempted, or here asleep) is not work: no long pause for it.
TEST(PacerTest, InProportionTimeOffTheCpuIsNotWork) {
  std::atomic<std::uint64_t> queued{0};
  Pacer p = Pacer::InProportion(&queued, 16, 4ms, 3.0);
  p.Start();
  std::this_thread::sleep_for(20ms);
  const auto before = Clock::now();
  p.Between();
  EXPECT_EQ(p.pauses(), 1u);
  EXPECT_LT(Clock::now() - before, 20ms) << "not 3 x the 20 ms asleep";
}

// Less as the queue fills: an eighth full (half of kPacerBacklog), half the ratio.
TEST(PacerTest, InProportionPausesLessAsTheQueueFills) {
  std::atomic<std::uint64_t> queued{2};
  Pacer p = Pacer::InProportion(&queued, 16, 4ms, 4.0);
  p.Start();
  Spin(5ms);
  const auto before = Clock::now();
  p.Between();
  const auto paused = Clock::now() - before;
  EXPECT_EQ(p.pauses(), 1u);
  EXPECT_GE(paused, 10ms - 1ms);  // 4 x (1 - (2/16) / (1/4)) = 2 times the 5 ms of work
  EXPECT_LT(paused, 20ms) << "not the full ratio's 4 times";
}

TEST(PacerTest, InProportionKeepsTheCoreOnceTheQueueHoldsAQuarterOfItsBound) {
  std::atomic<std::uint64_t> queued{4};  // a quarter of the bound
  Pacer p = Pacer::InProportion(&queued, 16, 0ns);
  p.Start();
  for (int i = 0; i < 10; ++i) p.Between();
  EXPECT_EQ(p.pauses(), 0u);
  queued = 3;  // below
  for (int i = 0; i < 10; ++i) p.Between();
  EXPECT_EQ(p.pauses(), 10u);
}

}  // namespace
}  // namespace infertel::pipeline
