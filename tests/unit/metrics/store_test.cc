// The metric store, counter reset handling, gateway measurements and exposition.

#include <gtest/gtest.h>

#include "common/engine_ids.h"
#include "engines/sglang/sglang_families.h"
#include "engines/vllm/vllm_families.h"
#include "metrics/exposition.h"
#include "metrics/request_metrics.h"
#include "metrics/store.h"
#include "scrape/prometheus_text.h"
#include "testutil.h"

namespace infertel::metrics {
namespace {

using engines::sglang::SglangMetric;
using engines::vllm::VllmMetric;

using testing::LabelOf;
using testing::Of;

MetricLabels L(std::initializer_list<std::pair<std::string, std::string>> l) {
  MetricLabels labels(l);
  SortLabels(&labels);
  return labels;
}

TEST(Families, NamesUniqueAndPrometheusNames) {
  std::set<std::string_view> names;
  for (const auto& f : AllMetricFamilies()) EXPECT_TRUE(names.insert(f.name).second) << f.name;
  EXPECT_EQ(PrometheusName(Family(Id(VllmMetric::kPromptTokens))),
            "gen_ai_vllm_prompt_tokens_total");
  EXPECT_EQ(PrometheusName(Family(Id(SglangMetric::kPromptTokensTotal))), "prompt_tokens_total");
  EXPECT_EQ(PrometheusName(Family(Id(VllmMetric::kNumRequestsRunning))),
            "gen_ai_vllm_num_requests_running");
  EXPECT_EQ(FindMetric("sglang_log_count"), Id(SglangMetric::kLogCount));
  EXPECT_FALSE(FindMetric("nope"));
}

TEST(CounterTracker, CarriesTotalsAcrossEngineRestarts) {
  CounterTracker t;
  MetricPoint p{Id(VllmMetric::kPromptTokens), L({{"a", "1"}}), 100};
  EXPECT_EQ(t.Observe(p), 100);  // the engine's value as is
  p.value = 150;
  EXPECT_EQ(t.Observe(p), 150);
  p.value = 20;  // restarted: 20 since the restart
  EXPECT_EQ(t.Observe(p), 170);
  EXPECT_EQ(t.resets(), 1u);
  p.value = 25;
  EXPECT_EQ(t.Observe(p), 175);
  MetricPoint other{Id(VllmMetric::kPromptTokens), L({{"a", "2"}}), 5};
  EXPECT_EQ(t.Observe(other), 5);  // series are separate
}

TEST(MetricStore, MergesSourcesAndFiltersThem) {
  MetricStore s;
  s.AddSource("a", VllmEngineId());
  s.AddSource("b", VllmEngineId());
  s.AddSource("c", SglangEngineId());
  auto kv = L({{"callType", "gen_ai"}});
  s.ReplaceGauges("a", {{Id(VllmMetric::kKvCacheUsagePerc), kv, 0.2},
                        {Id(VllmMetric::kNumRequestsRunning), kv, 3}});
  s.ReplaceGauges("b", {{Id(VllmMetric::kKvCacheUsagePerc), kv, 0.4},
                        {Id(VllmMetric::kNumRequestsRunning), kv, 4}});
  std::vector<MetricPoint> add{{Id(SglangMetric::kNumRequestsTotal), kv, 1}};
  s.Add("c", add);
  s.Add("c", add);
  s.Add("unknown", add);  // ignored
  auto all = s.Snapshot();
  EXPECT_DOUBLE_EQ(Of(all, Id(VllmMetric::kKvCacheUsagePerc)).at(0).value, 0.3);  // mean
  EXPECT_EQ(Of(all, Id(VllmMetric::kNumRequestsRunning)).at(0).value, 7);         // sum
  EXPECT_EQ(Of(all, Id(SglangMetric::kNumRequestsTotal)).at(0).value, 2);
  auto vllm_only = s.Snapshot([](std::string_view, EngineId e) { return e == VllmEngineId(); });
  EXPECT_TRUE(Of(vllm_only, Id(SglangMetric::kNumRequestsTotal)).empty());
  s.ReplaceGauges("a", {});
  s.ReplaceGauges("b", {});
  EXPECT_TRUE(Of(s.Snapshot(), Id(VllmMetric::kNumRequestsRunning)).empty());  // no stale gauges
  // In family order.
  auto again = s.Snapshot();
  for (std::size_t i = 1; i < again.size(); ++i) EXPECT_LE(again[i - 1].id, again[i].id);
}

openai::Exchange StreamExchange(EngineId engine) {
  openai::Exchange ex;
  ex.upstream_name = "default";
  ex.engine = engine;
  ex.op = openai::Operation::kChat;
  ex.request.model = "m";
  ex.response.model = "m";
  ex.response.usage.input_tokens = 10;
  ex.response.usage.output_tokens = 5;
  ex.response.usage.cached_tokens = 4;
  ex.start.mono_start_ns = 1'000'000'000;
  ex.first_token_mono_ns = 1'200'000'000;  // TTFT 0.2 s
  for (std::uint64_t t = 1'200'000'000; t <= 1'600'000'000; t += 100'000'000)
    ex.delta_times.Add(t, 1);
  ex.stream_deltas = 5;
  ex.streamed = true;
  ex.end_mono_ns = 2'000'000'000;  // e2e 1 s
  ex.outcome = openai::Outcome::kOk;
  return ex;
}

// One exchange's deltas share their label sets; added to the store they make the same series
// as the same deltas each with its own copy of the labels.
TEST(MetricStore, DeltasSharingLabelSetsAddLikePoints) {
  const auto ex = StreamExchange(VllmEngineId());
  const ExchangeMeasures m = MeasureExchange(ex);
  ASSERT_GE(m.deltas.size(), 4u);
  MetricStore shared, copied;
  shared.AddSource("u", VllmEngineId());
  copied.AddSource("u", VllmEngineId());
  for (int i = 0; i < 2; ++i) {
    shared.Add("u", *m.labels, m.deltas);
    copied.Add("u", m.Points());
  }
  const auto a = shared.Snapshot(), b = copied.Snapshot();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].id, b[i].id);
    EXPECT_EQ(a[i].labels, b[i].labels);
    EXPECT_DOUBLE_EQ(a[i].value, b[i].value);
  }
  EXPECT_EQ(Of(a, MetricId::kUsageTokens, "usageType", "input").at(0).value, 20);  // 10 twice
  // A delta naming a label set that is not there is ignored.
  const LabeledDelta stray{MetricId::kUsageTokens, 7, 1};
  shared.Add("u", *m.labels, std::span<const LabeledDelta>(&stray, 1));
  EXPECT_EQ(shared.Snapshot().size(), a.size());
}

