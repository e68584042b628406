// vLLM /metrics → spec M3, on the real samples in tests/fixtures.

#include <gtest/gtest.h>

#include "engines/vllm/vllm_families.h"
#include "engines/vllm/vllm_metrics.h"
#include "testutil.h"

namespace infertel::metrics {
namespace {

using engines::vllm::VllmMetric;

using engines::vllm::DetectMetricsGeneration;
using engines::vllm::MetricsGeneration;
using engines::vllm::TranslateMetrics;
using testing::LabelOf;
using testing::Of;
using testing::ReadFixture;

class VllmV1Fixture : public ::testing::Test {
 protected:
  void SetUp() override {
    parsed = scrape::ParsePrometheusText(ReadFixture("vllm-metrics-v1-ngc25.09.txt"));
    ASSERT_FALSE(parsed.families.empty());
    out = TranslateMetrics(parsed, MetricsGeneration::kV1);
  }
  scrape::ParseResult parsed;
  engines::vllm::TranslatedMetrics out;
};

TEST_F(VllmV1Fixture, DetectedAsV1) {
  EXPECT_EQ(DetectMetricsGeneration(parsed), MetricsGeneration::kV1);
}

TEST_F(VllmV1Fixture, GaugesCarryTheV1Dimensions) {
  auto running = Of(out.gauges, Id(VllmMetric::kNumRequestsRunning));
  ASSERT_EQ(running.size(), 1u);
  EXPECT_EQ(LabelOf(running[0], "callType"), "gen_ai");
  EXPECT_EQ(LabelOf(running[0], "rpcType"), "2100");
  EXPECT_EQ(LabelOf(running[0], "engine_index"), "0");
  EXPECT_EQ(LabelOf(running[0], "model_name"), "Qwen/Qwen3-4B-Instruct-2507-FP8");
  EXPECT_FALSE(LabelOf(running[0], "engine"));  // renamed, not copied
  EXPECT_EQ(running[0].value, 0.0);
}

TEST_F(VllmV1Fixture, OldAndNewNamesAreNeverCountedTwice) {
  // The sample has gpu_cache_usage_perc and kv_cache_usage_perc, gpu_prefix_cache_* and
  // prefix_cache_*: one series each, with the value of one source, not their sum.
  auto kv = Of(out.gauges, Id(VllmMetric::kKvCacheUsagePerc));
  ASSERT_EQ(kv.size(), 1u);
  EXPECT_DOUBLE_EQ(kv[0].value, 0.0011764705882353343);
  auto q = Of(out.counters, Id(VllmMetric::kPrefixCacheQueries));
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0].value, 246.0);
  auto h = Of(out.counters, Id(VllmMetric::kPrefixCacheHits));
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].value, 80.0);
}

TEST_F(VllmV1Fixture, CountersAndHistogramSums) {
  EXPECT_EQ(Of(out.counters, Id(VllmMetric::kPromptTokens)).at(0).value, 246.0);
  EXPECT_EQ(Of(out.counters, Id(VllmMetric::kIterCount)).at(0).value, 1739.0);
  EXPECT_EQ(Of(out.counters, Id(VllmMetric::kRequestParamsN)).at(0).value, 6.0);
  EXPECT_DOUBLE_EQ(Of(out.counters, Id(VllmMetric::kRequestQueueTime)).at(0).value,
                   0.0003117750002274988);
  for (MetricId id : {Id(VllmMetric::kGenerationTokens), Id(VllmMetric::kNumPreemptions),
                      Id(VllmMetric::kRequestParamsMaxTokens), Id(VllmMetric::kRequestPrefillTime),
                      Id(VllmMetric::kRequestDecodeTime), Id(VllmMetric::kRequestInferenceTime)})
    EXPECT_EQ(Of(out.counters, id).size(), 1u) << Family(id).name;
  // Nothing of V0's families.
  EXPECT_TRUE(Of(out.gauges, Id(VllmMetric::kGpuCacheUsageSys)).empty());
  EXPECT_TRUE(Of(out.counters, Id(VllmMetric::kNumTokensIter)).empty());
}

TEST_F(VllmV1Fixture, RequestSuccessKeepsFinishedReason) {
  auto success = Of(out.counters, Id(VllmMetric::kRequestSuccess));
  ASSERT_EQ(success.size(), 3u);
  EXPECT_EQ(Of(success, Id(VllmMetric::kRequestSuccess), "finished_reason", "stop").at(0).value,
            6.0);
  EXPECT_EQ(Of(success, Id(VllmMetric::kRequestSuccess), "finished_reason", "abort").at(0).value,
            0.0);
}

