// SGLang /metrics → spec M5 snapshots, on the real samples of every label era.

#include <gtest/gtest.h>

#include "engines/registry.h"
#include "engines/sglang/sglang_families.h"
#include "engines/sglang/sglang_metrics.h"
#include "testutil.h"

namespace infertel::metrics {
namespace {

using engines::sglang::SglangMetric;

using engines::sglang::TranslateSnapshot;
using testing::LabelOf;
using testing::Of;
using testing::ReadFixture;

std::vector<MetricPoint> FromFixture(std::string_view name) {
  return TranslateSnapshot(scrape::ParsePrometheusText(ReadFixture(name)));
}

double One(const std::vector<MetricPoint>& points, MetricId id) {
  auto v = Of(points, id);
  EXPECT_EQ(v.size(), 1u) << Family(id).name;
  return v.empty() ? -1 : v[0].value;
}

TEST(SglangTranslate, FirstGenerationNamesAndPercentHitRate) {
  auto out = FromFixture("sglang-metrics-0.3.5-docs.txt");
  EXPECT_EQ(One(out, Id(SglangMetric::kNumRunningReqs)), 0.0);  // num_requests_running
  EXPECT_EQ(One(out, Id(SglangMetric::kNumQueueReqs)), 0.0);    // num_requests_waiting
  EXPECT_EQ(One(out, Id(SglangMetric::kTokenUsage)), 0.01);
  EXPECT_DOUBLE_EQ(One(out, Id(SglangMetric::kCacheHitRate)), 0.1061);  // 10.61 %
  EXPECT_TRUE(Of(out, Id(SglangMetric::kNumUsedTokens)).empty());       // 0.3.5 had none
  for (const auto& p : out) {
    EXPECT_EQ(LabelOf(p, "callType"), "gen_ai");
    EXPECT_EQ(LabelOf(p, "callKind"), "custom_entry");
    EXPECT_EQ(LabelOf(p, "rpcType"), "2100");
    EXPECT_FALSE(LabelOf(p, "name"));
  }
}

TEST(SglangTranslate, ModelNameEra) {
  auto out = FromFixture("sglang-metrics-0.4.3-docs.txt");
  EXPECT_EQ(One(out, Id(SglangMetric::kNumRunningReqs)), 162.0);
  EXPECT_EQ(One(out, Id(SglangMetric::kNumQueueReqs)), 2826.0);
  EXPECT_EQ(One(out, Id(SglangMetric::kNumUsedTokens)), 123859.0);
  EXPECT_EQ(One(out, Id(SglangMetric::kTokenUsage)), 0.28);
  EXPECT_DOUBLE_EQ(One(out, Id(SglangMetric::kGenThroughput)), 86.50814177726902);
  EXPECT_DOUBLE_EQ(One(out, Id(SglangMetric::kCacheHitRate)), 0.007507552643049313);
  EXPECT_TRUE(Of(out, Id(SglangMetric::kSpecAcceptLength)).empty());

  auto v040 = FromFixture("sglang-metrics-0.4.0-docs.txt");
  EXPECT_EQ(One(v040, Id(SglangMetric::kNumUsedTokens)), 0.0);
  EXPECT_EQ(One(v040, Id(SglangMetric::kCacheHitRate)), 0.0);
}

TEST(SglangTranslate, DataParallelFragmentHasNoSnapshotFamilies) {
  // The recent DP=8 fragment holds only num_retracted_reqs/num_paused_reqs: nothing of M5's
  // snapshot families is there, so nothing is made up.
  EXPECT_TRUE(FromFixture("sglang-metrics-dp8-aibrix-issue1614-FRAGMENT.txt").empty());
}

// sglang_log_count counts the stats periods the snapshot counters were added for: a scrape
// without any of the scheduler's state adds none (docs/telemetry-reference.md), one with it
// adds one.
TEST(SglangTranslate, LogCountOnlyForScrapesWithTheSchedulersState) {
  const engines::EngineProfile& p = engines::Profile(*engines::FindEngine("sglang"));
  auto fragment = p.TranslateScrape(
      scrape::ParsePrometheusText(ReadFixture("sglang-metrics-dp8-aibrix-issue1614-FRAGMENT.txt")),
      "");
  EXPECT_TRUE(Of(fragment.snapshot, Id(SglangMetric::kLogCount)).empty());
  auto full = p.TranslateScrape(
      scrape::ParsePrometheusText(ReadFixture("sglang-metrics-0.4.3-docs.txt")), "");
  EXPECT_EQ(One(full.snapshot, Id(SglangMetric::kLogCount)), 1.0);
}

TEST(SglangTranslate, RecentLabelsOneSchedulerPerDpRank) {
  auto parsed = scrape::ParsePrometheusText(
      "# TYPE sglang:num_running_reqs gauge\n"
      "sglang:num_running_reqs{dp_rank=\"0\",engine_type=\"unified\",model_name=\"m\",pp_rank="
      "\"0\",tp_rank=\"0\"} 5\n"
      "sglang:num_running_reqs{dp_rank=\"0\",engine_type=\"unified\",model_name=\"m\",pp_rank="
      "\"0\",tp_rank=\"1\"} 5\n"
      "sglang:num_running_reqs{dp_rank=\"1\",engine_type=\"unified\",model_name=\"m\",pp_rank="
      "\"0\",tp_rank=\"2\"} 7\n"
      "sglang:num_running_reqs{dp_rank=\"1\",engine_type=\"unified\",model_name=\"m\",pp_rank="
      "\"0\",priority=\"3\",tp_rank=\"2\"} 2\n"
      "# TYPE sglang:token_usage gauge\n"
      "sglang:token_usage{dp_rank=\"0\",engine_type=\"unified\",model_name=\"m\",pp_rank=\"0\",tp_"
      "rank=\"0\"} 0.2\n"
      "sglang:token_usage{dp_rank=\"1\",engine_type=\"unified\",model_name=\"m\",pp_rank=\"0\",tp_"
      "rank=\"2\"} 0.4\n"
      "# TYPE sglang:spec_accept_length gauge\n"
      "sglang:spec_accept_length{engine_type=\"unified\",model_name=\"m\",pp_rank=\"0\",tp_rank="
      "\"0\"} 2.5\n");
  auto out = TranslateSnapshot(parsed);
  // TP rank 1 repeats rank 0's state; the priority breakdown repeats the total.
  EXPECT_EQ(One(out, Id(SglangMetric::kNumRunningReqs)), 12.0);
  EXPECT_DOUBLE_EQ(One(out, Id(SglangMetric::kTokenUsage)), 0.3);  // a ratio: averaged
  EXPECT_EQ(One(out, Id(SglangMetric::kSpecAcceptLength)), 2.5);
}

TEST(SglangTranslate, NegativeAndNonFiniteValuesAreRefusedAndCounted) {
  auto parsed = scrape::ParsePrometheusText(
      "# TYPE sglang:num_running_reqs gauge\n"
      "sglang:num_running_reqs{dp_rank=\"0\",model_name=\"m\"} -3\n"
      "sglang:num_running_reqs{dp_rank=\"1\",model_name=\"m\"} 4\n"
      "# TYPE sglang:gen_throughput gauge\n"
      "sglang:gen_throughput{model_name=\"m\"} NaN\n");
  std::size_t invalid = 0;
  auto out = TranslateSnapshot(parsed, &invalid);
  EXPECT_EQ(One(out, Id(SglangMetric::kNumRunningReqs)), 4.0);  // never below what was counted
  EXPECT_TRUE(Of(out, Id(SglangMetric::kGenThroughput)).empty());
  EXPECT_EQ(invalid, 2u);
  EXPECT_TRUE(engines::sglang::ReadsFamily("sglang:num_running_reqs"));
  EXPECT_FALSE(engines::sglang::ReadsFamily("sglang:e2e_request_latency_seconds_bucket"));
  EXPECT_FALSE(engines::sglang::ReadsSample("sglang:num_running_reqs_created"));
}

TEST(SglangTranslate, NotSglang) {
  EXPECT_TRUE(
      TranslateSnapshot(scrape::ParsePrometheusText(ReadFixture("vllm-metrics-v1-ngc25.09.txt")))
          .empty());
}

}  // namespace
}  // namespace infertel::metrics
