// `infertel agent`: the gateway in front of an engine, with its telemetry pipelines.

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>

#include "app/agent.h"
#include "app/commands.h"
#include "app/signals.h"

namespace infertel {

namespace {

struct AgentFlags {
  std::string engine = "vllm";
  std::string upstream;
  std::string listen = "127.0.0.1:9000";
  std::string admin = "127.0.0.1:9464";
  std::string config_file;
  std::string pd_role = "none";
  exporting::ExportOptions exports;  // env first, then flags (AddExportFlags)
  int threads = 2;
  std::size_t max_body = 32u << 20;
  int export_delay_ms = -1;
  std::string receiver_grpc = "127.0.0.1:4317";
  std::string receiver_http = "127.0.0.1:4318";
  std::string engine_version = "auto";
  int data_parallel_size = 1;
  int join_window_ms = 3000;
};

[[noreturn]] void Fail(int code, const std::string& message) {
  std::fprintf(stderr, "infertel agent: %s\n", message.c_str());
  throw CLI::RuntimeError(code);
}

void Run(const AgentFlags& f) {
  AgentOptions opts;
  std::string error;
  if (!f.config_file.empty() && !LoadAgentFile(f.config_file, &opts, &error)) Fail(2, error);
  auto env = config::ProcessEnv();
  opts.exports = f.exports;
  if (f.export_delay_ms >= 0)
    opts.exports.batch.max_delay = std::chrono::milliseconds(f.export_delay_ms);
  const std::string& proto = opts.exports.otlp_protocol;
  if (proto != "grpc" && proto != "http/protobuf" && proto != "http/json") {
    Fail(2, fmt::format("--otlp-protocol: expected grpc, http/protobuf or http/json, got '{}'",
                        proto));
  }

  if (!f.upstream.empty()) {
    gateway::UpstreamConfig uc;
    if (f.engine == "vllm") {
      uc.engine = gateway::EngineKind::kVllm;
    } else if (f.engine == "sglang") {
      uc.engine = gateway::EngineKind::kSglang;
    } else {
      Fail(2, "--engine: expected vllm or sglang");
    }
    auto url = http::ParseUrl(f.upstream);
    if (!url) Fail(2, fmt::format("--upstream: expected http://HOST:PORT, got '{}'", f.upstream));
    uc.url = *url;
    auto listen = http::ParseHostPort(f.listen);
    if (!listen) Fail(2, fmt::format("--listen: expected HOST:PORT, got '{}'", f.listen));
    uc.listen = *listen;
    uc.pd_role = f.pd_role;
    uc.engine_version = f.engine_version;
    uc.data_parallel_size = f.data_parallel_size;
    uc.name = "default";
    opts.upstreams.insert(opts.upstreams.begin(), uc);
  }
  if (opts.upstreams.empty())
    Fail(2, "no upstream: give --upstream URL or a --config file with upstreams");
  auto admin = http::ParseHostPort(f.admin);
  if (!admin) Fail(2, fmt::format("--admin: expected HOST:PORT, got '{}'", f.admin));
  opts.admin = *admin;
  opts.threads = f.threads;
  opts.max_request_body = f.max_body;
  // "off" (or an empty value) disables a receiver listener.
  opts.receiver.grpc_address = f.receiver_grpc == "off" ? "" : f.receiver_grpc;
  opts.receiver.http_address = f.receiver_http == "off" ? "" : f.receiver_http;
  opts.assembler.join_window = std::chrono::milliseconds(f.join_window_ms);

  auto resolved = config::Resolve(env);
  if (!resolved.errors.empty()) {
    for (const auto& e : resolved.errors) std::fprintf(stderr, "infertel agent: %s\n", e.c_str());
    Fail(2, "invalid configuration");
  }

  BlockTerminationSignals();
  Agent agent(std::move(opts), std::move(resolved.settings));
  if (!agent.Start(&error)) Fail(1, error);
  auto ports = agent.GatewayPorts();
  const auto& ups = agent.options().upstreams;
  for (std::size_t i = 0; i < ports.size(); ++i) {
    std::printf("infertel agent: gateway listening on http://%s:%u (engine %s at %s)\n",
                ups[i].listen.host.c_str(), ports[i],
                std::string(gateway::EngineKindName(ups[i].engine)).c_str(),
                ups[i].url.HostPort().c_str());
  }
  std::printf("infertel agent: admin listening on http://%s:%u\n",
              agent.options().admin.host.c_str(), agent.AdminPort());
  if (agent.ReceiverGrpcPort() != 0) {
    std::printf("infertel agent: OTLP gRPC receiver listening on %s:%u\n",
                http::ParseHostPort(agent.options().receiver.grpc_address)->host.c_str(),
                agent.ReceiverGrpcPort());
  }
  if (agent.ReceiverHttpPort() != 0) {
    std::printf("infertel agent: OTLP HTTP receiver listening on http://%s:%u\n",
                http::ParseHostPort(agent.options().receiver.http_address)->host.c_str(),
                agent.ReceiverHttpPort());
  }
  std::printf("infertel agent: exporting to %s\n", agent.ExportSummary().c_str());
  std::fflush(stdout);
  WaitForTerminationSignal();
  agent.Stop();
}

}  // namespace

void AddAgentCommand(CLI::App& app) {
  auto flags = std::make_shared<AgentFlags>();
  CLI::App* sub =
      app.add_subcommand("agent", "Run the gateway and telemetry pipelines in front of an engine");
  sub->add_option("--engine", flags->engine, "Engine kind of --upstream: vllm or sglang")
      ->capture_default_str();
  sub->add_option("--upstream", flags->upstream, "Engine URL, e.g. http://127.0.0.1:8000");
  sub->add_option("--listen", flags->listen, "Gateway address HOST:PORT for clients")
      ->capture_default_str();
  sub->add_option("--admin", flags->admin, "Admin address HOST:PORT (/healthz, /metrics)")
      ->capture_default_str();
  sub->add_option("--config", flags->config_file,
                  "Agent file (YAML): upstreams, admin, store, otlp");
  sub->add_option("--pd-role", flags->pd_role, "PD role of --upstream: producer, consumer or none")
      ->check(CLI::IsMember({"producer", "consumer", "none"}))
      ->capture_default_str();
  std::vector<std::string> env_errors;
  flags->exports = exporting::FromEnv(config::ProcessEnv(), &env_errors);
  for (const auto& e : env_errors) std::fprintf(stderr, "infertel agent: %s\n", e.c_str());
  exporting::AddExportFlags(*sub, &flags->exports);
  sub->add_option("--threads", flags->threads, "Gateway worker threads")->capture_default_str();
  sub->add_option("--max-body-bytes", flags->max_body, "Request body limit (413 above it)")
      ->capture_default_str();
  sub->add_option("--export-delay-ms", flags->export_delay_ms, "Batching delay before an export");
  sub->add_option("--receiver-grpc", flags->receiver_grpc,
                  "OTLP gRPC receiver for engine spans, HOST:PORT or off")
      ->capture_default_str();
  sub->add_option("--receiver-http", flags->receiver_http,
                  "OTLP HTTP receiver (/v1/traces, protobuf or JSON), HOST:PORT or off")
      ->capture_default_str();
  sub->add_option("--engine-version", flags->engine_version,
                  "vLLM span shape of --upstream: auto (from spans and /version), v0 or v1")
      ->check(CLI::IsMember({"auto", "v0", "v1"}))
      ->capture_default_str();
  sub->add_option("--data-parallel-size", flags->data_parallel_size,
                  "Engine cores behind --upstream (vLLM data parallelism)")
      ->capture_default_str();
  sub->add_option("--join-window-ms", flags->join_window_ms,
                  "How long an engine span waits for its request to finish at the gateway")
      ->capture_default_str();
  sub->callback([flags] { Run(*flags); });
}

}  // namespace infertel