// Label sets from the cache are the sets built for the exchange: the same points, and one
// shared copy per engine, operation, model and engine index.
bool SamePoints(const std::vector<MetricPoint>& a, const std::vector<MetricPoint>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].id != b[i].id || a[i].labels != b[i].labels || a[i].value != b[i].value) return false;
  return !a.empty();
}

TEST(ExchangeLabelCache, GivesTheBuiltSetsOncePerModelAndIndex) {
  ExchangeLabelCache cache;
  auto ex = StreamExchange(VllmEngineId());
  const auto cached = MeasureExchange(ex, "m", {}, &cache);
  const auto built = MeasureExchange(ex, "m");
  EXPECT_TRUE(SamePoints(cached.Points(), built.Points()));
  EXPECT_EQ(MeasureExchange(ex, "m", {}, &cache).labels, cached.labels);  // the same copy
  ex.engine_index = 1;
  const auto indexed = MeasureExchange(ex, "m", {}, &cache);
  EXPECT_NE(indexed.labels, cached.labels);
  EXPECT_TRUE(SamePoints(indexed.Points(), MeasureExchange(ex, "m").Points()));
  EXPECT_NE(MeasureExchange(ex, "other", {}, &cache).labels, indexed.labels);
  ex.op = openai::Operation::kTextCompletion;
  EXPECT_NE(MeasureExchange(ex, "other", {}, &cache).labels, indexed.labels);
  EXPECT_EQ(cache.size(), 4u);
}

TEST(ExchangeLabelCache, PastItsBoundBuildsEachTimeAndKeepsNothingMore) {
  ExchangeLabelCache cache;
  const auto ex = StreamExchange(SglangEngineId());
  for (std::size_t i = 0; i < ExchangeLabelCache::kMaxEntries + 10; ++i)
    cache.Get(ex.engine, ex.op, "m" + std::to_string(i), std::nullopt);
  EXPECT_EQ(cache.size(), ExchangeLabelCache::kMaxEntries);
  const std::string late = "m" + std::to_string(ExchangeLabelCache::kMaxEntries + 5);
  const auto a = cache.Get(ex.engine, ex.op, late, std::nullopt);
  EXPECT_NE(cache.Get(ex.engine, ex.op, late, std::nullopt), a);  // not kept
  EXPECT_EQ(*a, *BuildExchangeLabels(ex.engine, ex.op, late, std::nullopt));
}

