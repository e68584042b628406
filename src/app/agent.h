#pragma once
// The agent: gateways in front of the engines, the telemetry pipelines behind them, and the
// admin address. Built from AgentOptions; runs until Stop().

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/settings.h"
#include "core/stats.h"
#include "engines/assembler.h"
#include "export/factory.h"
#include "gateway/gateway.h"
#include "http/url.h"
#include "receiver/otlp_receiver.h"

namespace infertel {

struct AgentOptions {
  std::vector<gateway::UpstreamConfig> upstreams;
  http::HostPort admin{"127.0.0.1", 9464};
  int threads = 2;
  std::size_t max_request_body = 32u << 20;
  exporting::ExportOptions exports;
  std::string default_service_name = "infertel";
  receiver::OtlpReceiverOptions receiver;  // where engines send their native spans
  engines::AssemblerOptions assembler;
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
  void AddExchangeListener(gateway::ExchangeListener* listener) {
    extra_listeners_.push_back(listener);
  }
  // Starts pipelines, gateways and the admin server; false and *error on failure.
  bool Start(std::string* error);
  void Stop();

  std::vector<std::uint16_t> GatewayPorts() const;
  std::uint16_t AdminPort() const;
  std::uint16_t ReceiverGrpcPort() const;
  std::uint16_t ReceiverHttpPort() const;
  const AgentOptions& options() const { return options_; }
  // One line saying where telemetry goes (store path, OTLP endpoint and protocol).
  std::string ExportSummary() const;
  std::shared_ptr<config::ConfigStore> config() const { return config_; }
  StatsRegistry& stats() { return stats_; }
  // Waits until everything submitted so far has been exported (or the timeout passes).
  void Flush(std::chrono::milliseconds timeout);

  struct Impl;

 private:
  AgentOptions options_;
  std::shared_ptr<config::ConfigStore> config_;
  StatsRegistry stats_;
  std::vector<gateway::ExchangeListener*> extra_listeners_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace infertel
