// `infertel agent`: the gateway in front of an engine, with its telemetry pipelines.

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <spdlog/spdlog.h>

#include <unistd.h>
#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <utility>
#include <vector>

#include "app/agent.h"
#include "app/agent_flags.h"
#include "app/agent_options.h"
#include "app/commands.h"
#include "app/signals.h"
#include "app/ui_routes.h"
#include "console/console_service.h"
#include "core/cpus.h"
#include "core/otel_env.h"
#include "engines/registry.h"

namespace infertel {

namespace {

std::string g_who = "infertel agent";  // prefix of messages: the running command

[[noreturn]] void FailAgent(int code, const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", g_who.c_str(), message.c_str());
  throw CLI::RuntimeError(code);
}

}  // namespace

// --upstream and the flags that describe it: the first upstream, before the agent file's.
void AddUpstreamFlag(const AgentFlags& f, AgentOptions* opts) {
  if (f.upstream.empty()) return;
  gateway::UpstreamConfig uc;
  auto engine = engines::FindEngine(f.engine);
  if (!engine) FailAgent(2, fmt::format("--engine: expected {}", engines::EngineNames()));
  uc.engine = *engine;
  auto url = http::ParseUrl(f.upstream);
  if (!url)
    FailAgent(2, fmt::format("--upstream: expected http://HOST:PORT, got '{}'", f.upstream));
  uc.url = *url;
  auto listen = http::ParseHostPort(f.listen);
  if (!listen) FailAgent(2, fmt::format("--listen: expected HOST:PORT, got '{}'", f.listen));
  uc.listen = *listen;
  uc.pd_role = f.pd_role;
  uc.engine_version = f.engine_version;
  uc.data_parallel_size = f.data_parallel_size;
  uc.name = "default";
  uc.metrics_url = f.metrics_url;
  opts->upstreams.insert(opts->upstreams.begin(), uc);
}

// The gateway's threads and bounds, the receivers' addresses and bounds, the join window.
void ApplyServingFlags(const AgentFlags& f, AgentOptions* o) {
  AgentOptions& opts = *o;
  opts.threads = f.threads;
  opts.max_request_body = f.max_body;
  opts.gateway_max_connections = f.gateway_max_connections;
  // "off" (or an empty value) disables a receiver listener.
  opts.receiver.grpc_address = f.receiver_grpc == "off" ? "" : f.receiver_grpc;
  opts.receiver.http_address = f.receiver_http == "off" ? "" : f.receiver_http;
  opts.assembler.join_window = std::chrono::milliseconds(f.join_window_ms);
  opts.receiver.saturated_wait = std::chrono::milliseconds(f.receiver_wait_ms);
  for (auto [limits, cap] :
       {std::pair{&opts.receiver.http_connections, f.receiver_http_max_connections},
        std::pair{&opts.admin_connections, f.admin_max_connections}}) {
    limits->max_connections = cap;
    limits->idle_timeout = std::chrono::milliseconds(f.http_idle_timeout_ms);
    limits->header_timeout = std::chrono::milliseconds(f.http_header_timeout_ms);
    limits->body_timeout = std::chrono::milliseconds(f.http_body_timeout_ms);
  }
  opts.receiver.grpc = f.grpc_limits;
  opts.receiver.grpc.idle_timeout = std::chrono::milliseconds(f.grpc_idle_timeout_ms);
  opts.receiver.grpc.handshake_timeout = std::chrono::milliseconds(f.grpc_handshake_timeout_ms);
  opts.receiver.grpc.max_buffered_bytes = f.grpc_buffer_mb << 20;
  opts.receiver.span_limits.value_element_count = f.value_elements;
  opts.receiver.span_limits.value_depth = f.value_depth;
}

// The scrape and metric export flags. A bare number is refused: "2000" would be read as seconds
// by one reader and as milliseconds by another (OTEL_METRIC_EXPORT_INTERVAL is in milliseconds).
void ApplyMetricFlags(const AgentFlags& f, metrics::MetricsOptions* m) {
  auto duration = [](const std::string& flag, const std::string& text) {
    auto d = exporting::ParseDuration(text);
    const bool has_unit = !text.empty() && std::isalpha(static_cast<unsigned char>(text.back()));
    if (!d || d->count() <= 0 || !has_unit)
      FailAgent(2,
                fmt::format("{}: expected a duration with its unit, such as 5s or 500ms, got '{}'",
                            flag, text));
    return *d;
  };
  m->scrape_interval = duration("--scrape-interval", f.scrape_interval);
  m->scrape_timeout = duration("--scrape-timeout", f.scrape_timeout);
  m->scrape_limits.max_series = f.scrape_max_series;
  m->scrape_limits.stale_after = duration("--scrape-stale-after", f.scrape_stale_after);
  m->model_bound.cap = f.metric_model_cap;
  constexpr std::chrono::milliseconds kMinExport{100}, kMaxExport{24 * 3600 * 1000};
  if (!f.metric_export_interval.empty()) {
    m->export_interval = duration("--metric-export-interval", f.metric_export_interval);
    if (m->export_interval < kMinExport || m->export_interval > kMaxExport)
      FailAgent(2, fmt::format("--metric-export-interval: expected from 100ms to 24h, got '{}'",
                               f.metric_export_interval));
  } else if (const char* v = std::getenv(otel_env::kMetricExportInterval.data())) {
    // The SDK variable is in milliseconds.
    std::int64_t ms = 0;
    const std::string_view text(v);
    auto [end, err] = std::from_chars(text.data(), text.data() + text.size(), ms);
    if (err != std::errc() || end != text.data() + text.size() || ms < kMinExport.count() ||
        ms > kMaxExport.count()) {
      FailAgent(2, fmt::format("{}: expected milliseconds from 100 to 86400000, got '{}'",
                               otel_env::kMetricExportInterval, v));
    }
    m->export_interval = std::chrono::milliseconds(ms);
  }
}

// The console: env < console file < console URL < admin API (docs/configuration.md).
console::ConsoleOptions ConsoleOptionsFrom(const AgentFlags& f, const config::EnvLookup& env,
                                           const http::HostPort& admin) {
  console::ConsoleOptions copts;
  copts.file = f.console_file;
  copts.url = f.console_url;
  copts.url_interval = std::chrono::milliseconds(std::max(100, f.console_url_interval_ms));
  copts.admin_token = f.admin_token;
  if (copts.admin_token.empty()) copts.admin_token = env("INFERTEL_ADMIN_TOKEN").value_or("");
  if (!http::IsLoopbackHost(admin.host) && copts.admin_token.empty()) {
    FailAgent(2, fmt::format("the admin address {} is not loopback: give --admin-token or "
                             "INFERTEL_ADMIN_TOKEN (the config API needs a bearer token there)",
                             admin.host));
  }
  return copts;
}

std::unique_ptr<AgentRun> StartAgentFromFlags(const AgentFlags& f, std::string_view who,
                                              const std::function<void(AgentOptions&)>& adjust) {
  g_who = std::string(who);
  AgentOptions opts;
  std::string error;
  if (!f.config_file.empty() && !LoadAgentFile(f.config_file, &opts, &error)) FailAgent(2, error);
  auto env = KeyFlagsOverEnv(config::ProcessEnv(), f);
  opts.exports = f.exports;
  // Where the store goes, said before anything is written there.
  auto store_line =
      exporting::ResolveStorePath(&opts.exports, config::ProcessEnv(), ::geteuid() == 0, &error);
  if (!store_line) FailAgent(2, error);
  if (!store_line->empty()) {
    std::printf("%s: %s\n", g_who.c_str(), store_line->c_str());
    std::fflush(stdout);
  }
  if (f.export_delay_ms >= 0)
    opts.exports.batch.max_delay = std::chrono::milliseconds(f.export_delay_ms);
  // With one CPU's worth for the whole agent the store's lane and the gateway take turns on it:
  // the lane then pauses in proportion to its work (pipeline/pacer.h).
  if (CpuBudget() <= 1) {
    opts.exports.batch.pacing = pipeline::PaceRule::kInProportion;
    if (opts.exports.store_enabled) {
      std::printf(
          "%s: one CPU for the agent (its affinity or its cgroup's quota): the store's "
          "writes pause in proportion to their work, to leave the core to the gateway\n",
          g_who.c_str());
      std::fflush(stdout);
    }
  }
  const std::string& proto = opts.exports.otlp_protocol;
  if (proto != "grpc" && proto != "http/protobuf" && proto != "http/json") {
    FailAgent(2, fmt::format("--otlp-protocol: expected grpc, http/protobuf or http/json, got '{}'",
                             proto));
  }

  AddUpstreamFlag(f, &opts);
  if (adjust) adjust(opts);
  if (opts.upstreams.empty())
    FailAgent(2, "no upstream: give --upstream URL or a --config file with upstreams");
  // Flag over the agent file over the default.
  if (!ApplyAdminFlag(f.admin, &opts.admin))
    FailAgent(2, fmt::format("--admin: expected HOST:PORT, got '{}'", f.admin));
  ApplyServingFlags(f, &opts);
  ApplyMetricFlags(f, &opts.metrics);
  const console::ConsoleOptions copts = ConsoleOptionsFrom(f, env, opts.admin);
  std::vector<console::KnobUpstream> knob_upstreams;
  for (const auto& u : opts.upstreams) knob_upstreams.push_back({u.name, u.engine, u.url});
  auto console = console::ConsoleService::Create(copts, env, knob_upstreams, &error);
  if (!console) FailAgent(2, error);

  const std::string store_path = opts.exports.store_enabled ? opts.exports.store_path : "";
  auto run = std::make_unique<AgentRun>();
  run->agent = std::make_unique<Agent>(std::move(opts), console->InitialSettings());
  Agent& agent = *run->agent;
  auto config_api = console->AdminHandler();
  agent.AddAdminRoute(std::string(console::kApiPrefix), config_api);
  // The web UI and the store's JSON API, under the same token as the config API.
  if (!store_path.empty()) AddUiRoutes(agent, store_path, copts.admin_token, config_api);
  if (!agent.Start(&error)) FailAgent(1, error);
  console->RegisterStats(&agent.stats());
  console->Start(agent.config());
  run->console = std::move(console);
  return run;
}

void PrintAgentAddresses(Agent& agent, std::string_view who) {
  auto ports = agent.GatewayPorts();
  const auto& ups = agent.options().upstreams;
  for (std::size_t i = 0; i < ports.size(); ++i) {
    std::printf("%s: gateway listening on http://%s:%u (engine %s at %s)\n",
                std::string(who).c_str(), ups[i].listen.host.c_str(), ports[i],
                std::string(engines::Profile(ups[i].engine).name()).c_str(),
                ups[i].url.HostPort().c_str());
  }
  std::printf("%s: admin listening on http://%s:%u\n", std::string(who).c_str(),
              agent.options().admin.host.c_str(), agent.AdminPort());
  if (agent.options().exports.store_enabled) {
    std::printf("%s: web UI on http://%s:%u/ui/\n", std::string(who).c_str(),
                agent.options().admin.host.c_str(), agent.AdminPort());
  }
  if (agent.ReceiverGrpcPort() != 0) {
    std::printf("%s: OTLP gRPC receiver listening on %s:%u\n", std::string(who).c_str(),
                http::ParseHostPort(agent.options().receiver.grpc_address)->host.c_str(),
                agent.ReceiverGrpcPort());
  }
  if (agent.ReceiverHttpPort() != 0) {
    std::printf("%s: OTLP HTTP receiver listening on http://%s:%u\n", std::string(who).c_str(),
                http::ParseHostPort(agent.options().receiver.http_address)->host.c_str(),
                agent.ReceiverHttpPort());
  }
  std::printf("%s: exporting to %s\n", std::string(who).c_str(), agent.ExportSummary().c_str());
  std::fflush(stdout);
}

void AgentRun::OnControlSignal(int sig) {
  const char* name = sigabbrev_np(sig);
  if (ActionOf(sig) == SignalAction::kReload && console) {
    spdlog::info("SIG{} received: reading the console file and polling the console URL again",
                 name);
    console->Reload();
  } else {
    spdlog::info("SIG{} received: ignored (SIGINT or SIGTERM stops the agent)", name);
  }
}

void AgentRun::Stop() {
  // The console keeps serving /api/config while requests drain; it stops last.
  if (agent) agent->Stop();
  if (console) console->Stop();
}

void AddAgentFlags(CLI::App* sub, AgentFlags* flags) {
  AddAgentTableOptions(sub, flags);
  std::vector<std::string> env_errors;
  flags->exports = exporting::FromEnv(config::ProcessEnv(), &env_errors);
  for (const auto& e : env_errors) std::fprintf(stderr, "infertel: %s\n", e.c_str());
  exporting::AddExportFlags(*sub, &flags->exports);
}

void AddAgentCommand(CLI::App& app) {
  auto flags = std::make_shared<AgentFlags>();
  CLI::App* sub =
      app.add_subcommand("agent", "Run the gateway and telemetry pipelines in front of an engine");
  AddAgentFlags(sub, flags.get());
  sub->callback([flags] {
    BlockHandledSignals();
    auto run = StartAgentFromFlags(*flags, "infertel agent", {});
    PrintAgentAddresses(*run->agent, "infertel agent");
    for (;;) {
      const int sig = WaitForHandledSignal(std::chrono::seconds(1));
      const SignalAction action = ActionOf(sig);
      if (action == SignalAction::kStop) {
        spdlog::info("SIG{} received: stopping", sigabbrev_np(sig));
        break;
      }
      if (action == SignalAction::kReload || action == SignalAction::kIgnore)
        run->OnControlSignal(sig);
    }
    run->Stop();
    spdlog::info("stopped: requests drained, exporters flushed");
  });
}

}  // namespace infertel
