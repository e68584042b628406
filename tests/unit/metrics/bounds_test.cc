// Bounds on what outside input makes the agent keep: model label values chosen by gateway
// clients (BoundedLabelValues, RequestMetrics), and a scrape target's series (ScrapedSeries:
// the cap per target, expiry of series that vanished).

#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "common/engine_ids.h"
#include "engines/vllm/vllm_families.h"
#include "metrics/label_bound.h"
#include "metrics/request_metrics.h"
#include "metrics/served_models.h"
#include "metrics/store.h"
#include "testutil.h"

namespace infertel::metrics {
namespace {

using engines::vllm::VllmMetric;

using std::chrono::milliseconds;
using testing::LabelOf;
using testing::Of;

TEST(BoundedLabelValues, KnownValuesAlwaysPassOthersUpToTheCapThenFold) {
  BoundedLabelValues b({.cap = 2, .max_length = 16});
  b.SetKnown({"served"});
  EXPECT_TRUE(b.Admit("a"));
  EXPECT_TRUE(b.Admit("b"));
  EXPECT_FALSE(b.Admit("c"));  // no room left
  EXPECT_TRUE(b.Admit("a"));   // admitted values keep their series
  EXPECT_TRUE(b.Admit("served"));
  EXPECT_EQ(b.admitted(), 2u);
  EXPECT_EQ(b.folded().cap.load(), 1u);
  EXPECT_FALSE(b.Admit(std::string(17, 'x')));  // too long, whatever the room
  EXPECT_EQ(b.folded().length.load(), 1u);
  // The engine now serves another model: it passes though the cap is reached.
  b.SetKnown({"served", "lora-1"});
  EXPECT_TRUE(b.Admit("lora-1"));
  EXPECT_FALSE(b.Admit("d"));
  EXPECT_EQ(b.folded().cap.load(), 2u);
}

TEST(BoundedLabelValues, ConcurrentAdmitsNeverPassTheCap) {
  BoundedLabelValues b({.cap = 50});
  std::vector<std::thread> threads;
  std::atomic<int> passed{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 1000; ++i)
        if (b.Admit("m-" + std::to_string(t) + "-" + std::to_string(i))) ++passed;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(passed.load(), 50);
  EXPECT_EQ(b.admitted(), 50u);
  EXPECT_EQ(b.folded().cap.load(), 4000u - 50u);
}

TEST(ServedModels, ParsesTheOpenAiModelList) {
  auto ids = ParseModelList(
      R"({"object":"list","data":[{"id":"base","object":"model"},{"id":"lora-a"},{"x":1}]})");
  ASSERT_TRUE(ids);
  EXPECT_EQ(*ids, (std::vector<std::string>{"base", "lora-a"}));
  EXPECT_FALSE(ParseModelList("not json"));
  EXPECT_FALSE(ParseModelList(R"({"object":"list"})"));
}

std::shared_ptr<config::ConfigStore> DefaultConfig() {
  return std::make_shared<config::ConfigStore>(
      config::Resolve([](std::string_view) -> std::optional<std::string> { return {}; }).settings);
}

openai::Exchange Chat(std::string model) {
  openai::Exchange ex;
  ex.upstream_name = "u";
  ex.engine = SglangEngineId();  // SGLang answers any model name
  ex.op = openai::Operation::kChat;
  ex.request.model = model;
  ex.response.model = model;
  ex.response.usage.input_tokens = 3;
  ex.response.usage.output_tokens = 2;
  ex.outcome = openai::Outcome::kOk;
  return ex;
}

// Clients naming 500 models make at most cap + served + `other` model series.
TEST(RequestMetrics, ModelsClientsNameAreBoundedWithAnOtherBucket) {
  MetricStore store;
  store.AddSource("u", SglangEngineId());
  RequestMetrics rm(&store, DefaultConfig(), {.cap = 10});
  rm.AddUpstream("u");
  rm.Models("u").SetKnown({"served"});
  for (int i = 0; i < 500; ++i) rm.OnExchangeFinished(Chat("client-" + std::to_string(i)));
  rm.OnExchangeFinished(Chat("served"));
  auto input = Of(store.Snapshot(), MetricId::kUsageTokens, "usageType", "input");
  std::set<std::string> models;
  double other = 0;
  for (const auto& p : input) {
    models.insert(*LabelOf(p, "modelName"));
    if (LabelOf(p, "modelName") == "other") other = p.value;
  }
  EXPECT_EQ(models.size(), 10u + 1u + 1u);  // the cap, the served model, `other`
  EXPECT_TRUE(models.contains("served"));
  EXPECT_TRUE(models.contains("client-0"));     // first come
  EXPECT_FALSE(models.contains("client-499"));  // folded
  EXPECT_EQ(other, 3.0 * 490);                  // nothing is lost, only folded
  EXPECT_EQ(rm.Models("u").folded().cap.load(), 490u);
}

TEST(RequestMetrics, RequestsThatAreNotMeasuredTakeNoRoom) {
  MetricStore store;
  store.AddSource("u", SglangEngineId());
  RequestMetrics rm(&store, DefaultConfig(), {.cap = 1});
  rm.AddUpstream("u");
  auto refused = Chat("never-ran");
  refused.outcome = openai::Outcome::kRejected;
  rm.OnExchangeFinished(refused);
  rm.OnExchangeFinished(Chat("ran"));
  EXPECT_EQ(Of(store.Snapshot(), MetricId::kUsageTokens, "modelName", "ran").size(), 2u);
}

MetricPoint Counter(std::string engine, double v) {
  return {Id(VllmMetric::kPromptTokens), {{"engine_index", std::move(engine)}}, v};
}
MetricPoint Gauge(std::string engine, double v) {
  return {Id(VllmMetric::kNumRequestsRunning), {{"engine_index", std::move(engine)}}, v};
}

TEST(ScrapedSeries, NewSeriesBeyondTheCapAreRefusedKeptOnesStillUpdate) {
  ScrapedSeries s({.max_series = 3, .stale_after = milliseconds(1000)});
  const auto t0 = ScrapedSeries::Clock::time_point() + std::chrono::hours(1);
  std::vector<MetricPoint> gauges{Gauge("0", 1), Gauge("1", 1)};
  auto u = s.Update({Counter("0", 5), Counter("1", 5)}, &gauges, t0);
  EXPECT_EQ(u.over_limit, 1u);  // two counters, then room for one gauge
  EXPECT_EQ(gauges.size(), 1u);
  EXPECT_EQ(s.size(), 3u);
  gauges.clear();
  u = s.Update({Counter("0", 7), Counter("1", 9), Counter("2", 1), Counter("3", 1)}, &gauges,
               t0 + milliseconds(10));
  EXPECT_EQ(u.over_limit, 1u);  // one new counter fits (no gauges now), the other does not
  auto totals = s.CounterTotals();
  ASSERT_EQ(totals.size(), 3u);
  EXPECT_EQ(totals[0].value, 7);
  EXPECT_EQ(totals[1].value, 9);
}

TEST(ScrapedSeries, CountersAbsentForStaleAfterAreForgottenOthersAreNot) {
  ScrapedSeries s({.max_series = 2, .stale_after = milliseconds(1000)});
  const auto t0 = ScrapedSeries::Clock::time_point() + std::chrono::hours(1);
  std::vector<MetricPoint> none;
  s.Update({Counter("a", 1), Counter("b", 1)}, &none, t0);
  // "b" keeps coming; "a" vanished. Not yet stale: still kept, and the target is full.
  auto u = s.Update({Counter("b", 2), Counter("c", 1)}, &none, t0 + milliseconds(900));
  EXPECT_EQ(u.expired, 0u);
  EXPECT_EQ(u.over_limit, 1u);
  // Past stale_after: "a" is forgotten and its room goes to "c".
  u = s.Update({Counter("b", 3), Counter("c", 1)}, &none, t0 + milliseconds(1500));
  EXPECT_EQ(u.expired, 1u);
  EXPECT_EQ(u.over_limit, 0u);
  auto totals = s.CounterTotals();
  ASSERT_EQ(totals.size(), 2u);
  EXPECT_EQ(LabelOf(totals[0], "engine_index"), "b");
  EXPECT_EQ(totals[0].value, 3);
  // A series seen in every scrape never expires, however long it lives.
  u = s.Update({Counter("b", 4), Counter("c", 2)}, &none, t0 + std::chrono::hours(5));
  EXPECT_EQ(u.expired, 0u);
  EXPECT_EQ(s.CounterTotals().size(), 2u);
}

TEST(MetricStore, ScrapedCountersAreReplacedGatewayCountersAreNot) {
  MetricStore store;
  store.AddSource("u", VllmEngineId());
  std::vector<MetricPoint> measured{{MetricId::kRequestDuration, {}, 1}};
  store.Add("u", measured);
  std::vector<MetricPoint> scraped{Counter("0", 5), Counter("1", 6)};
  store.ReplaceScrapedCounters("u", scraped);
  scraped.pop_back();
  store.ReplaceScrapedCounters("u", scraped);
  auto pts = store.Snapshot();
  EXPECT_EQ(Of(pts, Id(VllmMetric::kPromptTokens)).size(), 1u);  // the expired one is gone
  EXPECT_EQ(Of(pts, MetricId::kRequestDuration).size(), 1u);
}

}  // namespace
}  // namespace infertel::metrics
