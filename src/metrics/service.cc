#include "metrics/service.h"

#include <spdlog/spdlog.h>

#include "core/clock.h"
#include "core/thread_name.h"
#include "engines/sglang/sglang_metrics.h"
#include "engines/vllm/vllm_metrics.h"
#include "http/sync_client.h"
#include "http/url.h"
#include "metrics/exposition.h"
#include "scrape/prometheus_text.h"

namespace infertel::metrics {

struct MetricsService::Target {
  ScrapeTarget config;
  std::optional<http::Url> url;
  std::unique_ptr<http::SyncClient> client;  // scrape thread only
  CounterTracker counters;                   // scrape thread only
  ScrapeStats stats;
  mutable std::mutex mu;
  std::string last_error;  // guarded by mu
  bool was_ok = true;      // scrape thread only: log state changes once, not every scrape
};

MetricsService::MetricsService(MetricsOptions options, std::vector<ScrapeTarget> targets,
                               std::shared_ptr<config::ConfigStore> config,
                               pipeline::MetricSink* sink, Resource resource, std::string version)
    : options_(options),
      config_(std::move(config)),
      sink_(sink),
      resource_(std::move(resource)),
      version_(std::move(version)),
      request_metrics_(&store_, config_),
      start_unix_nano_(WallNanos()) {
  for (auto& tc : targets) {
    auto t = std::make_unique<Target>();
    store_.AddSource(tc.upstream, tc.engine == gateway::EngineKind::kSglang ? MetricScope::kSglang
                                                                            : MetricScope::kVllm);
    if (!tc.url.empty()) {
      t->url = http::ParseUrl(tc.url);
      if (!t->url) spdlog::warn("metrics: upstream {}: bad metrics URL '{}'", tc.upstream, tc.url);
    }
    http::SyncTimeouts to;
    to.connect = to.write = to.read = options_.scrape_timeout;
    t->client = std::make_unique<http::SyncClient>(to);
    t->config = std::move(tc);
    targets_.push_back(std::move(t));
  }
}

MetricsService::~MetricsService() { Stop(); }

void MetricsService::Start() {
  bool any_scrape = false;
  for (const auto& t : targets_) any_scrape |= t->url.has_value();
  if (any_scrape)
    threads_.emplace_back([this] {
      NameThisThread("metrics-scrape");
      Loop(options_.scrape_interval, &MetricsService::ScrapeOnce);
    });
  if (sink_)
    threads_.emplace_back([this] {
      NameThisThread("metrics-export");
      Loop(options_.export_interval, &MetricsService::ExportOnce);
    });
}

void MetricsService::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
  if (sink_) ExportOnce();
}

void MetricsService::Loop(std::chrono::milliseconds interval, void (MetricsService::*fn)()) {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    (this->*fn)();
    lock.lock();
    cv_.wait_for(lock, interval, [this] { return stopping_; });
  }
}

std::vector<MetricPoint> MetricsService::Snapshot() const {
  auto settings = config_->Current();
  bool vllm = MetricsEnabled(*settings, gateway::EngineKind::kVllm);
  bool sglang = MetricsEnabled(*settings, gateway::EngineKind::kSglang);
  return store_.Snapshot([&](std::string_view, MetricScope engine) {
    return engine == MetricScope::kSglang ? sglang : vllm;
  });
}

std::string MetricsService::RenderPrometheus() const {
  auto points = Snapshot();
  return metrics::RenderPrometheus(points);
}

void MetricsService::ExportOnce() {
  if (!sink_) return;
  auto points = Snapshot();
  if (points.empty()) return;
  sink_->Submit(BuildOtlpMetrics(points, resource_, start_unix_nano_, WallNanos(), version_));
}

void MetricsService::ScrapeOnce() {
  auto settings = config_->Current();
  for (auto& t : targets_) {
    if (!t->url) continue;
    ScrapeTarget_(*t, *settings);
  }
}

