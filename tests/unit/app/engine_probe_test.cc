#include "app/engine_probe.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace infertel {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A fake engine: answers or not, as the test says; records when it was asked.
struct FakeEngine {
  std::mutex mu;
  bool up = false;
  std::vector<Clock::time_point> asked;
  int answered = 0;

  bool Read(std::string* error) {
    std::lock_guard l(mu);
    asked.push_back(Clock::now());
    if (!up) {
      *error = "connection refused";
      return false;
    }
    ++answered;
    return true;
  }
  std::size_t Asked() {
    std::lock_guard l(mu);
    return asked.size();
  }
  int Answered() {
    std::lock_guard l(mu);
    return answered;
  }
  void Set(bool u) {
    std::lock_guard l(mu);
    up = u;
  }
};

template <typename Pred>
bool Eventually(Pred pred, std::chrono::milliseconds limit = 3000ms) {
  const auto end = Clock::now() + limit;
  while (Clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(1ms);
  }
  return pred();
}

// An engine that starts long after the agent is still read: the probe does not give up.
TEST(EngineProbeTest, KeepsAskingUntilTheEngineFirstAnswers) {
  FakeEngine engine;
  EngineProbe probe("probe-test", "up", "a fact", {5ms, 1h, 3},
                    [&](std::string* e) { return engine.Read(e); });
  ASSERT_TRUE(Eventually([&] { return engine.Asked() >= 20; }));  // well past warn_after
  EXPECT_EQ(engine.Answered(), 0);
  engine.Set(true);
  ASSERT_TRUE(Eventually([&] { return engine.Answered() == 1; }));
  // Answered: the next ask is a recheck, an hour away.
  const std::size_t asked = engine.Asked();
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(engine.Asked(), asked);
}

// After the first answer the fact is read again every `recheck`; while the engine is away
// (restarting) every `retry`, and its answer after the restart is read.
TEST(EngineProbeTest, RereadsToFollowARestartedEngine) {
  FakeEngine engine;
  engine.Set(true);
  EngineProbe probe("probe-test", "up", "a fact", {5ms, 300ms, 60},
                    [&](std::string* e) { return engine.Read(e); });
  ASSERT_TRUE(Eventually([&] { return engine.Answered() >= 2; }));
  {
    std::lock_guard l(engine.mu);
    ASSERT_GE(engine.asked.size(), 2u);
    EXPECT_GE(engine.asked[1] - engine.asked[0], 295ms);  // a recheck, not a retry
  }
  engine.Set(false);
  const std::size_t before = engine.Asked();
  ASSERT_TRUE(Eventually([&] { return engine.Asked() >= before + 6; }));
  {
    // The first failed ask comes at the recheck; the ones after it at the retry pace.
    std::lock_guard l(engine.mu);
    for (std::size_t i = before + 1; i < before + 6; ++i)
      EXPECT_LT(engine.asked[i] - engine.asked[i - 1], 150ms) << i;
  }
  const int answered = engine.Answered();
  engine.Set(true);
  ASSERT_TRUE(Eventually([&] { return engine.Answered() > answered; }));
}

TEST(EngineProbeTest, StopsPromptlyWhileWaiting) {
  FakeEngine engine;
  engine.Set(true);
  auto probe =
      std::make_unique<EngineProbe>("probe-test", "up", "a fact", ProbeSchedule{1h, 1h, 60},
                                    [&](std::string* e) { return engine.Read(e); });
  ASSERT_TRUE(Eventually([&] { return engine.Answered() == 1; }));
  const auto start = Clock::now();
  probe.reset();
  EXPECT_LT(Clock::now() - start, 500ms);
  EXPECT_EQ(engine.Asked(), 1u);
}

}  // namespace
}  // namespace infertel
