#include "sim/engine/engine.h"

#include <gtest/gtest.h>

#include <map>

namespace infertel::sim {
namespace {

// An engine driven by hand on a fake clock.
class EngineHarness {
 public:
  explicit EngineHarness(EngineConfig c) {
    c.mono_now = [this] { return now_; };
    c.wall_now = [this] { return 1'700'000'000'000'000'000ull + now_; };
    engine = std::make_unique<Engine>(std::move(c));
  }
  void Submit(const std::string& id, int prompt_len, SamplingSpec s = {}, TokenId base = 7) {
    std::vector<TokenId> prompt;
    for (int i = 0; i < prompt_len; ++i) prompt.push_back(base + static_cast<TokenId>(i));
    ASSERT_TRUE(
        engine->Submit(id, std::move(prompt), std::move(s), [this, id](const RequestOutput& o) {
          auto& r = results[id];
          r.text += o.text_delta;
          r.tokens += static_cast<int>(o.tokens.size());
          r.outputs += 1;
          if (o.finished) {
            r.finished = true;
            r.reason = o.finish_reason;
            r.record = o.record;
          }
        }));
  }
  std::uint64_t Step() {
    return engine->Step([this](std::uint64_t ns) { now_ += ns; });
  }
  int RunUntilIdle(int max_steps = 100000) {
    int steps = 0;
    while (steps < max_steps) {
      EngineStats s = engine->Stats();
      if (s.running == 0 && s.waiting == 0) break;
      Step();
      ++steps;
    }
    return steps;
  }
  struct Result {
    std::string text;
    int tokens = 0;
    int outputs = 0;
    bool finished = false;
    FinishReason reason = FinishReason::kNone;
    RequestRecord record;
  };
  std::map<std::string, Result> results;
  std::unique_ptr<Engine> engine;
  std::uint64_t now_ = 1'000'000;
};

SamplingSpec Fixed(int max_tokens) {
  SamplingSpec s;
  s.max_tokens = max_tokens;
  s.ignore_eos = true;
  return s;
}

TEST(EngineTest, RunningCapIsRespected) {
  EngineConfig c;
  c.max_num_seqs = 2;
  EngineHarness h(c);
  for (int i = 0; i < 5; ++i) h.Submit("r" + std::to_string(i), 20, Fixed(5), 100 * i);
  h.Step();
  EngineStats s = h.engine->Stats();
  EXPECT_EQ(s.running, 2u);
  EXPECT_EQ(s.waiting, 3u);
  int steps = 0;
  while (h.engine->Stats().running + h.engine->Stats().waiting > 0 && steps++ < 1000) {
    h.Step();
    EXPECT_LE(h.engine->Stats().running, 2u);
  }
  for (int i = 0; i < 5; ++i) {
    const auto& r = h.results["r" + std::to_string(i)];
    EXPECT_TRUE(r.finished);
    EXPECT_EQ(r.tokens, 5);
    EXPECT_EQ(r.reason, FinishReason::kLength);
  }
  EXPECT_EQ(h.engine->Stats().finished, 5u);
}

TEST(EngineTest, RepeatedPromptHitsPrefixCache) {
  EngineHarness h(EngineConfig{});
  h.Submit("a", 64, Fixed(3));
  h.RunUntilIdle();
  EXPECT_EQ(h.results["a"].record.cached_tokens, 0);
  EXPECT_EQ(h.engine->Stats().prefix_cache_hits, 0u);
  h.Submit("b", 64, Fixed(3));
  h.RunUntilIdle();
  // Three full blocks of 16 are reused; the last block is recomputed so that at least one
  // token is computed.
  EXPECT_EQ(h.results["b"].record.cached_tokens, 48);
  EXPECT_EQ(h.engine->Stats().prefix_cache_hits, 48u);
  EXPECT_EQ(h.engine->Stats().prefix_cache_queries, 128u);
  // A different prompt does not hit.
  h.Submit("c", 64, Fixed(3), 5000);
  h.RunUntilIdle();
  EXPECT_EQ(h.results["c"].record.cached_tokens, 0);
}

TEST(EngineTest, PreemptsNewestWhenKvRunsOut) {
  EngineConfig c;
  c.num_kv_blocks = 12;  // 192 tokens for three requests that grow to 40 + 60 each
  c.block_size = 16;
  EngineHarness h(c);
  h.Submit("r0", 40, Fixed(60), 1000);
  h.Submit("r1", 40, Fixed(60), 2000);
  h.Submit("r2", 40, Fixed(60), 3000);
  h.RunUntilIdle();
  EngineStats s = h.engine->Stats();
  EXPECT_GT(s.preemptions, 0u);
  for (const char* id : {"r0", "r1", "r2"}) {
    EXPECT_TRUE(h.results[id].finished) << id;
    EXPECT_EQ(h.results[id].tokens, 60) << id;
  }
  // The oldest request is never the victim.
  EXPECT_EQ(h.results["r0"].record.preemptions, 0);
  EXPECT_GT(h.results["r1"].record.preemptions + h.results["r2"].record.preemptions, 0);
  EXPECT_EQ(s.kv_blocks_used, 0u);
}

TEST(EngineTest, ChunkedPrefillSpreadsLongPromptOverSteps) {
  EngineConfig c;
  c.max_num_batched_tokens = 32;
  c.step_fixed_ms = 1.0;
  c.prefill_ms_per_token = 0.5;
  c.decode_ms_per_token = 0.25;
  EngineHarness h(c);
  h.Submit("long", 100, Fixed(2));
  // 32 + 32 + 32 + 4 prompt tokens: the first token comes with the fourth step.
  EXPECT_EQ(h.Step(), 17'000'000u);  // 1 + 32 * 0.5 ms
  EXPECT_EQ(h.results["long"].outputs, 0);
  h.Step();
  h.Step();
  EXPECT_EQ(h.results["long"].outputs, 0);
  EXPECT_EQ(h.Step(), 3'000'000u);  // 1 + 4 * 0.5 ms
  EXPECT_EQ(h.results["long"].outputs, 1);
  EXPECT_EQ(h.Step(), 1'250'000u);  // a decode step: 1 + 0.25 ms
  EXPECT_TRUE(h.results["long"].finished);
  const RequestRecord& r = h.results["long"].record;
  EXPECT_LT(r.scheduled_mono_ns, r.first_token_mono_ns);
  EXPECT_LT(r.first_token_mono_ns, r.last_token_mono_ns);
  EXPECT_EQ(r.prompt_tokens, 100);
  EXPECT_EQ(r.generated_tokens, 2);
}

TEST(EngineTest, SpeedDividesStepTime) {
  EngineConfig c;
  c.step_fixed_ms = 2.0;
  c.prefill_ms_per_token = 0.0;
  c.speed = 4.0;
  EngineHarness h(c);
  h.Submit("x", 10, Fixed(1));
  EXPECT_EQ(h.Step(), 500'000u);
}

TEST(EngineTest, AbortFreesBlocks) {
  EngineHarness h(EngineConfig{});
  h.Submit("x", 50, Fixed(1000));
  h.Step();
  h.Step();
  EXPECT_GT(h.engine->Stats().kv_blocks_used, 0u);
  EXPECT_TRUE(h.engine->Abort("x"));
  EngineStats s = h.engine->Stats();
  EXPECT_EQ(s.kv_blocks_used, 0u);
  EXPECT_EQ(s.running, 0u);
  EXPECT_EQ(s.aborted, 1u);
  EXPECT_FALSE(h.engine->Abort("x"));
  EXPECT_EQ(h.Step(), 0u);
}

TEST(EngineTest, SameSeedAndPromptGiveSameText) {
  auto run = [](std::uint64_t seed) {
    EngineConfig c;
    c.seed = seed;
    EngineHarness h(c);
    h.Submit("x", 30, Fixed(20));
    h.RunUntilIdle();
    return h.results["x"].text;
  };
  std::string a = run(42);
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, run(42));
  EXPECT_NE(a, run(43));
}

TEST(EngineTest, StopStringEndsRequest) {
  EngineHarness probe(EngineConfig{});
  probe.Submit("p", 30, Fixed(20));
  probe.RunUntilIdle();
  std::string full = probe.results["p"].text;
  auto second = full.find(' ', 1);
  ASSERT_NE(second, std::string::npos);
  std::string stop = full.substr(second, full.find(' ', second + 1) - second);

  EngineHarness h(EngineConfig{});
  SamplingSpec s = Fixed(20);
  s.stop = {stop};
  h.Submit("p", 30, s);
  h.RunUntilIdle();
  EXPECT_EQ(h.results["p"].reason, FinishReason::kStop);
  EXPECT_EQ(h.results["p"].text, full.substr(0, full.find(stop)));
}

}  // namespace
}  // namespace infertel::sim
