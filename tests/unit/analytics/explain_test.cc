#include "analytics/explain.h"

#include <gtest/gtest.h>

#include "core/semconv.h"

namespace infertel::analytics {
namespace explain_test {

namespace sc = semconv;
constexpr std::int64_t kS = 1'000'000'000;

TraceSpan Entry(double seconds) {
  TraceSpan e;
  e.span_id = "e1";
  e.name = "chat m";
  e.scope = std::string(sc::kAgentScopeName);
  e.start_ns = 100 * kS;
  e.end_ns = e.start_ns + static_cast<std::int64_t>(seconds * kS);
  e.attributes[std::string(sc::kGenAiOperationName)] = std::string("chat");
  e.attributes[std::string(sc::kGenAiUsageInputTokens)] = std::int64_t{2000};
  e.attributes[std::string(sc::kGenAiUsageOutputTokens)] = std::int64_t{50};
  return e;
}

// A normalized engine request span: latencies in integer nanoseconds.
TraceSpan Engine(double queue, double prefill, double decode) {
  TraceSpan s;
  s.span_id = "s1";
  s.parent_span_id = "e1";
  s.name = "llm_request";
  s.start_ns = 100 * kS + 2'000'000;  // 2 ms after the entry span
  s.end_ns = s.start_ns + static_cast<std::int64_t>((queue + prefill + decode) * kS);
  auto ns = [](double v) { return static_cast<std::int64_t>(v * kS); };
  s.attributes[std::string(sc::kGenAiLatencyTimeInQueue)] = ns(queue);
  s.attributes[std::string(sc::kGenAiLatencyTimeInModelPrefill)] = ns(prefill);
  s.attributes[std::string(sc::kGenAiLatencyTimeInModelDecode)] = ns(decode);
  return s;
}

TEST(ExplainTest, NoEntrySpanNothingToExplain) {
  const Explanation e = ExplainTrace({Engine(1, 1, 1)});
  EXPECT_FALSE(e.found);
  EXPECT_NE(RenderExplanation(e).find("nothing to explain"), std::string::npos);
}

TEST(ExplainTest, TheEngineSpanSplitsTheTime) {
  TraceSpan entry = Entry(5);
  entry.attributes[std::string(sc::kInfertelSloMet)] = false;
  entry.attributes[std::string(sc::kInfertelSloMissed)] = std::vector<std::string>{"ttft"};
  TraceSpan engine = Engine(3.5, 0.5, 0.9);
  engine.attributes[std::string(sc::kInfertelQueueRequestsAhead)] = std::int64_t{7};
  engine.attributes[std::string(sc::kInfertelLatencyCause)] = std::string("queue");
  const Explanation e = ExplainTrace({entry, engine});
  ASSERT_TRUE(e.found);
  EXPECT_TRUE(e.engine_span);
  EXPECT_NEAR(*e.timeline.gateway_s, 0.002, 1e-9);  // the engine span's start
  EXPECT_NEAR(e.attribution.queue_s, 3.5, 1e-9);
  EXPECT_EQ(e.attribution.cause, sc::kLatencyCauseQueue);
  EXPECT_EQ(e.recorded_cause, "queue");
  const std::string text = RenderExplanation(e);
  EXPECT_NE(text.find("missed ttft"), std::string::npos) << text;
  EXPECT_NE(text.find("7 requests ahead"), std::string::npos) << text;
  EXPECT_NE(text.find("cause: queue"), std::string::npos) << text;
  EXPECT_EQ(text.find("recorded at ingest"), std::string::npos) << text;
}

TEST(ExplainTest, SecondsAsTheEngineSentThemAndPhaseSpans) {
  TraceSpan entry = Entry(4);
  entry.attributes[std::string(sc::kInfertelCacheHitRatio)] = 0.1;
  TraceSpan engine;  // seconds (doubles): not normalized
  engine.span_id = "s1";
  engine.parent_span_id = "e1";
  engine.start_ns = entry.start_ns;
  engine.end_ns = entry.end_ns;
  engine.attributes[std::string(sc::kGenAiLatencyTimeInModelPrefill)] = 3.0e0 + 0.25;
  engine.attributes[std::string(sc::kGenAiLatencyE2e)] = 3.9;
  TraceSpan wait;
  wait.span_id = "w1";
  wait.parent_span_id = "s1";
  wait.name = std::string(sc::kSpanWait);
  wait.start_ns = entry.start_ns;
  wait.end_ns = entry.start_ns + kS / 2;
  const Explanation e = ExplainTrace({entry, engine, wait});
  EXPECT_NEAR(*e.timeline.prefill_s, 3.25, 1e-9);
  EXPECT_NEAR(*e.timeline.queue_s, 0.5, 1e-9);
  ASSERT_TRUE(e.attribution.cache_hit_ratio);
  EXPECT_NEAR(*e.attribution.cache_hit_ratio, 0.1, 1e-9);
  EXPECT_EQ(e.attribution.cause, sc::kLatencyCausePrefixCacheMiss);
}

TEST(ExplainTest, WithoutAnEngineSpanOnlyTheGatewaysCauses) {
  TraceSpan entry = Entry(3);
  entry.attributes[std::string(sc::kInfertelLatencyClient)] = 2.5;
  entry.attributes[std::string(sc::kInfertelLatencyGateway)] = 0.001;
  Explanation e = ExplainTrace({entry});
  EXPECT_FALSE(e.engine_span);
  EXPECT_EQ(e.attribution.cause, sc::kLatencyCauseClient);
  entry.attributes.erase(std::string(sc::kInfertelLatencyClient));
  e = ExplainTrace({entry});
  EXPECT_TRUE(e.attribution.cause.empty());
  EXPECT_NE(RenderExplanation(e).find("undecided"), std::string::npos);
}

TEST(ExplainTest, AnEngineErrorButNotAClientThatLeft) {
  TraceSpan entry = Entry(1);
  entry.error = true;
  entry.attributes[std::string(sc::kErrorType)] = std::string("500");
  EXPECT_EQ(ExplainTrace({entry}).attribution.cause, sc::kLatencyCauseEngineError);
  entry.attributes[std::string(sc::kErrorType)] = std::string("client_disconnected");
  EXPECT_NE(ExplainTrace({entry}).attribution.cause, sc::kLatencyCauseEngineError);
}

TEST(ExplainTest, PreemptedEventsAreCounted) {
  TraceSpan entry = Entry(5);
  TraceSpan engine = Engine(0.1, 0.1, 4);
  engine.event_names = {std::string(sc::kEventPreempted), "DECODE"};
  const Explanation e = ExplainTrace({entry, engine});
  ASSERT_TRUE(e.timeline.preemptions);
  EXPECT_EQ(*e.timeline.preemptions, 1);
  EXPECT_EQ(e.attribution.cause, sc::kLatencyCausePreemption);
}

TEST(ExplainTest, PreemptionsCountedOnAnySpanOfTheTrace) {
  TraceSpan entry = Entry(5);
  TraceSpan engine = Engine(3, 0.1, 1);
  TraceSpan stage;  // a stage span of the engine's that saw the request retracted twice
  stage.span_id = "st";
  stage.parent_span_id = "x";
  stage.attributes[std::string(sc::kInfertelPreemptions)] = std::int64_t{2};
  const Explanation e = ExplainTrace({entry, engine, stage});
  ASSERT_TRUE(e.timeline.preemptions);
  EXPECT_EQ(*e.timeline.preemptions, 2);
  EXPECT_EQ(e.attribution.cause, sc::kLatencyCausePreemption);  // the queue part, preempted
  EXPECT_NE(RenderExplanation(e).find("2 preemptions"), std::string::npos);
}

}  // namespace explain_test
}  // namespace infertel::analytics
