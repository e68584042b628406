#include "pipeline/pacer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace infertel::pipeline {
namespace {

using namespace std::chrono_literals;

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

}  // namespace
}  // namespace infertel::pipeline