void MetricsService::ScrapeTarget_(Target& t, const config::Settings& settings) {
  const std::string& name = t.config.upstream;
  auto fail = [&](std::string why) {
    t.stats.failures.fetch_add(1, std::memory_order_relaxed);
    // Gauges of an engine that cannot be read are gone, not frozen at their last value.
    store_.ReplaceGauges(name, {});
    if (t.was_ok)
      spdlog::warn("metrics: upstream {}: scrape of {} failed: {}", name, t.url->ToString(), why);
    t.was_ok = false;
    std::lock_guard lock(t.mu);
    t.last_error = std::move(why);
  };
  if (!MetricsEnabled(settings, t.config.engine)) {
    store_.ReplaceGauges(name, {});
    return;
  }
  t.stats.scrapes.fetch_add(1, std::memory_order_relaxed);
  http::SyncResponse resp;
  std::string error;
  // Plain 0.0.4 text: every engine serves it, and it is what the parser reads best.
  if (!t.client->Send("GET", *t.url, {{"Accept", "text/plain;version=0.0.4;q=1,*/*;q=0.1"}}, "", "",
                      &resp, &error, 64u << 20)) {
    t.client->Close();
    return fail(error);
  }
  if (resp.status != 200) {
    // SGLang without --enable-metrics has no /metrics route: a 404 here is the normal state
    // of such an engine, and the gateway's own measurements carry on.
    return fail("HTTP " + std::to_string(resp.status));
  }
  scrape::ParseOptions popts;
  if (const std::string* ct = resp.Header("content-type"))
    popts.openmetrics = ct->find("openmetrics") != std::string::npos;
  scrape::ParseResult parsed = scrape::ParsePrometheusText(resp.body, popts);
  if (parsed.malformed_lines > 0) {
    t.stats.malformed_lines.fetch_add(parsed.malformed_lines, std::memory_order_relaxed);
    spdlog::debug("metrics: upstream {}: {} malformed lines skipped (first: {})", name,
                  parsed.malformed_lines, parsed.errors.empty() ? "" : parsed.errors.front());
  }

  if (t.config.engine == gateway::EngineKind::kSglang) {
    auto snapshot = engines::sglang::TranslateSnapshot(parsed);
    if (!snapshot.empty()) {
      snapshot.push_back({MetricId::kSglangLogCount, snapshot.front().labels, 1});
      store_.Add(name, snapshot);
    }
  } else {
    using engines::vllm::MetricsGeneration;
    MetricsGeneration gen = t.config.generation_hint == "v0" ? MetricsGeneration::kV0
                            : t.config.generation_hint == "v1"
                                ? MetricsGeneration::kV1
                                : engines::vllm::DetectMetricsGeneration(parsed);
    auto translated = engines::vllm::TranslateMetrics(parsed, gen);
    std::uint64_t resets_before = t.counters.resets();
    for (auto& p : translated.counters) p.value = t.counters.Observe(p);
    std::uint64_t resets = t.counters.resets() - resets_before;
    if (resets > 0) {
      t.stats.counter_resets.fetch_add(resets, std::memory_order_relaxed);
      spdlog::info(
          "metrics: upstream {}: {} engine counters went back (engine restarted); totals "
          "carried over",
          name, resets);
    }
    store_.SetCounters(name, translated.counters);
    store_.ReplaceGauges(name, std::move(translated.gauges));
  }
  if (!t.was_ok) spdlog::info("metrics: upstream {}: scraping {} again", name, t.url->ToString());
  t.was_ok = true;
  std::lock_guard lock(t.mu);
  t.last_error.clear();
}

std::string MetricsService::LastError(std::string_view upstream) const {
  for (const auto& t : targets_) {
    if (t->config.upstream != upstream) continue;
    std::lock_guard lock(t->mu);
    return t->last_error;
  }
  return {};
}

void MetricsService::RegisterStats(StatsRegistry* stats) {
  using T = StatsRegistry::Type;
  for (const auto& t : targets_) {
    if (!t->url) continue;
    std::string labels = "upstream=\"" + t->config.upstream + "\"";
    stats->Add("infertel_scrapes", "Scrapes of an engine's /metrics", T::kCounter, labels,
               &t->stats.scrapes);
    stats->Add("infertel_scrape_failures",
               "Scrapes that failed (transport error, timeout or non-200)", T::kCounter, labels,
               &t->stats.failures);
    stats->Add("infertel_scrape_malformed_lines", "Lines of engine /metrics skipped as malformed",
               T::kCounter, labels, &t->stats.malformed_lines);
    stats->Add("infertel_scrape_engine_restarts",
               "Engine counter series that went back (engine restarts); totals carried over",
               T::kCounter, labels, &t->stats.counter_resets);
  }
}

}  // namespace infertel::metrics
