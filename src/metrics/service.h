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
#include "core/stats.h"
#include "core/telemetry.h"
#include "gateway/exchange.h"
#include "metrics/request_metrics.h"
#include "metrics/store.h"
#include "pipeline/exporter.h"

namespace infertel::metrics {

struct MetricsOptions {
  std::chrono::milliseconds scrape_interval{5000};
  std::chrono::milliseconds scrape_timeout{3000};
  // OTLP export interval (OTEL_METRIC_EXPORT_INTERVAL, default 60 s as in the SDKs).
  std::chrono::milliseconds export_interval{60000};
};

struct ScrapeTarget {
  std::string upstream;  // source name in the store
  gateway::EngineKind engine = gateway::EngineKind::kVllm;
  std::string url;              // full URL of the engine's /metrics; "" = not scraped
  std::string generation_hint;  // vLLM: "v0", "v1", or "" (detected from the exposition)
};

// Per-target scrape counters, for infertel's self-metrics.
struct ScrapeStats {
  std::atomic<std::uint64_t> scrapes{0};
  std::atomic<std::uint64_t> failures{0};
  std::atomic<std::uint64_t> malformed_lines{0};
  std::atomic<std::uint64_t> counter_resets{0};
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

  gateway::ExchangeListener* listener() { return &request_metrics_; }
  MetricStore& store() { return store_; }

  // Series of the engines whose metric reporting is on now (C1 and C3/C4 switches).
  std::vector<MetricPoint> Snapshot() const;
  std::string RenderPrometheus() const;

  // One pass over every target / one export (the threads call these; so can tests).
  void ScrapeOnce();
  void ExportOnce();
  // The last scrape error per target ("" when fine), for status pages and tests.
  std::string LastError(std::string_view upstream) const;

  void RegisterStats(StatsRegistry* stats);

 private:
  struct Target;
  void ScrapeTarget_(Target& t, const config::Settings& settings);
  void Loop(std::chrono::milliseconds interval, void (MetricsService::*fn)());

  MetricsOptions options_;
  std::shared_ptr<config::ConfigStore> config_;
  pipeline::MetricSink* sink_;
  Resource resource_;
  std::string version_;
  MetricStore store_;
  RequestMetrics request_metrics_;
  std::vector<std::unique_ptr<Target>> targets_;
  std::uint64_t start_unix_nano_ = 0;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;  // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace infertel::metrics
