#include "metrics/latency_histograms.h"

#include "metrics/exposition.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace infertel::metrics {
namespace {

using O = LatencyHistograms::Observation;

TEST(LatencyHistograms, RendersCumulativeBucketsSumAndCountPerSeries) {
  LatencyHistograms h;
  const TraceId trace = NewTraceId();
  const O obs[] = {{Latency::kRequestDuration, 0.3}, {Latency::kTimeToFirstToken, 0.0005}};
  h.Observe({"m", "", "0"}, obs, nullptr, trace, 1);
  h.Observe({"m", "", "0"}, std::span<const O>(obs, 1), nullptr, trace, 2);
  h.Observe({"other", "", ""}, std::span<const O>(obs, 1), nullptr, trace, 3);
  const std::string text = h.RenderPrometheus();
  EXPECT_NE(text.find("# TYPE infertel_request_duration_seconds histogram\n"), std::string::npos);
  // 0.3 falls in le="0.3": below it nothing, from it on both observations.
  EXPECT_NE(text.find("infertel_request_duration_seconds_bucket{engine_index=\"0\",model=\"m\","
                      "le=\"0.2\"} 0\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("infertel_request_duration_seconds_bucket{engine_index=\"0\",model=\"m\","
                      "le=\"0.3\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("infertel_request_duration_seconds_bucket{engine_index=\"0\",model=\"m\","
                      "le=\"+Inf\"} 2\n"),
            std::string::npos);
  EXPECT_NE(
      text.find("infertel_request_duration_seconds_sum{engine_index=\"0\",model=\"m\"} 0.6\n"),
      std::string::npos);
  EXPECT_NE(text.find("infertel_request_duration_seconds_count{model=\"other\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("infertel_time_to_first_token_seconds_bucket{engine_index=\"0\",model=\"m\","
                      "le=\"0.001\"} 1\n"),
            std::string::npos);
  // One HELP/TYPE per family.
  EXPECT_EQ(text.find("# TYPE infertel_request_duration_seconds histogram"),
            text.rfind("# TYPE infertel_request_duration_seconds histogram"));
}

// A stream's gaps were counted into the buckets as they came: merged whole, exactly.
TEST(LatencyHistograms, InterTokenGapsOfALongStreamAreEveryGap) {
  openai::DeltaTimes d;
  std::uint64_t t = 1'000'000'000;
  d.Add(t, 1);
  for (int i = 0; i < 99'999; ++i) d.Add(t += 20'000'000, 1);  // 20 ms apart
  d.Add(t += 2'000'000'000, 3);                                // a 2 s stall, then 3 at once
  EXPECT_EQ(d.gaps, 100'002);
  LatencyHistograms h;
  h.Observe({"m", "", ""}, {}, &d, NewTraceId(), 1);
  MetricsRequest req;
  auto* sm = req.add_resource_metrics()->add_scope_metrics();
  h.AppendOtlp(sm, 1, 2);
  ASSERT_EQ(sm->metrics_size(), 1);
  const auto& m = sm->metrics(0);
  EXPECT_EQ(m.name(), "infertel_inter_token_latency_seconds");
  const auto& dp = m.histogram().data_points(0);
  EXPECT_EQ(dp.count(), 100'002u);
  EXPECT_NEAR(dp.sum(), 99'999 * 0.02 + 2.0, 1e-6);
  EXPECT_EQ(dp.bucket_counts(0), 2u);                         // the two read together
  EXPECT_EQ(dp.bucket_counts(LatencyBucket(0.02)), 99'999u);  // le="0.02"
  EXPECT_EQ(dp.bucket_counts(LatencyBucket(2.0)), 1u);        // le="2"
  EXPECT_EQ(dp.explicit_bounds_size(), static_cast<int>(kLatencyBounds.size()));
  ASSERT_EQ(dp.exemplars_size(), 3);
  for (const auto& e : dp.exemplars()) EXPECT_EQ(e.trace_id().size(), 16u);
}

TEST(LatencyHistograms, SeriesPastTheBoundAreDroppedAndCounted) {
  LatencyHistograms h(2);
  const O obs[] = {{Latency::kRequestDuration, 1}};
  for (const char* model : {"a", "b", "c", "a"}) h.Observe({model, "", ""}, obs, nullptr, {}, 1);
  EXPECT_EQ(h.dropped(), 1u);
  EXPECT_EQ(h.RenderPrometheus().find("model=\"c\""), std::string::npos);
  // NaN, negative and infinite values are no latency: not observed.
  const O bad[] = {{Latency::kRequestDuration, -1},
                   {Latency::kRequestDuration, NAN},
                   {Latency::kRequestDuration, INFINITY}};
  h.Observe({"a", "", ""}, bad, nullptr, {}, 1);
  EXPECT_NE(h.RenderPrometheus().find("infertel_request_duration_seconds_count{model=\"a\"} 2\n"),
            std::string::npos);
}

// OpenMetrics for scrapers that ask for it: counter families named without `_total`, quotes
// in HELP escaped, exemplars on buckets, and the closing `# EOF`.
TEST(OpenMetrics, ConvertsTheTextExpositionAndKeepsExemplars) {
  EXPECT_TRUE(WantsOpenMetrics("application/openmetrics-text;version=1.0.0,text/plain;q=0.5"));
  EXPECT_FALSE(WantsOpenMetrics("text/plain;version=0.0.4"));
  EXPECT_FALSE(WantsOpenMetrics(""));
  LatencyHistograms h;
  TraceId trace{};
  trace[15] = 0xab;
  const LatencyHistograms::Observation obs[] = {{Latency::kRequestDuration, 0.25}};
  h.Observe({"m", "", ""}, obs, nullptr, trace, 1'700'000'000'500'000'000);
  const std::string text =
      "# HELP a_total Says \"hi\"\n# TYPE a_total counter\na_total{x=\"1\"} 3\n"
      "# HELP g A gauge\n# TYPE g gauge\ng 1\n" +
      h.RenderPrometheus(/*exemplars=*/true);
  const std::string om = ToOpenMetrics(text);
  EXPECT_EQ(om.rfind("# HELP a Says \\\"hi\\\"\n# TYPE a counter\na_total{x=\"1\"} 3\n", 0), 0u)
      << om;
  EXPECT_NE(om.find("# TYPE g gauge\ng 1\n"), std::string::npos);
  EXPECT_NE(om.find("infertel_request_duration_seconds_bucket{model=\"m\",le=\"0.3\"} 1 # "
                    "{trace_id=\"000000000000000000000000000000ab\"} 0.25 1700000000.500000000\n"),
            std::string::npos)
      << om;
  EXPECT_TRUE(om.ends_with("# EOF\n"));
  // The text format has no exemplars.
  EXPECT_EQ(h.RenderPrometheus().find('#', h.RenderPrometheus().find("_bucket")),
            std::string::npos);
}

}  // namespace
}  // namespace infertel::metrics
