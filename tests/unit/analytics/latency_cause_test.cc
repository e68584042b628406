#include "analytics/latency_cause.h"

#include <gtest/gtest.h>

#include "core/semconv.h"
#include "openai/exchange.h"

namespace infertel::analytics {
namespace latency_cause_test {

namespace sc = semconv;

// A request of 10 s at the gateway: 10 ms of the gateway's own, nothing of the client's, and
// the engine's phases as each test sets them.
Timeline Base() {
  Timeline t;
  t.e2e_s = 10;
  t.gateway_s = 0.01;
  t.client_s = 0;
  t.prompt_tokens = 1000;
  t.output_tokens = 100;
  return t;
}

TEST(LatencyCauseTest, QueueWhenTheWaitIsTheLargestPart) {
  Timeline t = Base();
  t.queue_s = 6;
  t.prefill_s = 1;
  t.decode_s = 2;
  t.requests_ahead = 12;
  const Attribution a = Attribute(t);
  EXPECT_EQ(a.cause, sc::kLatencyCauseQueue);
  EXPECT_EQ(a.component, "queue");
  EXPECT_DOUBLE_EQ(a.queue_s, 6);
  EXPECT_DOUBLE_EQ(a.engine_unsplit_s, 0);  // the phases are known
}

TEST(LatencyCauseTest, KvTransferCountsAsQueue) {
  Timeline t = Base();
  t.queue_s = 1;
  t.kv_transfer_s = 5;
  t.decode_s = 2;
  const Attribution a = Attribute(t);
  EXPECT_EQ(a.cause, sc::kLatencyCauseQueue);
  EXPECT_EQ(a.component, "kv_transfer");
}

TEST(LatencyCauseTest, LongPromptWhenPrefillIsLargestAndTheCacheServedMost) {
  Timeline t = Base();
  t.queue_s = 0.1;
  t.prefill_s = 7;
  t.decode_s = 2;
  t.cached_tokens = 600;  // 0.6 ≥ the miss ratio
  const Attribution a = Attribute(t);
  EXPECT_EQ(a.cause, sc::kLatencyCauseLongPrompt);
  ASSERT_TRUE(a.cache_hit_ratio);
  EXPECT_DOUBLE_EQ(*a.cache_hit_ratio, 0.6);
}

TEST(LatencyCauseTest, LongPromptWhenTheEngineReportsNoCache) {
  Timeline t = Base();
  t.prefill_s = 7;
  t.decode_s = 2;
  const Attribution a = Attribute(t);
  EXPECT_EQ(a.cause, sc::kLatencyCauseLongPrompt);
  EXPECT_FALSE(a.cache_hit_ratio);
}

TEST(LatencyCauseTest, PrefixCacheMissWhenPrefillIsLargestAndTheCacheServedLittle) {
  Timeline t = Base();
  t.prefill_s = 7;
  t.decode_s = 2;
  t.cached_tokens = 0;  // reported, and none
  const Attribution a = Attribute(t);
  EXPECT_EQ(a.cause, sc::kLatencyCausePrefixCacheMiss);
  ASSERT_TRUE(a.cache_hit_ratio);
  EXPECT_DOUBLE_EQ(*a.cache_hit_ratio, 0);
}

TEST(LatencyCauseTest, LongOutputWhenDecodeIsLargestWithoutOtherEvidence) {
  Timeline t = Base();
  t.queue_s = 0.5;
  t.prefill_s = 0.5;
  t.decode_s = 8;
  t.interference_prefill_tokens = CauseThresholds::kInterferenceTokens - 1;
  EXPECT_EQ(Attribute(t).cause, sc::kLatencyCauseLongOutput);
}

TEST(LatencyCauseTest, InterferenceWhenOthersPrefilledDuringTheDecode) {
  Timeline t = Base();
  t.prefill_s = 0.5;
  t.decode_s = 8;
  t.interference_prefill_tokens = CauseThresholds::kInterferenceTokens;
  const Attribution a = Attribute(t);
  EXPECT_EQ(a.cause, sc::kLatencyCauseInterference);
  EXPECT_EQ(a.component, "decode");
}

TEST(LatencyCauseTest, AnyInterferenceExplainsATimePerTokenMiss) {
  Timeline t = Base();
  t.prefill_s = 0.5;
  t.decode_s = 8;
  t.interference_prefill_tokens = 10;
  t.missed = openai::kSloMissTpot;
  EXPECT_EQ(Attribute(t).cause, sc::kLatencyCauseInterference);
  t.interference_prefill_tokens = 0;
  EXPECT_EQ(Attribute(t).cause, sc::kLatencyCauseLongOutput);
}

TEST(LatencyCauseTest, PreemptionWhenTheEngineReportsOne) {
  Timeline t = Base();
  t.decode_s = 8;
  t.interference_prefill_tokens = 100'000;
  t.preemptions = 1;
  EXPECT_EQ(Attribute(t).cause, sc::kLatencyCausePreemption);
  Timeline q = Base();  // back in the queue after it
  q.queue_s = 8;
  q.preemptions = 2;
  EXPECT_EQ(Attribute(q).cause, sc::kLatencyCausePreemption);
  q.preemptions = 0;
  EXPECT_EQ(Attribute(q).cause, sc::kLatencyCauseQueue);
}

TEST(LatencyCauseTest, ClientWhenTheGatewayWaitedOnTheReaderLongest) {
  Timeline t = Base();
  t.prefill_s = 0.5;
  t.decode_s = 2;
  t.client_s = 7;
  const Attribution a = Attribute(t);
  EXPECT_EQ(a.cause, sc::kLatencyCauseClient);
  EXPECT_DOUBLE_EQ(a.client_s, 7);
}

TEST(LatencyCauseTest, GatewayWhenItsOwnTimeIsLargest) {
  Timeline t = Base();
  t.gateway_s = 5;
  t.prefill_s = 0.5;
  t.decode_s = 2;
  EXPECT_EQ(Attribute(t).cause, sc::kLatencyCauseGateway);
}

TEST(LatencyCauseTest, EngineErrorFirst) {
  Timeline t = Base();
  t.queue_s = 9;
  t.engine_error = true;
  EXPECT_EQ(Attribute(t).cause, sc::kLatencyCauseEngineError);
  Timeline m = Base();
  m.queue_s = 9;
  m.missed = openai::kSloMissError;
  EXPECT_EQ(Attribute(m).cause, sc::kLatencyCauseEngineError);
}

TEST(LatencyCauseTest, AFirstTokenMissLooksOnlyBeforeTheFirstToken) {
  Timeline t = Base();
  t.queue_s = 2;
  t.prefill_s = 1;
  t.decode_s = 6;  // largest, but after the first token
  t.client_s = 3;  // likewise
  t.missed = openai::kSloMissTtft;
  EXPECT_EQ(Attribute(t).cause, sc::kLatencyCauseQueue);
  t.missed = openai::kSloMissTtft | openai::kSloMissE2e;  // the whole request
  EXPECT_EQ(Attribute(t).cause, sc::kLatencyCauseLongOutput);
}

TEST(LatencyCauseTest, ATimePerTokenMissLooksOnlyAtTheDecodeAndTheClient) {
  Timeline t = Base();
  t.queue_s = 6;
  t.decode_s = 1;
  t.client_s = 2;
  t.missed = openai::kSloMissTpot;
  EXPECT_EQ(Attribute(t).cause, sc::kLatencyCauseClient);
}

TEST(LatencyCauseTest, TheGatewaysViewAloneDecidesOnlyItsOwnParts) {
  Timeline t;  // no engine phases: the engine's part is one
  t.e2e_s = 10;
  t.gateway_s = 0.01;
  t.client_s = 1;
  Attribution a = Attribute(t);
  EXPECT_TRUE(a.cause.empty());
  EXPECT_EQ(a.component, "engine");
  EXPECT_NEAR(a.engine_unsplit_s, 8.99, 1e-9);
  t.client_s = 6;
  a = Attribute(t);
  EXPECT_EQ(a.cause, sc::kLatencyCauseClient);
  EXPECT_NEAR(a.engine_unsplit_s, 3.99, 1e-9);
}

TEST(LatencyCauseTest, NothingMeasuredDecidesNothing) {
  const Attribution a = Attribute(Timeline{});
  EXPECT_TRUE(a.cause.empty());
  EXPECT_TRUE(a.component.empty());
}

TEST(LatencyCauseTest, CacheHitRatio) {
  EXPECT_FALSE(CacheHitRatio(std::nullopt, 100));
  EXPECT_FALSE(CacheHitRatio(10, std::nullopt));
  EXPECT_FALSE(CacheHitRatio(10, 0));
  EXPECT_DOUBLE_EQ(*CacheHitRatio(25, 100), 0.25);
  EXPECT_DOUBLE_EQ(*CacheHitRatio(200, 100), 1.0);  // clamped
  EXPECT_DOUBLE_EQ(*CacheHitRatio(-5, 100), 0.0);
}

}  // namespace latency_cause_test
}  // namespace infertel::analytics
