#include "analytics/slo.h"

#include <gtest/gtest.h>

#include "analytics/request_analytics.h"
#include "common/env_lookup.h"

namespace infertel::analytics {
namespace {

using openai::Exchange;
using openai::Outcome;
constexpr std::uint64_t kMs = 1'000'000;

config::Settings SettingsOf(std::map<std::string, std::string> env,
                            std::map<config::Key, std::string> console = {}) {
  auto r = config::Resolve(testing::EnvOf(std::move(env)), console);
  EXPECT_TRUE(r.errors.empty()) << (r.errors.empty() ? "" : r.errors[0]);
  return r.settings;
}

// A stream: first token at `ttft` ms, `tokens` output tokens, the last at `last` ms, the end at
// `end` ms after the start.
Exchange Stream(std::uint64_t ttft, std::uint64_t last, std::uint64_t end, std::int64_t tokens) {
  Exchange ex;
  ex.op = openai::Operation::kChat;
  ex.streamed = true;
  ex.start.mono_start_ns = 1000 * kMs;
  ex.first_token_mono_ns = ex.start.mono_start_ns + ttft * kMs;
  ex.delta_times.last_mono_ns = ex.start.mono_start_ns + last * kMs;
  ex.end_mono_ns = ex.start.mono_start_ns + end * kMs;
  ex.response.usage.output_tokens = tokens;
  ex.response.model = "m";
  return ex;
}

TEST(SloPolicy, GeneralObjectivesAndPerModelOverridesFieldByField) {
  const auto s = SettingsOf({{"INFERTEL_SLO_TTFT_MS", "500"}, {"INFERTEL_SLO_E2E_MS", "9000"}},
                            {{config::Key::kSloModels, R"({"big": {"ttft-ms": 2000}})"}});
  const SloPolicy p(s);
  EXPECT_EQ(p.For("small").ttft_ms, 500);
  EXPECT_EQ(p.For("small").tpot_ms, std::nullopt);
  EXPECT_EQ(p.For("big").ttft_ms, 2000);
  EXPECT_EQ(p.For("big").e2e_ms, 9000);  // not overridden: the general one
  EXPECT_TRUE(SloPolicy(SettingsOf({})).empty());
}

TEST(SloJudge, EachObjectiveIsMissedOnlyPastItsBound) {
  Objectives o{100, 20, 1000};
  // ttft 90 ms, tpot (90→290 ms over 10 tokens) 200/9 = 22.2 ms, e2e 300 ms.
  auto v = Judge(Stream(90, 290, 300, 10), o);
  EXPECT_TRUE(v.judged);
  EXPECT_EQ(v.missed, openai::kSloMissTpot);
  EXPECT_FALSE(v.met());
  v = Judge(Stream(90, 260, 300, 10), o);  // tpot 170/9 = 18.9 ms
  EXPECT_TRUE(v.met());
  v = Judge(Stream(150, 260, 1500, 10), o);
  EXPECT_EQ(v.missed, openai::kSloMissTtft | openai::kSloMissE2e);
  EXPECT_EQ(MissedNames(v.missed), (std::vector<std::string_view>{"ttft", "e2e"}));
}

TEST(SloJudge, AResponseNotStreamedIsJudgedOnItsDurationOnly) {
  Exchange ex = Stream(900, 900, 900, 10);
  ex.streamed = false;
  ex.first_token_mono_ns = 0;
  ex.delta_times = {};
  EXPECT_TRUE(Judge(ex, {100, 1, std::nullopt}).met());  // no ttft or tpot to judge
  EXPECT_EQ(Judge(ex, {100, 1, 500}).missed, openai::kSloMissE2e);
}

TEST(SloJudge, ServerFailuresAreMissesAndClientsMistakesAreNotJudged) {
  Objectives o{std::nullopt, std::nullopt, 1000};
  Exchange ex = Stream(10, 20, 30, 3);
  ex.outcome = Outcome::kEngineError;
  ex.http_status = 500;
  EXPECT_EQ(Judge(ex, o).missed, openai::kSloMissError);
  ex.outcome = Outcome::kUpstreamTimeout;
  EXPECT_EQ(Judge(ex, o).missed, openai::kSloMissError);
  ex.outcome = Outcome::kEngineError;
  ex.http_status = 400;  // the client's mistake
  EXPECT_FALSE(Judge(ex, o).judged);
  ex.outcome = Outcome::kClientAborted;
  EXPECT_FALSE(Judge(ex, o).judged);
  ex.outcome = Outcome::kRejected;
  EXPECT_FALSE(Judge(ex, o).judged);
  ex.outcome = Outcome::kOk;
  ex.http_status = 200;
  EXPECT_FALSE(Judge(ex, {}).judged);  // no objective: no verdict
}

TEST(SloJudge, ALongStreamIsExact) {
  // 100,000 tokens at 10 ms each: tpot exactly 10 ms, from the first and the last token's times.
  Exchange ex = Stream(50, 50 + 999'990, 50 + 999'995, 100'000);
  EXPECT_DOUBLE_EQ(*MeasureLatency(ex).tpot_s, 0.01);
  EXPECT_TRUE(Judge(ex, {std::nullopt, 11, std::nullopt}).met());
  EXPECT_FALSE(Judge(ex, {std::nullopt, 9, std::nullopt}).met());
}

TEST(RequestAnalytics, ReadsEachSettingsSnapshotOnce) {
  RequestAnalytics a;
  auto s1 = std::make_shared<const config::Settings>(SettingsOf({{"INFERTEL_SLO_E2E_MS", "100"}}));
  auto s2 = std::make_shared<const config::Settings>(SettingsOf({{"INFERTEL_SLO_E2E_MS", "1000"}}));
  Exchange ex = Stream(10, 20, 300, 3);
  EXPECT_EQ(a.Judge(s1, ex).missed, openai::kSloMissE2e);
  EXPECT_TRUE(a.Judge(s2, ex).met());  // a live change: the new snapshot's objectives
  EXPECT_FALSE(a.HasTenantRule(s2));
  auto s3 = std::make_shared<const config::Settings>(
      SettingsOf({{"INFERTEL_TENANT_FROM", "user"}, {"INFERTEL_TENANT_MAX", "1"}}));
  TenantInputs in;
  in.user = "alice";
  EXPECT_EQ(a.TenantOf(s3, in), "alice");
  in.user = "bob";
  EXPECT_EQ(a.TenantOf(s3, in), "other");
  EXPECT_EQ(a.TenantOf(s2, in), "");  // no rule: no tenant
}

TEST(AttainmentWindows, OneAndFiveMinutesSlide) {
  AttainmentWindows w;
  const std::int64_t t0 = 1'800'000'000;
  for (int i = 0; i < 4; ++i) w.Add("m", "", i != 0, t0);  // 3 of 4 met, at t0
  w.Add("m", "", false, t0 + 200);                         // a miss 200 s later
  auto points = w.Read(t0 + 200);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].window, "1m");
  EXPECT_DOUBLE_EQ(points[0].ratio, 0.0);  // only the last miss is within a minute
  EXPECT_EQ(points[1].window, "5m");
  EXPECT_DOUBLE_EQ(points[1].ratio, 3.0 / 5.0);
  EXPECT_EQ(points[1].judged, 5u);
  // Past five minutes, nothing is left of t0.
  points = w.Read(t0 + 200 + 301);
  EXPECT_TRUE(points.empty());
}

TEST(AttainmentWindows, SeriesAreBounded) {
  AttainmentWindows w(2);
  w.Add("a", "", true, 100);
  w.Add("b", "", true, 100);
  w.Add("c", "", true, 100);
  EXPECT_EQ(w.dropped(), 1u);
  EXPECT_EQ(w.Read(100).size(), 4u);  // two series, two windows
}

}  // namespace
}  // namespace infertel::analytics