TEST(MeasureExchange, Vllm) {
  auto pts = MeasureExchange(StreamExchange(VllmEngineId())).Points();
  auto in = Of(pts, MetricId::kUsageTokens, "usageType", "input");
  ASSERT_EQ(in.size(), 1u);
  EXPECT_EQ(in[0].value, 10);
  EXPECT_EQ(LabelOf(in[0], "modelName"), "m");
  EXPECT_EQ(LabelOf(in[0], "spanKind"), "LLM");
  EXPECT_EQ(LabelOf(in[0], "callKind"), "custom_entry");
  EXPECT_EQ(Of(pts, MetricId::kUsageTokens, "usageType", "output").at(0).value, 5);
  EXPECT_DOUBLE_EQ(Of(pts, Id(VllmMetric::kFirstTokenSeconds)).at(0).value, 0.2);
  EXPECT_DOUBLE_EQ(Of(pts, MetricId::kRequestDuration).at(0).value, 1.0);
  EXPECT_DOUBLE_EQ(Of(pts, MetricId::kTimePerOutputToken).at(0).value, 0.4 / 4);
  EXPECT_EQ(LabelOf(Of(pts, MetricId::kRequestDuration)[0], "model_name"), "m");
  EXPECT_TRUE(Of(pts, Id(SglangMetric::kNumRequestsTotal)).empty());
}

// vLLM labels its request families with the engine index: the gateway's do too, when the
// exchange knows which engine served it (X-data-parallel-rank, or a single engine).
TEST(MeasureExchange, VllmSeriesCarryTheEngineIndexWhereKnown) {
  auto ex = StreamExchange(VllmEngineId());
  ex.engine_index = 3;
  auto pts = MeasureExchange(ex).Points();
  for (MetricId id : {Id(VllmMetric::kFirstTokenSeconds), MetricId::kRequestDuration,
                      MetricId::kTimePerOutputToken})
    EXPECT_EQ(LabelOf(Of(pts, id).at(0), "engine_index"), "3") << Family(id).name;
  ex.engine_index.reset();
  pts = MeasureExchange(ex).Points();
  EXPECT_FALSE(LabelOf(Of(pts, MetricId::kRequestDuration).at(0), "engine_index"));
}

// A response that is not streamed shows the gateway no token: vLLM's TTFT and TPOT come from
// its request span (what vLLM itself measures for every request); a stream's are the
// gateway's own, and SGLang adds nothing from spans.
TEST(MeasureEngineSpan, VllmResponsesNotStreamedTakeTheEnginesTimings) {
  engines::JoinRecord r;
  r.engine = VllmEngineId();
  r.upstream = "default";
  r.model = "m";
  r.engine_index = 1;
  r.output_tokens = 11;
  r.ok = true;
  engines::EngineTimings t;
  t.ttft_s = 0.05;
  t.decode_s = 0.5;
  auto pts = MeasureEngineSpan(r, t, "m").Points();
  ASSERT_EQ(pts.size(), 2u);
  EXPECT_DOUBLE_EQ(Of(pts, Id(VllmMetric::kFirstTokenSeconds)).at(0).value, 0.05);
  EXPECT_DOUBLE_EQ(Of(pts, MetricId::kTimePerOutputToken).at(0).value, 0.5 / 10);
  EXPECT_EQ(LabelOf(Of(pts, Id(VllmMetric::kFirstTokenSeconds))[0], "engine_index"), "1");
  EXPECT_EQ(LabelOf(Of(pts, Id(VllmMetric::kFirstTokenSeconds))[0], "model_name"), "m");
  r.streamed = true;
  EXPECT_TRUE(MeasureEngineSpan(r, t, "m").empty());
  r.streamed = false;
  r.ok = false;
  EXPECT_TRUE(MeasureEngineSpan(r, t, "m").empty());
  r.ok = true;
  r.engine = SglangEngineId();
  EXPECT_TRUE(MeasureEngineSpan(r, t, "m").empty());
}

