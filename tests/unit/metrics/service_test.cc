// The scrape loop against a live HTTP peer: translation, counter resets, failures, malformed
// lines, the collect-metrics switch, and the OTLP export hand-off.

#include <gtest/gtest.h>

#include <mutex>
#include <optional>

#include "common/engine_ids.h"
#include "engines/sglang/sglang_families.h"
#include "engines/vllm/vllm_families.h"
#include "http/simple_server.h"
#include "metrics/service.h"
#include "testutil.h"

namespace infertel::metrics {
namespace {

using engines::sglang::SglangMetric;
using engines::vllm::VllmMetric;

using testing::Of;
using testing::ReadFixture;

// An engine /metrics endpoint whose body and status the test changes.
class FakeEngine {
 public:
  FakeEngine() {
    std::string err;
    server_ = http::SimpleServer::Start(
        {"127.0.0.1", 0},
        [this](const http::StringRequest& req) {
          std::lock_guard lock(mu_);
          ++hits_;
          if (req.target() != "/metrics") return http::MakeResponse(404, "no");
          return http::MakeResponse(status_, body_, "text/plain; version=0.0.4");
        },
        &err);
    EXPECT_TRUE(server_) << err;
  }
  void Serve(unsigned status, std::string body) {
    std::lock_guard lock(mu_);
    status_ = status;
    body_ = std::move(body);
  }
  std::string Url() const {
    return "http://127.0.0.1:" + std::to_string(server_->port()) + "/metrics";
  }

