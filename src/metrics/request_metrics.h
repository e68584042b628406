#pragma once
// Metrics measured at the gateway from finished exchanges (spec M3.1, M5): token usage by
// API-layer dimensions, TTFT, time per output token, end-to-end duration, SGLang's request
// and token totals and inter-token latency. SGLang's are thereby present whether or not the
// engine runs with --enable-metrics.
//
// Thread-safety: OnExchangeFinished runs on gateway workers concurrently; it reads one config
// snapshot and makes one MetricStore::Add call.

#include <memory>
#include <vector>

#include "config/settings.h"
#include "core/metric_families.h"
#include "gateway/exchange.h"
#include "metrics/store.h"

namespace infertel::metrics {

// Whether the agent reports metrics for an engine now: its plugin (C1) and its "collect
// metrics" switch (C3/C4) are both on.
bool MetricsEnabled(const config::Settings& settings, gateway::EngineKind engine);

// The counter deltas one exchange contributes. Requests that never ran on the engine
// (refused by the gateway, engine unreachable, rejected by the engine) contribute nothing;
// an aborted request counts as a request and with the tokens it streamed, but not in the
// durations of completed requests.
std::vector<MetricPoint> MeasureExchange(const gateway::Exchange& ex);

class RequestMetrics : public gateway::ExchangeListener {
 public:
  RequestMetrics(MetricStore* store, std::shared_ptr<config::ConfigStore> config)
      : store_(store), config_(std::move(config)) {}
  void OnExchangeFinished(const gateway::Exchange& ex) noexcept override;

 private:
  MetricStore* store_;
  std::shared_ptr<config::ConfigStore> config_;
};

}  // namespace infertel::metrics