// A stream without usage counts what it streamed as the entry span does: with SGLang's
// --stream-interval 2, 18 deltas are 36 tokens in every family (they were 18).
TEST(MeasureExchange, SglangStreamWithoutUsageCountsTheStreamIntervalsTokens) {
  auto ex = StreamExchange(SglangEngineId());
  ex.response.usage.output_tokens.reset();
  ex.stream_deltas = 18;
  engines::EngineFacts facts;
  facts.stream_interval = 2;
  auto pts = MeasureExchange(ex, "m", facts).Points();
  EXPECT_EQ(Of(pts, MetricId::kUsageTokens, "usageType", "output").at(0).value, 36);
  EXPECT_EQ(Of(pts, Id(SglangMetric::kGenerationTokensTotal)).at(0).value, 36);
  EXPECT_DOUBLE_EQ(Of(pts, MetricId::kTimePerOutputToken).at(0).value, 1.0 / 36);
  ex.request.stream_interval = 3;  // the request's own interval wins
  pts = MeasureExchange(ex, "m", facts).Points();
  EXPECT_EQ(Of(pts, MetricId::kUsageTokens, "usageType", "output").at(0).value, 54);
  // vLLM streams a token per delta.
  auto v = StreamExchange(VllmEngineId());
  v.response.usage.output_tokens.reset();
  v.stream_deltas = 18;
  pts = MeasureExchange(v, "m", facts).Points();
  EXPECT_EQ(Of(pts, MetricId::kUsageTokens, "usageType", "output").at(0).value, 18);
}

TEST(MeasureExchange, Sglang) {
  auto pts = MeasureExchange(StreamExchange(SglangEngineId())).Points();
  EXPECT_EQ(Of(pts, Id(SglangMetric::kNumRequestsTotal)).at(0).value, 1);
  EXPECT_EQ(Of(pts, Id(SglangMetric::kPromptTokensTotal)).at(0).value, 10);
  EXPECT_EQ(Of(pts, Id(SglangMetric::kGenerationTokensTotal)).at(0).value, 5);
  EXPECT_EQ(Of(pts, Id(SglangMetric::kCachedTokensTotal)).at(0).value, 4);
  EXPECT_DOUBLE_EQ(Of(pts, Id(SglangMetric::kTimeToFirstToken)).at(0).value, 0.2);
  EXPECT_DOUBLE_EQ(Of(pts, Id(SglangMetric::kInterTokenLatency)).at(0).value, 0.4);
  EXPECT_DOUBLE_EQ(Of(pts, MetricId::kTimePerOutputToken).at(0).value, 1.0 / 5);  // e2e / out
  EXPECT_DOUBLE_EQ(Of(pts, MetricId::kRequestDuration).at(0).value, 1.0);
  EXPECT_FALSE(LabelOf(Of(pts, MetricId::kRequestDuration)[0], "model_name"));
  EXPECT_TRUE(Of(pts, Id(VllmMetric::kFirstTokenSeconds)).empty());
}

TEST(MeasureExchange, AbortsCountAsRequestsNotAsCompletedDurations) {
  auto ex = StreamExchange(SglangEngineId());
  ex.outcome = openai::Outcome::kClientAborted;
  ex.response.usage = {};
  ex.stream_deltas = 3;
  auto pts = MeasureExchange(ex).Points();
  EXPECT_EQ(Of(pts, Id(SglangMetric::kNumRequestsTotal)).at(0).value, 1);
  EXPECT_EQ(Of(pts, Id(SglangMetric::kGenerationTokensTotal)).at(0).value, 3);  // what streamed
  EXPECT_TRUE(Of(pts, MetricId::kRequestDuration).empty());
  EXPECT_TRUE(Of(pts, Id(SglangMetric::kPromptTokensTotal)).empty());  // unknown, not 0

  for (auto outcome : {openai::Outcome::kRejected, openai::Outcome::kUpstreamUnavailable,
                       openai::Outcome::kEngineError}) {
    ex.outcome = outcome;
    EXPECT_TRUE(MeasureExchange(ex).empty());
  }
}

TEST(MeasureExchange, EmbeddingsCountInputTokensOnly) {
  openai::Exchange ex;
  ex.op = openai::Operation::kEmbeddings;
  ex.request.model = "e";
  ex.response.usage.input_tokens = 7;
  auto pts = MeasureExchange(ex).Points();
  ASSERT_EQ(pts.size(), 1u);
  EXPECT_EQ(LabelOf(pts[0], "spanKind"), "EMBEDDING");
  EXPECT_EQ(LabelOf(pts[0], "usageType"), "input");
}

