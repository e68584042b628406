#include "metrics/overview_history.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <string>

namespace infertel::metrics {
namespace {

// The values of one series of a Json() answer, with null as -1.
std::vector<double> ValuesOf(const std::string& json, std::string_view metric,
                             std::string_view tenant = "", std::string_view upstream = "") {
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(json);
  std::vector<double> out;
  for (auto s : doc["series"].get_array()) {
    if (std::string_view(s["metric"]) != metric || std::string_view(s["tenant"]) != tenant ||
        std::string_view(s["upstream"]) != upstream)
      continue;
    for (auto v : s["values"].get_array()) out.push_back(v.is_null() ? -1 : double(v));
  }
  return out;
}

TEST(BucketQuantile, InterpolatesInsideTheBucketAsPrometheusDoes) {
  Buckets b{};
  EXPECT_FALSE(BucketQuantile(b, 0.5));
  b[LatencyBucket(0.015)] = 10;  // all in (0.01, 0.02]
  EXPECT_NEAR(*BucketQuantile(b, 0.5), 0.015, 1e-9);
  EXPECT_NEAR(*BucketQuantile(b, 0.9), 0.019, 1e-9);
  b[LatencyBucket(0.35)] = 10;  // half in (0.3, 0.4]
  EXPECT_NEAR(*BucketQuantile(b, 0.5), 0.02, 1e-9);
  EXPECT_NEAR(*BucketQuantile(b, 0.99), 0.398, 1e-9);
  Buckets inf{};
  inf.back() = 3;  // +Inf: at the last bound
  EXPECT_EQ(*BucketQuantile(inf, 0.5), kLatencyBounds.back());
}

TEST(OverviewHistory, AStepIsTheDifferenceWithThePreviousReading) {
  OverviewHistory h;
  for (int i = 0; i < 10; ++i) h.CountRequest("m", "t", i == 0);
  OverviewReading r0;
  h.AddRequestCounts(&r0);
  h.Record(1000, r0);  // the first reading: no step yet
  EXPECT_TRUE(ValuesOf(h.Json(0, 5), "requests_per_second", "t").empty());
  for (int i = 0; i < 20; ++i) h.CountRequest("m", "t", i < 5);
  OverviewReading r1;
  h.AddRequestCounts(&r1);
  r1.keys[{"m", "t"}].e2e[LatencyBucket(0.15)] = 4;
  r1.keys[{"m", "t"}].slo_judged = 4;
  r1.keys[{"m", "t"}].slo_met = 3;
  r1.keys[{"m", "t"}].goodput_tokens = 50;
  h.Record(6000, r1);
  const std::string json = h.Json(0, 5);
  EXPECT_EQ(ValuesOf(json, "requests_per_second", "t"), std::vector<double>{4});
  EXPECT_EQ(ValuesOf(json, "errors_per_second", "t"), std::vector<double>{1});
  EXPECT_EQ(ValuesOf(json, "slo_attainment_ratio", "t"), std::vector<double>{0.75});
  EXPECT_EQ(ValuesOf(json, "goodput_tokens_per_second", "t"), std::vector<double>{10});
  ASSERT_EQ(ValuesOf(json, "e2e_p50_seconds", "t").size(), 1u);
  EXPECT_NEAR(ValuesOf(json, "e2e_p50_seconds", "t")[0], 0.125, 1e-6);
  EXPECT_TRUE(ValuesOf(json, "ttft_p50_seconds", "t").empty());  // no observations: no series
}

TEST(OverviewHistory, ACounterThatWentDownLeavesItsStepEmpty) {
  OverviewHistory h;
  OverviewReading a, b, c;
  a.upstreams["u"].preemptions_total = 10;
  b.upstreams["u"].preemptions_total = 4;  // the engine restarted
  c.upstreams["u"].preemptions_total = 9;
  h.Record(0, a);
  h.Record(5000, b);
  h.Record(10000, c);
  EXPECT_EQ(ValuesOf(h.Json(0, 5), "preemptions_per_second", "", "u"),
            (std::vector<double>{-1, 1}));
}

TEST(OverviewHistory, StateSummedOverScrapesIsDividedByTheScrapes) {
  OverviewHistory h;
  OverviewReading a, b;
  a.upstreams["u"] = {.kv_cache_usage = 1.0, .running = 10, .waiting = 0, .scrapes = 10};
  b.upstreams["u"] = {.kv_cache_usage = 1.5, .running = 16, .waiting = 2, .scrapes = 12};
  h.Record(0, a);
  h.Record(5000, b);
  const std::string json = h.Json(0, 5);
  EXPECT_EQ(ValuesOf(json, "kv_cache_usage_ratio", "", "u"), std::vector<double>{0.25});
  EXPECT_EQ(ValuesOf(json, "requests_running", "", "u"), std::vector<double>{3});
  EXPECT_EQ(ValuesOf(json, "requests_waiting", "", "u"), std::vector<double>{1});
}

TEST(OverviewHistory, GaugesAreReadAsTheyAre) {
  OverviewHistory h;
  OverviewReading a;
  a.upstreams["u"] = {.kv_cache_usage = 0.4, .running = 3, .waiting = 7};
  h.Record(0, a);
  h.Record(5000, a);
  EXPECT_EQ(ValuesOf(h.Json(0, 5), "requests_waiting", "", "u"), std::vector<double>{7});
}

TEST(OverviewHistory, BoundedInStepsAndSeries) {
  OverviewHistory h(/*max_steps=*/3, /*max_series=*/2);
  OverviewReading r;
  r.upstreams["u"] = {.kv_cache_usage = 0.5, .running = 1, .waiting = 2};  // three series
  for (int i = 0; i < 6; ++i) h.Record(i * 5000, r);
  const std::string json = h.Json(0, 5);
  EXPECT_EQ(ValuesOf(json, "kv_cache_usage_ratio", "", "u").size(), 3u);  // the newest 3 steps
  EXPECT_EQ(ValuesOf(json, "requests_running", "", "u").size(), 3u);
  EXPECT_TRUE(ValuesOf(json, "requests_waiting", "", "u").empty());
  EXPECT_EQ(h.dropped(), 5u);
  // Requests of a (model, tenant) past the bound are not counted, and say so.
  h.CountRequest("m1", "t", false);
  h.CountRequest("m2", "t", false);
  h.CountRequest("m3", "t", false);
  EXPECT_EQ(h.dropped(), 6u);
  // `since` keeps the steps from then on.
  EXPECT_EQ(ValuesOf(h.Json(20000, 5), "requests_running", "", "u").size(), 2u);
}

// The history's memory is what its bound says: steps x series x 16 bytes, not a vector's
// doubling room on top (a step built value by value would hold 64 slots for 50 values).
TEST(OverviewHistory, ItsValuesTakeNoMoreThanStepsTimesSeries) {
  constexpr std::size_t kSteps = 10, kSeries = 50;
  OverviewHistory h(kSteps, kSeries);
  for (int i = 0; i < 30; ++i) {
    OverviewReading r;
    for (int u = 0; u < 20; ++u)  // 60 series offered, 50 kept
      r.upstreams["u" + std::to_string(u)] = {.kv_cache_usage = 0.5, .running = 1, .waiting = 2};
    h.Record(i * 5000, r);
  }
  EXPECT_EQ(h.ValueBytes(), kSteps * kSeries * 16);
  EXPECT_EQ(ValuesOf(h.Json(0, 5), "kv_cache_usage_ratio", "", "u0").size(), kSteps);
  EXPECT_EQ(h.dropped(), 29u * 10u);  // 10 series past the bound, in each of 29 steps
}

}  // namespace
}  // namespace infertel::metrics