 private:
  std::unique_ptr<http::SimpleServer> server_;
  std::mutex mu_;
  unsigned status_ = 200;
  std::string body_;
  int hits_ = 0;
};

class CollectSink : public pipeline::MetricSink {
 public:
  void Submit(MetricsRequest&& r) noexcept override { requests.push_back(std::move(r)); }
  std::vector<MetricsRequest> requests;
};

std::shared_ptr<config::ConfigStore> Config(std::map<std::string, std::string> env = {}) {
  auto lookup = [env](std::string_view k) -> std::optional<std::string> {
    auto it = env.find(std::string(k));
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  return std::make_shared<config::ConfigStore>(config::Resolve(lookup).settings);
}

std::string V1Text(int prompt_tokens, double kv) {
  return "# TYPE vllm:prompt_tokens_total counter\n"
         "vllm:prompt_tokens_total{engine=\"0\",model_name=\"m\"} " +
         std::to_string(prompt_tokens) +
         "\n# TYPE vllm:kv_cache_usage_perc gauge\n"
         "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} " +
         std::to_string(kv) + "\n";
}

TEST(MetricsService, ScrapesTranslatesAndCarriesCountersAcrossRestarts) {
  FakeEngine engine;
  CollectSink sink;
  MetricsService svc({}, {{"u", VllmEngineId(), engine.Url(), ""}}, Config(), &sink, Resource(),
                     "t");
  engine.Serve(200, V1Text(100, 0.5));
  svc.ScrapeOnce();
  auto pts = svc.Snapshot();
  EXPECT_EQ(Of(pts, Id(VllmMetric::kPromptTokens)).at(0).value, 100);
  EXPECT_EQ(Of(pts, Id(VllmMetric::kKvCacheUsagePerc)).at(0).value, 0.5);

  engine.Serve(200, V1Text(30, 0.1));  // the engine restarted
  svc.ScrapeOnce();
  pts = svc.Snapshot();
  EXPECT_EQ(Of(pts, Id(VllmMetric::kPromptTokens)).at(0).value, 130);
  EXPECT_EQ(Of(pts, Id(VllmMetric::kKvCacheUsagePerc)).at(0).value, 0.1);

  // Prometheus text on the admin endpoint.
  std::string text = svc.RenderPrometheus();
  EXPECT_NE(text.find("gen_ai_vllm_prompt_tokens_total{"), std::string::npos) << text;

  // The engine is gone: gauges disappear, counters stay, the failure is recorded.
  engine.Serve(503, "down");
  svc.ScrapeOnce();
  pts = svc.Snapshot();
  EXPECT_TRUE(Of(pts, Id(VllmMetric::kKvCacheUsagePerc)).empty());
  EXPECT_EQ(Of(pts, Id(VllmMetric::kPromptTokens)).at(0).value, 130);
  EXPECT_EQ(svc.LastError("u"), "HTTP 503");

  svc.ExportOnce();
  ASSERT_EQ(sink.requests.size(), 1u);
  const auto& m = sink.requests[0].resource_metrics(0).scope_metrics(0).metrics(0);
  EXPECT_EQ(m.name(), "gen_ai_vllm_prompt_tokens");
  EXPECT_EQ(m.sum().data_points(0).as_double(), 130);
}

TEST(MetricsService, MalformedLinesAreSkippedAndCounted) {
  FakeEngine engine;
  MetricsService svc({}, {{"u", VllmEngineId(), engine.Url(), "v1"}}, Config(), nullptr, Resource(),
                     "t");
  StatsRegistry stats;
  svc.RegisterStats(&stats);
  // Lines of families the table reads are checked; others are skipped unread.
  engine.Serve(200, V1Text(7, 0.2) + "vllm:num_requests_running{engine=\"0\" 12\n!!!\n" +
                        "other_family{ 12\n");
  svc.ScrapeOnce();
  EXPECT_EQ(Of(svc.Snapshot(), Id(VllmMetric::kPromptTokens)).at(0).value, 7);
  std::string self = stats.Render();
  EXPECT_NE(self.find("infertel_scrape_malformed_lines_total{upstream=\"u\"} 2"), std::string::npos)
      << self;
}

// `n` prompt-token counters, engine labels first..first+n-1.
std::string ManyEngines(int first, int n, int value = 1) {
  std::string text = "# TYPE vllm:prompt_tokens_total counter\n";
  for (int i = first; i < first + n; ++i)
    text += "vllm:prompt_tokens_total{engine=\"" + std::to_string(i) + "\",model_name=\"m\"} " +
            std::to_string(value) + "\n";
  return text;
}

TEST(MetricsService, SeriesPerTargetAreCappedAndVanishedCountersExpire) {
  FakeEngine engine;
  MetricsOptions opts;
  opts.scrape_limits = {.max_series = 5, .stale_after = std::chrono::milliseconds(0)};
  MetricsService svc(opts, {{"u", VllmEngineId(), engine.Url(), "v1"}}, Config(), nullptr,
                     Resource(), "t");
  StatsRegistry stats;
  svc.RegisterStats(&stats);
  engine.Serve(200, ManyEngines(0, 20));
  svc.ScrapeOnce();
  EXPECT_EQ(Of(svc.Snapshot(), Id(VllmMetric::kPromptTokens)).size(), 5u);
  std::string self = stats.Render();
  EXPECT_NE(self.find("infertel_scrape_refused_samples_total{upstream=\"u\",reason=\"series_"
                      "limit\"} 15"),
            std::string::npos)
      << self;
  EXPECT_NE(self.find("infertel_scrape_series{upstream=\"u\"} 5"), std::string::npos) << self;
  // Labels that change on every scrape: the vanished series expire, the new ones take their
  // room, and the target never holds more than the cap.
  engine.Serve(200, ManyEngines(100, 20));
  svc.ScrapeOnce();
  auto pts = Of(svc.Snapshot(), Id(VllmMetric::kPromptTokens));
  ASSERT_EQ(pts.size(), 5u);
  EXPECT_EQ(testing::LabelOf(pts[0], "engine_index"), "100");
  self = stats.Render();
  EXPECT_NE(self.find("infertel_scrape_expired_series_total{upstream=\"u\"} 5"), std::string::npos)
      << self;
}

TEST(MetricsService, NegativeScrapedCounterIsRefusedAndTheTotalKept) {
  FakeEngine engine;
  MetricsService svc({}, {{"u", VllmEngineId(), engine.Url(), "v1"}}, Config(), nullptr, Resource(),
                     "t");
  StatsRegistry stats;
  svc.RegisterStats(&stats);
  engine.Serve(200, V1Text(40, 0.5));
  svc.ScrapeOnce();
  engine.Serve(200, V1Text(-7, 0.5));
  svc.ScrapeOnce();
  // Not a restart to -7 (which would carry 40 + -7 = 33): the value is refused.
  EXPECT_EQ(Of(svc.Snapshot(), Id(VllmMetric::kPromptTokens)).at(0).value, 40);
  std::string self = stats.Render();
  EXPECT_NE(self.find("infertel_scrape_refused_samples_total{upstream=\"u\",reason=\"invalid_"
                      "value\"} 1"),
            std::string::npos)
      << self;
  EXPECT_NE(self.find("infertel_scrape_engine_restarts_total{upstream=\"u\"} 0"), std::string::npos)
      << self;
}

TEST(MetricsService, SglangSnapshotsAddOnePerScrape) {
  FakeEngine engine;
  MetricsService svc({}, {{"s", SglangEngineId(), engine.Url(), ""}}, Config(), nullptr, Resource(),
                     "t");
  engine.Serve(200, ReadFixture("sglang-metrics-0.4.3-docs.txt"));
  svc.ScrapeOnce();
  svc.ScrapeOnce();
  auto pts = svc.Snapshot();
  EXPECT_EQ(Of(pts, Id(SglangMetric::kLogCount)).at(0).value, 2);
  EXPECT_EQ(Of(pts, Id(SglangMetric::kNumRunningReqs)).at(0).value, 2 * 162.0);
  // Without --enable-metrics SGLang has no /metrics: nothing is added, nothing breaks.
  engine.Serve(404, "Not Found");
  svc.ScrapeOnce();
  EXPECT_EQ(Of(svc.Snapshot(), Id(SglangMetric::kLogCount)).at(0).value, 2);
}

TEST(MetricsService, CollectSwitchStopsReporting) {
  FakeEngine engine;
  auto config = Config();
  MetricsService svc({}, {{"u", VllmEngineId(), engine.Url(), ""}}, config, nullptr, Resource(),
                     "t");
  engine.Serve(200, V1Text(5, 0.3));
  svc.ScrapeOnce();
  ASSERT_FALSE(svc.Snapshot().empty());
  auto lookup = [](std::string_view k) -> std::optional<std::string> {
    if (k == "OTEL_INSTRUMENTATION_VLLM_METRICS_ENABLED") return "false";
    return std::nullopt;
  };
  config->Publish(config::Resolve(lookup).settings);
  EXPECT_TRUE(svc.Snapshot().empty());
  EXPECT_TRUE(svc.RenderPrometheus().empty());
  // Gateway measurements are not taken either.
  openai::Exchange ex;
  ex.upstream_name = "u";
  ex.op = openai::Operation::kEmbeddings;
  ex.response.usage.input_tokens = 3;
  svc.listener()->OnExchangeFinished(ex);
  config->Publish(config::Resolve([](std::string_view) { return std::nullopt; }).settings);
  EXPECT_TRUE(Of(svc.Snapshot(), MetricId::kUsageTokens).empty());
}

// A service over one vLLM engine (9 prompt tokens), scraping every 20 ms, exporting to `sink`
// every `export_interval`; its threads not started.
struct ScrapingService {
  explicit ScrapingService(std::chrono::milliseconds export_interval) {
    engine.Serve(200, V1Text(9, 0.3));
    MetricsOptions o;
    o.scrape_interval = std::chrono::milliseconds(20);
    o.export_interval = export_interval;
    svc.emplace(o, std::vector<ScrapeTarget>{{"u", VllmEngineId(), engine.Url(), ""}}, Config(),
                &sink, Resource(), "t");
  }
  FakeEngine engine;
  CollectSink sink;
  std::optional<MetricsService> svc;
};

TEST(MetricsService, ThreadsStartAndStop) {
  ScrapingService s(std::chrono::milliseconds(20));
  MetricsService& svc = *s.svc;
  svc.Start();
  for (int i = 0; i < 200 && Of(svc.Snapshot(), Id(VllmMetric::kPromptTokens)).empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  svc.Stop();
  EXPECT_EQ(Of(svc.Snapshot(), Id(VllmMetric::kPromptTokens)).at(0).value, 9);
  EXPECT_FALSE(s.sink.requests.empty());
}

// The first export waits one interval, as the OpenTelemetry SDKs' periodic reader does; Stop()
// exports what is left once.
TEST(MetricsService, TheFirstExportWaitsAnIntervalAndStopExportsOnce) {
  ScrapingService s(std::chrono::hours(1));
  MetricsService& svc = *s.svc;
  svc.ScrapeOnce();  // points to export from the start
  ASSERT_FALSE(Of(svc.Snapshot(), Id(VllmMetric::kPromptTokens)).empty());
  svc.Start();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  svc.Stop();
  ASSERT_EQ(s.sink.requests.size(), 1u);
}

}  // namespace
}  // namespace infertel::metrics