TEST(MetricsEnabled, PluginAndMetricsSwitches) {
  auto env = [](std::map<std::string, std::string> vars) {
    return [vars](std::string_view k) -> std::optional<std::string> {
      auto it = vars.find(std::string(k));
      if (it == vars.end()) return std::nullopt;
      return it->second;
    };
  };
  auto s = config::Resolve(env({})).settings;
  EXPECT_TRUE(MetricsEnabled(s, VllmEngineId()));
  EXPECT_TRUE(MetricsEnabled(s, SglangEngineId()));
  s = config::Resolve(env({{"OTEL_INSTRUMENTATION_VLLM_METRICS_ENABLED", "false"}})).settings;
  EXPECT_FALSE(MetricsEnabled(s, VllmEngineId()));
  EXPECT_TRUE(MetricsEnabled(s, SglangEngineId()));
  s = config::Resolve(env({{"SGLANG_INSTRUMENTATION_ENABLED", "false"}})).settings;
  EXPECT_FALSE(MetricsEnabled(s, SglangEngineId()));
}

TEST(Exposition, PrometheusTextReadsBack) {
  std::vector<MetricPoint> pts{
      {MetricId::kUsageTokens, L({{"modelName", "a\"b\\c\nd"}, {"usageType", "input"}}), 12},
      {Id(VllmMetric::kNumRequestsRunning), L({{"engine_index", "0"}}), 3},
      {Id(SglangMetric::kPromptTokensTotal), L({{"callType", "gen_ai"}}), 1e6},
  };
  std::string text = RenderPrometheus(pts);
  auto parsed = scrape::ParsePrometheusText(text);
  EXPECT_EQ(parsed.malformed_lines, 0u) << text;
  const auto* usage = parsed.Find("genai_llm_usage_tokens_total");
  ASSERT_NE(usage, nullptr) << text;
  EXPECT_EQ(usage->type, scrape::MetricType::kCounter);
  ASSERT_EQ(usage->samples.size(), 1u);
  EXPECT_EQ(*usage->samples[0].Label("modelName"), "a\"b\\c\nd");
  EXPECT_EQ(usage->samples[0].value, 12);
  const auto* running = parsed.Find("gen_ai_vllm_num_requests_running");
  ASSERT_NE(running, nullptr);
  EXPECT_EQ(running->type, scrape::MetricType::kGauge);
  const auto* prompt = parsed.Find("prompt_tokens_total");
  ASSERT_NE(prompt, nullptr);  // not prompt_tokens_total_total
  EXPECT_EQ(prompt->samples.at(0).value, 1e6);
}

TEST(Exposition, OtlpCumulativeSumsAndGauges) {
  std::vector<MetricPoint> pts{
      {MetricId::kUsageTokens, L({{"usageType", "input"}}), 12},
      {MetricId::kUsageTokens, L({{"usageType", "output"}}), 5},
      {Id(VllmMetric::kKvCacheUsagePerc), L({{"engine_index", "0"}}), 0.5},
  };
  Resource res;
  AddAttr(res.mutable_attributes(), "service.name", "svc");
  auto req = BuildOtlpMetrics(pts, res, 100, 200, "1.2.3");
  ASSERT_EQ(req.resource_metrics_size(), 1);
  const auto& sm = req.resource_metrics(0).scope_metrics(0);
  EXPECT_EQ(sm.scope().name(), "infertel");
  ASSERT_EQ(sm.metrics_size(), 2);
  const auto& usage = sm.metrics(0);
  EXPECT_EQ(usage.name(), "genai_llm_usage_tokens");  // the exact spec name
  EXPECT_EQ(usage.unit(), "tokens");
  ASSERT_TRUE(usage.has_sum());
  EXPECT_TRUE(usage.sum().is_monotonic());
  EXPECT_EQ(usage.sum().aggregation_temporality(),
            otlp_metrics::AggregationTemporality::AGGREGATION_TEMPORALITY_CUMULATIVE);
  ASSERT_EQ(usage.sum().data_points_size(), 2);
  EXPECT_EQ(usage.sum().data_points(0).start_time_unix_nano(), 100u);
  EXPECT_EQ(usage.sum().data_points(1).as_double(), 5);
  const auto& kv = sm.metrics(1);
  ASSERT_TRUE(kv.has_gauge());
  EXPECT_EQ(kv.gauge().data_points(0).as_double(), 0.5);
  EXPECT_TRUE(BuildOtlpMetrics({}, res, 1, 2, "").resource_metrics().empty());
}

}  // namespace
}  // namespace infertel::metrics