TEST(VllmV1Translate, DeprecatedNamesAloneStillCount) {
  // A 0.9-era V1 engine exposes only the old names.
  auto parsed = scrape::ParsePrometheusText(
      "# TYPE vllm:gpu_cache_usage_perc gauge\n"
      "vllm:gpu_cache_usage_perc{engine=\"1\",model_name=\"m\"} 0.25\n"
      "# TYPE vllm:gpu_prefix_cache_queries_total counter\n"
      "vllm:gpu_prefix_cache_queries_total{engine=\"1\",model_name=\"m\"} 40\n"
      "vllm:gpu_prefix_cache_queries_created{engine=\"1\",model_name=\"m\"} 1.7e9\n");
  auto out = TranslateMetrics(parsed, MetricsGeneration::kV1);
  ASSERT_EQ(Of(out.gauges, Id(VllmMetric::kKvCacheUsagePerc)).size(), 1u);
  EXPECT_EQ(Of(out.gauges, Id(VllmMetric::kKvCacheUsagePerc))[0].value, 0.25);
  EXPECT_EQ(LabelOf(out.gauges[0], "engine_index"), "1");
  auto q = Of(out.counters, Id(VllmMetric::kPrefixCacheQueries));
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0].value, 40.0);  // the _created sample is not a value
}

TEST(VllmV1Translate, OpenMetricsCountersAndDataParallelEngines) {
  auto parsed = scrape::ParsePrometheusText(
      "# TYPE vllm:prompt_tokens counter\n"
      "vllm:prompt_tokens_total{engine=\"0\",model_name=\"m\"} 10\n"
      "vllm:prompt_tokens_total{engine=\"1\",model_name=\"m\"} 32\n"
      "vllm:prompt_tokens_created{engine=\"0\",model_name=\"m\"} 1.7e9\n"
      "# EOF\n",
      scrape::ParseOptions{.openmetrics = true});
  auto out = TranslateMetrics(parsed, MetricsGeneration::kV1);
  auto p = Of(out.counters, Id(VllmMetric::kPromptTokens));
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(Of(p, Id(VllmMetric::kPromptTokens), "engine_index", "1").at(0).value, 32.0);
}

TEST(VllmV0Translate, RealSample) {
  auto parsed =
      scrape::ParsePrometheusText(ReadFixture("vllm-metrics-v0-0.7.x-aibrix-docs-partial.txt"));
  EXPECT_EQ(DetectMetricsGeneration(parsed), MetricsGeneration::kV0);
  auto out = TranslateMetrics(parsed, MetricsGeneration::kV0);
  for (MetricId id : {Id(VllmMetric::kGpuCacheUsageSys), Id(VllmMetric::kCpuCacheUsageSys),
                      Id(VllmMetric::kNumRunningSys), Id(VllmMetric::kNumWaitingSys),
                      Id(VllmMetric::kNumSwappedSys)})
    ASSERT_EQ(Of(out.gauges, id).size(), 1u) << Family(id).name;
  auto g = Of(out.gauges, Id(VllmMetric::kNumRunningSys))[0];
  // M3.2: no engine_index/model_name dimensions.
  EXPECT_FALSE(LabelOf(g, "model_name"));
  EXPECT_FALSE(LabelOf(g, "engine_index"));
  EXPECT_EQ(LabelOf(g, "callType"), "gen_ai");
  EXPECT_EQ(Of(out.counters, Id(VllmMetric::kNumPromptTokensIter)).at(0).value, 148.0);
  EXPECT_EQ(Of(out.counters, Id(VllmMetric::kNumGenerationTokensIter)).at(0).value, 955.0);
  EXPECT_EQ(Of(out.counters, Id(VllmMetric::kNumTokensIter)).at(0).value, 148.0 + 955.0);
  EXPECT_EQ(Of(out.counters, Id(VllmMetric::kNumPreemptionIter)).at(0).value, 0.0);
  EXPECT_EQ(
      Of(out.counters, Id(VllmMetric::kRequestSuccess), "finished_reason", "stop").at(0).value,
      4.0);
  // The published sample lacks iteration_tokens_total's _count and +Inf bucket: no
  // vllm_iter_count rather than a made-up one.
  EXPECT_TRUE(Of(out.counters, Id(VllmMetric::kIterCount)).empty());
  // Nothing of V1's families.
  EXPECT_TRUE(Of(out.gauges, Id(VllmMetric::kNumRequestsRunning)).empty());
}

TEST(VllmV0Translate, IterCountFromInfBucketWhenCountIsMissing) {
  auto parsed = scrape::ParsePrometheusText(
      "# TYPE vllm:iteration_tokens_total histogram\n"
      "vllm:iteration_tokens_total_bucket{le=\"1.0\",model_name=\"m\"} 3\n"
      "vllm:iteration_tokens_total_bucket{le=\"+Inf\",model_name=\"m\"} 17\n"
      "vllm:iteration_tokens_total_sum{model_name=\"m\"} 400\n");
  auto out = TranslateMetrics(parsed, MetricsGeneration::kV0);
  ASSERT_EQ(Of(out.counters, Id(VllmMetric::kIterCount)).size(), 1u);
  EXPECT_EQ(Of(out.counters, Id(VllmMetric::kIterCount))[0].value, 17.0);
}

