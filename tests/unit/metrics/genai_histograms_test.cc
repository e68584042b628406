#include "metrics/genai_histograms.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/semconv.h"

namespace infertel::metrics {
namespace {

GenAiAttributes Attrs(std::string token_type = "") {
  return {"chat", "engine", "m", "", std::move(token_type)};
}

TEST(GenAiHistograms, TheConventionsNamesUnitsAndBoundaries) {
  ASSERT_EQ(AllGenAiMetricFamilies().size(), kGenAiMetricCount);
  const auto& usage = AllGenAiMetricFamilies()[0];
  EXPECT_EQ(usage.name, "gen_ai.client.token.usage");
  EXPECT_EQ(usage.unit, "{token}");
  EXPECT_EQ(usage.bounds.front(), 1);
  EXPECT_EQ(usage.bounds.back(), 67108864);
  const auto& ttft = AllGenAiMetricFamilies()[3];
  EXPECT_EQ(ttft.name, "gen_ai.server.time_to_first_token");
  EXPECT_EQ(ttft.prometheus_name, "gen_ai_server_time_to_first_token_seconds");
  EXPECT_EQ(ttft.bounds.size(), 16u);
  EXPECT_EQ(AllGenAiMetricFamilies()[4].bounds.back(), 2.5);
  EXPECT_EQ(AllGenAiMetricFamilies()[1].bounds.back(), 81.92);
}

TEST(GenAiHistograms, PrometheusExpositionWithUnderscoredLabels) {
  GenAiHistograms h;
  h.Observe(GenAiMetric::kServerTimeToFirstToken, Attrs(), 0.03);
  h.Observe(GenAiMetric::kServerTimeToFirstToken, Attrs(), 20);  // past the last bound
  h.Observe(GenAiMetric::kClientTokenUsage, Attrs("input"), 100);
  const std::string text = h.RenderPrometheus();
  EXPECT_NE(text.find("# TYPE gen_ai_server_time_to_first_token_seconds histogram"),
            std::string::npos);
  EXPECT_NE(text.find("gen_ai_server_time_to_first_token_seconds_bucket{gen_ai_operation_name="
                      "\"chat\",gen_ai_provider_name=\"engine\",gen_ai_request_model=\"m\","
                      "le=\"0.04\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("le=\"+Inf\"} 2"), std::string::npos);
  EXPECT_NE(text.find("gen_ai_server_time_to_first_token_seconds_count{gen_ai_operation_name="
                      "\"chat\",gen_ai_provider_name=\"engine\",gen_ai_request_model=\"m\"} 2"),
            std::string::npos);
  EXPECT_NE(text.find("gen_ai_client_token_usage_bucket{gen_ai_operation_name=\"chat\","
                      "gen_ai_provider_name=\"engine\",gen_ai_request_model=\"m\","
                      "gen_ai_token_type=\"input\",le=\"256\"} 1"),
            std::string::npos)
      << text;
}

TEST(GenAiHistograms, OtlpHistogramsUnderTheConventionsNames) {
  GenAiHistograms h;
  GenAiAttributes failed = Attrs();
  failed.error_type = "timeout";
  h.Observe(GenAiMetric::kClientOperationDuration, failed, 0.5);
  otlp_metrics::ScopeMetrics sm;
  h.AppendOtlp(&sm, 1, 2);
  ASSERT_EQ(sm.metrics_size(), 1);
  const auto& m = sm.metrics(0);
  EXPECT_EQ(m.name(), "gen_ai.client.operation.duration");
  EXPECT_EQ(m.unit(), "s");
  const auto& dp = m.histogram().data_points(0);
  EXPECT_EQ(dp.explicit_bounds_size(), 14);
  EXPECT_EQ(dp.bucket_counts_size(), 15);
  EXPECT_EQ(dp.count(), 1u);
  EXPECT_EQ(dp.attributes(0).key(), "error.type");
  EXPECT_EQ(dp.attributes(0).value().string_value(), "timeout");
}

TEST(GenAiHistograms, BoundedAndRefusingNonsense) {
  GenAiHistograms h(/*max_series=*/1);
  h.Observe(GenAiMetric::kServerRequestDuration, Attrs(), 1);
  h.Observe(GenAiMetric::kServerRequestDuration, Attrs("x"), 1);  // a second series
  h.Observe(GenAiMetric::kServerRequestDuration, Attrs(), -1);
  h.Observe(GenAiMetric::kServerRequestDuration, Attrs(), std::nan(""));
  EXPECT_EQ(h.dropped(), 1u);
  otlp_metrics::ScopeMetrics sm;
  h.AppendOtlp(&sm, 1, 2);
  EXPECT_EQ(sm.metrics(0).histogram().data_points(0).count(), 1u);
}

}  // namespace
}  // namespace infertel::metrics
