#pragma once
// The agent: gateways in front of the engines, the telemetry pipelines behind them, and the
// admin address. Built from AgentOptions; runs until Stop().

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/settings.h"
#include "core/stats.h"
#include "engines/assembler.h"
#include "export/factory.h"
#include "gateway/gateway.h"
#include "http/connection_guard.h"
#include "http/simple_server.h"
#include "http/url.h"
#include "metrics/service.h"
#include "receiver/otlp_receiver.h"

namespace infertel {

struct AgentOptions {
  std::vector<gateway::UpstreamConfig> upstreams;
  http::HostPort admin{"127.0.0.1", 9464};
  http::ConnectionLimits admin_connections{.max_connections = 64};  // cap and read timeouts
  int threads = 0;  // gateway workers; 0: GatewayWorkers' default (gateway/gateway.h)
  std::size_t max_request_body = 32u << 20;
  std::size_t gateway_max_connections = 4096;  // client connections, every listener together
  exporting::ExportOptions exports;
  std::string default_service_name = "infertel";
  receiver::OtlpReceiverOptions receiver;  // where engines send their native spans
  engines::AssemblerOptions assembler;
  metrics::MetricsOptions metrics;  // scrape and OTLP export intervals
};

// Reads a YAML (or JSON) agent file into *options: `upstreams` (a list of name, engine,
// url, listen, pd_role) and `admin`. Export settings come from OTEL_* and flags. Returns
// false and *error naming the offending key on a bad file.
bool LoadAgentFile(const std::string& path, AgentOptions* options, std::string* error);

class Agent {
 public:
  Agent(AgentOptions options, config::Settings settings);
  ~Agent();

  // Adds a listener to every finished exchange (before Start); not owned.
  void AddExchangeListener(openai::ExchangeListener* listener) {
    extra_listeners_.push_back(listener);
  }
  // Serves admin requests whose target starts with `prefix` (before Start); the first
  // matching route wins, then the built-in /healthz and /metrics.
  void AddAdminRoute(std::string prefix, http::Handler handler) {
    admin_routes_.emplace_back(std::move(prefix), std::move(handler));
  }
  // Starts pipelines, gateways and the admin server; false and *error on failure.
  bool Start(std::string* error);
  // A graceful stop, first step: the gateways stop accepting (new connections are refused)
  // and close their idle connections; requests in flight go on, and so do the receivers. The
  // drain timeout (infertel.shutdown.drain-timeout-ms) counts from here. Idempotent.
  void StopAccepting();
  // Waits for the requests in flight up to the drain timeout (from StopAccepting, or from now
  // if it was not called), cuts the rest (span status ERROR, error.type "shutdown"), then
  // stops the receivers, the scraper and the admin address and flushes every exporter.
  void Stop();

  std::vector<std::uint16_t> GatewayPorts() const;
  // Forwards (true) or answers 503 (false) for upstream `index` (launch mode).
  void SetUpstreamReady(std::size_t index, bool ready);
  std::uint16_t AdminPort() const;
  std::uint16_t ReceiverGrpcPort() const;
  std::uint16_t ReceiverHttpPort() const;
  const AgentOptions& options() const { return options_; }
  // One line saying where telemetry goes (store path, OTLP endpoint and protocol).
  std::string ExportSummary() const;
  std::shared_ptr<config::ConfigStore> config() const { return config_; }
  StatsRegistry& stats() { return stats_; }
  // The agent's own resource (service.name and OTEL_RESOURCE_ATTRIBUTES), after Start.
  const Resource& resource() const;
  // The metric series (spec M3, M5); null before Start.
  metrics::MetricsService* metrics();
  // Waits until everything submitted so far has been exported (or the timeout passes).
  void Flush(std::chrono::milliseconds timeout);

  struct Impl;

 private:
  // Start's stages, in order; false with *error when a part could not start.
  bool StartSpanPath(std::string* error);  // assembler and OTLP receiver
  void StartMetrics();                     // metric store, scrapes, served-model probes
  bool StartGateway(std::string* error);   // gateway, its listeners, the engines' facts
  bool StartAdmin(std::string* error);     // the admin address

  AgentOptions options_;
  std::shared_ptr<config::ConfigStore> config_;
  StatsRegistry stats_;
  std::vector<openai::ExchangeListener*> extra_listeners_;
  std::vector<std::pair<std::string, http::Handler>> admin_routes_;
  // The one upstream whose engine sends request spans, if only one does: unmatched engine
  // spans are given its served model (empty: none, or several).
  std::string single_span_upstream_;
  std::unique_ptr<Impl> impl_;
  std::optional<std::chrono::steady_clock::time_point> drain_deadline_;
};

}  // namespace infertel