TEST(VllmTranslate, UnknownGenerationAndNonFinite) {
  auto parsed = scrape::ParsePrometheusText(
      "# TYPE vllm:num_requests_running gauge\n"
      "vllm:num_requests_running{model_name=\"m\"} NaN\n");
  EXPECT_EQ(DetectMetricsGeneration(parsed), MetricsGeneration::kUnknown);
  auto out = TranslateMetrics(parsed, MetricsGeneration::kUnknown);
  EXPECT_TRUE(out.gauges.empty());  // NaN is no value
  EXPECT_EQ(out.invalid_values, 1u);
}

// OpenMetrics: a counter's total is non-NaN and non-negative; a gauge is any finite number
// here (a NaN would poison the mean across upstreams). Refused samples are counted.
TEST(VllmTranslate, NegativeOrNonFiniteCountersAndNonFiniteGaugesAreRefusedAndCounted) {
  auto parsed = scrape::ParsePrometheusText(
      "# TYPE vllm:prompt_tokens counter\n"
      "vllm:prompt_tokens_total{engine=\"0\",model_name=\"m\"} -5\n"
      "vllm:prompt_tokens_total{engine=\"1\",model_name=\"m\"} +Inf\n"
      "vllm:prompt_tokens_total{engine=\"2\",model_name=\"m\"} 7\n"
      "# TYPE vllm:request_queue_time_seconds histogram\n"
      "vllm:request_queue_time_seconds_sum{engine=\"0\",model_name=\"m\"} NaN\n"
      "# TYPE vllm:num_requests_running gauge\n"
      "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} -Inf\n"
      "vllm:num_requests_running{engine=\"1\",model_name=\"m\"} -1\n");
  auto out = TranslateMetrics(parsed, MetricsGeneration::kV1);
  auto prompt = Of(out.counters, Id(VllmMetric::kPromptTokens));
  ASSERT_EQ(prompt.size(), 1u);
  EXPECT_EQ(LabelOf(prompt[0], "engine_index"), "2");
  EXPECT_TRUE(Of(out.counters, Id(VllmMetric::kRequestQueueTime)).empty());
  // A negative gauge is a value (a gauge may go below zero); an infinite one is not.
  ASSERT_EQ(Of(out.gauges, Id(VllmMetric::kNumRequestsRunning)).size(), 1u);
  EXPECT_EQ(out.invalid_values, 4u);
}

TEST(VllmTranslate, ReadsOnlyTheFamiliesOfItsTables) {
  EXPECT_TRUE(engines::vllm::ReadsFamily("vllm:prompt_tokens"));
  EXPECT_TRUE(engines::vllm::ReadsFamily("vllm:prompt_tokens_total"));
  EXPECT_TRUE(engines::vllm::ReadsFamily("vllm:request_queue_time_seconds"));
  EXPECT_TRUE(engines::vllm::ReadsFamily("vllm:num_requests_swapped"));  // V0 evidence
  EXPECT_FALSE(engines::vllm::ReadsFamily("vllm:request_queue_time_seconds_bucket"));
  EXPECT_FALSE(engines::vllm::ReadsFamily("process_resident_memory_bytes"));
  EXPECT_FALSE(engines::vllm::ReadsSample("vllm:request_queue_time_seconds_bucket"));
  EXPECT_TRUE(engines::vllm::ReadsSample("vllm:iteration_tokens_total_bucket"));
  // Parsing with the filters translates a real scrape exactly as without them.
  const std::string text = ReadFixture("vllm-metrics-v1-ngc25.09.txt");
  scrape::ParseOptions opts;
  opts.keep_family = &engines::vllm::ReadsFamily;
  opts.keep_sample = &engines::vllm::ReadsSample;
  auto all = TranslateMetrics(scrape::ParsePrometheusText(text), MetricsGeneration::kUnknown);
  auto kept = scrape::ParsePrometheusText(text, opts);
  EXPECT_EQ(DetectMetricsGeneration(kept), MetricsGeneration::kV1);
  std::size_t kept_samples = 0;
  for (const auto& f : kept.families) kept_samples += f.samples.size();
  EXPECT_LT(kept_samples, 100u);  // of the fixture's 289, mostly histogram buckets
  auto some = TranslateMetrics(kept, MetricsGeneration::kUnknown);
  ASSERT_EQ(all.counters.size(), some.counters.size());
  ASSERT_EQ(all.gauges.size(), some.gauges.size());
  for (std::size_t i = 0; i < all.counters.size(); ++i) {
    EXPECT_EQ(all.counters[i].labels, some.counters[i].labels);
    EXPECT_EQ(all.counters[i].value, some.counters[i].value);
  }
}

}  // namespace
}  // namespace infertel::metrics
