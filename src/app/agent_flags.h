#pragma once
// The agent's command-line flags, shared by `infertel agent` and `infertel launch`, and
// starting an agent from them.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "app/agent.h"
#include "console/console_service.h"
#include "engines/registry.h"
#include "export/factory.h"

namespace CLI {
class App;
}

namespace infertel {

struct AgentFlags {
  std::string engine{engines::Profile(EngineId{}).name()};  // the registry's first
  std::string upstream;
  std::string listen = "127.0.0.1:9000";
  std::string admin;  // empty: the agent file's `admin`, else AgentOptions' 127.0.0.1:9464
  std::string config_file;
  std::string pd_role = "none";
  exporting::ExportOptions exports;  // env first, then flags (AddExportFlags)
  int threads = 0;  // 0: one gateway worker per CPU the agent may run on, at most 2
  std::size_t max_body = 32u << 20;
  int export_delay_ms = -1;
  std::string receiver_grpc = "127.0.0.1:4317";
  std::string receiver_http = "127.0.0.1:4318";
  std::string engine_version = "auto";
  int data_parallel_size = 1;
  int join_window_ms = 3000;
  int receiver_wait_ms = 250;  // OtlpReceiverOptions::saturated_wait
  // http::ConnectionLimits of the OTLP/HTTP receiver and the admin address.
  std::size_t receiver_http_max_connections = 256;
  std::size_t admin_max_connections = 64;
  std::size_t gateway_max_connections = 4096;
  int http_idle_timeout_ms = 60'000;
  int http_header_timeout_ms = 10'000;
  int http_body_timeout_ms = 30'000;
  receiver::GrpcServerLimits grpc_limits;  // --receiver-grpc-* (durations and sizes below)
  int grpc_idle_timeout_ms = 60'000;
  int grpc_handshake_timeout_ms = 10'000;
  std::size_t grpc_buffer_mb = 64;
  // Inside a received value: elements of one array or key-value list, and their nesting.
  std::uint32_t value_elements = receiver::SpanLimits{}.value_element_count;
  std::uint32_t value_depth = receiver::SpanLimits{}.value_depth;
  std::string scrape_interval = "5s";
  std::string scrape_timeout = "3s";
  std::string metrics_url;
  std::string metric_export_interval;     // default: OTEL_METRIC_EXPORT_INTERVAL, else 60s
  std::size_t scrape_max_series = 10000;  // metrics::ScrapeLimits
  std::string scrape_stale_after = "5m";
  std::size_t metric_model_cap = 100;  // metrics::LabelBoundOptions::cap
  std::string console_file;
  std::string console_url;
  int console_url_interval_ms = 5000;
  std::string admin_token;  // default: INFERTEL_ADMIN_TOKEN
  // The flags that stand for live keys (upstream timeouts, drain); -1: not given.
  std::int64_t upstream_connect_timeout_ms = -1;
  std::int64_t upstream_first_byte_timeout_ms = -1;
  std::int64_t upstream_idle_timeout_ms = -1;
  std::int64_t drain_timeout_ms = -1;
};

// Registers every agent flag on `sub`.
void AddAgentFlags(CLI::App* sub, AgentFlags* flags);

// A started agent with its console.
struct AgentRun {
  std::unique_ptr<Agent> agent;
  std::unique_ptr<console::ConsoleService> console;
  // Acts on a signal other than SIGINT/SIGTERM/SIGCHLD (app/signals.h): SIGHUP reloads the
  // console's sources, the others are logged and ignored.
  void OnControlSignal(int sig);
  // Drains and stops (Agent::Stop), then stops the console.
  void Stop();
};

// Builds the agent's options from the flags, lets `adjust` change them (launch mode adds its
// upstream there), and starts the agent and its console. On bad flags or a failed start it
// prints "<who>: <why>" and throws CLI::RuntimeError with the exit code.
std::unique_ptr<AgentRun> StartAgentFromFlags(const AgentFlags& flags, std::string_view who,
                                              const std::function<void(AgentOptions&)>& adjust);
// Prints where the gateway, admin address and receivers listen (tests wait for these lines).
void PrintAgentAddresses(Agent& agent, std::string_view who);

}  // namespace infertel
