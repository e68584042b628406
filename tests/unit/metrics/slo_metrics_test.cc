#include "metrics/slo_metrics.h"

#include <gtest/gtest.h>

namespace infertel::metrics {
namespace {

openai::SloVerdict Verdict(std::uint8_t missed) { return {true, missed}; }

TEST(SloMetricsTest, CountsVerdictsMissesGoodputAndAttainment) {
  SloMetrics m;
  const std::int64_t now = 1'800'000'000;
  m.Record("m", "acme", Verdict(0), 100, now);
  m.Record("m", "acme", Verdict(0), 50, now);
  m.Record("m", "acme", Verdict(openai::kSloMissTtft | openai::kSloMissE2e), 70, now);
  m.Record("m", "", Verdict(openai::kSloMissError), std::nullopt, now);
  m.Record("m", "acme", openai::SloVerdict{}, 10, now);  // not judged: not counted
  const std::string text = m.RenderPrometheus(now);
  for (const char* line : {
           "# TYPE infertel_slo_requests_total counter\n",
           "infertel_slo_requests_total{model=\"m\",tenant=\"acme\",met=\"true\"} 2\n",
           "infertel_slo_requests_total{model=\"m\",tenant=\"acme\",met=\"false\"} 1\n",
           "infertel_slo_requests_total{model=\"m\",met=\"false\"} 1\n",
           "infertel_slo_misses_total{model=\"m\",tenant=\"acme\",objective=\"ttft\"} 1\n",
           "infertel_slo_misses_total{model=\"m\",tenant=\"acme\",objective=\"tpot\"} 0\n",
           "infertel_slo_misses_total{model=\"m\",tenant=\"acme\",objective=\"e2e\"} 1\n",
           "infertel_slo_misses_total{model=\"m\",objective=\"error\"} 1\n",
           "infertel_goodput_tokens_total{model=\"m\",tenant=\"acme\"} 150\n",
           "# TYPE infertel_slo_attainment_ratio gauge\n",
           "infertel_slo_attainment_ratio{model=\"m\",tenant=\"acme\",window=\"1m\"} "
           "0.6666666666666666\n",
           "infertel_slo_attainment_ratio{model=\"m\",tenant=\"acme\",window=\"5m\"} "
           "0.6666666666666666\n",
           "infertel_slo_attainment_ratio{model=\"m\",window=\"5m\"} 0\n",
       })
    EXPECT_NE(text.find(line), std::string::npos) << line << "\nin:\n" << text;
  // Minutes later the windows have nothing left; the counters stay.
  const std::string later = m.RenderPrometheus(now + 600);
  EXPECT_EQ(later.find("infertel_slo_attainment_ratio"), std::string::npos);
  EXPECT_NE(later.find("infertel_goodput_tokens_total{model=\"m\",tenant=\"acme\"} 150"),
            std::string::npos);
}

TEST(SloMetricsTest, OtlpCarriesTheSameSeries) {
  SloMetrics m;
  m.Record("m", "acme", Verdict(0), 100, 1'800'000'000);
  otlp_metrics::ScopeMetrics sm;
  m.AppendOtlp(&sm, 1, 1'800'000'000ull * 1'000'000'000ull);
  ASSERT_EQ(sm.metrics_size(), 4);
  EXPECT_EQ(sm.metrics(0).name(), "infertel_slo_requests_total");
  EXPECT_TRUE(sm.metrics(0).sum().is_monotonic());
  EXPECT_EQ(sm.metrics(2).name(), "infertel_goodput_tokens_total");
  EXPECT_EQ(sm.metrics(2).sum().data_points(0).as_double(), 100);
  EXPECT_EQ(sm.metrics(3).name(), "infertel_slo_attainment_ratio");
  EXPECT_EQ(sm.metrics(3).gauge().data_points_size(), 2);  // 1m and 5m
  EXPECT_EQ(sm.metrics(3).gauge().data_points(0).as_double(), 1.0);
}

TEST(SloMetricsTest, SeriesAreBounded) {
  SloMetrics m(2);
  for (const char* t : {"a", "b", "c", "d"}) m.Record("m", t, Verdict(0), 1, 100);
  EXPECT_EQ(m.dropped(), 2u);
  EXPECT_EQ(m.RenderPrometheus(100).find("tenant=\"c\""), std::string::npos);
}

}  // namespace
}  // namespace infertel::metrics
