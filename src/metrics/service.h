#pragma once
// The metrics side of the agent: a MetricStore fed by the gateway (RequestMetrics) and by a
// scrape loop over each upstream's /metrics (translated per engine), exposed as Prometheus
// text and exported over OTLP at an interval.
//
// Threads: one scrape thread (blocking HTTP with timeouts, never on the data path) and one
// export thread. Thread-safety: Start/Stop from the owner; the rest is thread-safe.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "config/settings.h"
#include "core/genai_dialect.h"
#include "core/stats.h"
#include "core/telemetry.h"
#include "engines/profile.h"
#include "metrics/genai_histograms.h"
#include "metrics/overview_history.h"
#include "metrics/request_metrics.h"
#include "metrics/store.h"
#include "openai/exchange.h"
#include "pipeline/exporter.h"
#include "scrape/prometheus_text.h"

namespace infertel::metrics {

struct MetricsOptions {
  std::chrono::milliseconds scrape_interval{5000};
  std::chrono::milliseconds scrape_timeout{3000};
  // OTLP export interval (OTEL_METRIC_EXPORT_INTERVAL, default 60 s as in the SDKs).
  std::chrono::milliseconds export_interval{60000};
  // The step of the web UI's overview (OverviewHistory).
  std::chrono::milliseconds overview_step{5000};
  // Series per scrape target and their expiry (docs/limits.md, "Scraped series").
  ScrapeLimits scrape_limits;
  // Model label values per upstream (docs/limits.md, "Metric labels chosen by outside input").
  LabelBoundOptions model_bound;
};

struct ScrapeTarget {
  std::string upstream;  // source name in the store
  EngineId engine;
  std::string url;              // full URL of the engine's /metrics; "" = not scraped
  std::string generation_hint;  // the engine's generation, e.g. "v1"; "" = from the exposition
};

// Per-target scrape counters, for infertel's self-metrics.
struct ScrapeStats {
  std::atomic<std::uint64_t> scrapes{0};
  std::atomic<std::uint64_t> failures{0};
  std::atomic<std::uint64_t> malformed_lines{0};
  std::atomic<std::uint64_t> counter_resets{0};
  // Samples refused, by reason.
  std::atomic<std::uint64_t> over_series_limit{0};  // a new series beyond max_series
  std::atomic<std::uint64_t> over_sample_limit{0};  // past the parse's sample limit
  std::atomic<std::uint64_t> invalid_values{0};     // NaN, ±Inf, negative counter
  std::atomic<std::uint64_t> expired_series{0};
  std::atomic<std::uint64_t> series{0};  // gauge: kept after the latest scrape
};

class MetricsService {
 public:
  MetricsService(MetricsOptions options, std::vector<ScrapeTarget> targets,
                 std::shared_ptr<config::ConfigStore> config, pipeline::MetricSink* sink,
                 Resource resource, std::string version);
  ~MetricsService();

  void Start();
  // Stops the threads; exports one last time when there is a sink.
  void Stop();

  openai::ExchangeListener* listener() { return &request_metrics_; }
  engines::EngineSpanListener* span_listener() { return &request_metrics_; }
  MetricStore& store() { return store_; }

  // Series of the engines whose metric reporting is on now (C1 and C3/C4 switches).
  std::vector<MetricPoint> Snapshot() const;
  // The seed's families and the latency histograms, in format 0.0.4; `exemplars` for an
  // OpenMetrics exposition (ToOpenMetrics).
  std::string RenderPrometheus(bool exemplars = false) const;

  // One pass over every target / one export / one overview step (the threads call these; so
  // can tests).
  void ScrapeOnce();
  void ExportOnce();
  void RecordOverview();
  // The overview's steps since `since_unix_ms` (OverviewHistory::Json).
  std::string OverviewJson(std::int64_t since_unix_ms) const;
  // The last scrape error per target ("" when fine), for status pages and tests.
  std::string LastError(std::string_view upstream) const;

  // The models `upstream` serves (its GET /v1/models): their model label values are never
  // folded into `other`. Thread-safe; called by a probe thread.
  void SetServedModels(std::string_view upstream, const std::vector<std::string>& models);
  // What `upstream`'s engine says of itself (EngineProfile::ReadFacts). Thread-safe.
  void SetEngineFacts(std::string_view upstream, const engines::EngineFacts& facts) {
    request_metrics_.SetEngineFacts(upstream, facts);
  }

  void RegisterStats(StatsRegistry* stats);

 private:
  struct Target;
  void ScrapeTarget_(Target& t, const config::Settings& settings);
  // Stores a kCumulative engine's scrape: counters through the target's reset handling.
  void StoreCumulative(Target& t, std::size_t samples_over_limit,
                       engines::ScrapedMetrics translated);
  void CountRefused(Target& t, const ScrapeUpdate& u, std::size_t over_sample_limit,
                    std::size_t invalid_values);
  void RegisterModelStats(StatsRegistry* stats);
  // The series the exposition and the export carry: the seed's families, without those the
  // latest GenAI conventions replace when the dialect speaks only those.
  std::vector<MetricPoint> ExposedPoints(GenAiDialect dialect) const;
  EngineState ReadEngineState(const Target& t, const config::Settings& settings) const;
  // Calls `fn` every `interval` until Stop(): first at once, or after one interval when
  // `wait_first`.
  void Loop(std::chrono::milliseconds interval, void (MetricsService::*fn)(),
            bool wait_first = false);

  MetricsOptions options_;
  std::shared_ptr<config::ConfigStore> config_;
  pipeline::MetricSink* sink_;
  Resource resource_;
  std::string version_;
  MetricStore store_;
  LatencyHistograms histograms_;
  SloMetrics slo_;
  OverviewHistory overview_;
  GenAiHistograms genai_;
  RequestMetrics request_metrics_;
  std::vector<std::unique_ptr<Target>> targets_;
  std::uint64_t start_unix_nano_ = 0;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;  // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace infertel::metrics
