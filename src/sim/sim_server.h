#pragma once
// The engine simulator as an in-process server (used by `infertel sim`, the demo and the
// benchmarks): an engine model with its step thread behind an engine's HTTP surface, served
// on its own io_context threads.
//
// Thread-safety: Start/Stop/port are called from the owning thread; the server runs on its
// own threads.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "sim/engine/engine.h"
#include "sim/otlp/span_exporter.h"
#include "sim/sglang/sglang_options.h"

namespace infertel::sim {

struct SimOptions {
  std::string engine = "vllm";  // "vllm" or "sglang"
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;  // 0: chosen by the OS
  std::string model = "demo-model";
  std::string engine_version = "v1";  // vLLM: "v1" (0.11-era) or "v0" (0.7-era)
  bool enable_prompt_tokens_details = false;
  int io_threads = 2;
  EngineConfig engine_config;
  // V1 mode: the vLLM release imitated (/version, metric names by deprecation state).
  std::string vllm_version = "0.11.0";
  std::string show_hidden_metrics_for_version;  // vLLM's --show-hidden-metrics-for-version
  // Native OTLP spans (vLLM's --otlp-traces-endpoint); empty: tracing off. The protocol and
  // batching come from the environment (OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, OTEL_BSP_*).
  std::string otlp_traces_endpoint;
  // vLLM's --collect-detailed-traces: comma list of model, worker, all (V0 shape only).
  std::string collect_detailed_traces;
  // Imitates vLLM releases that lose the incoming trace context: `traceparent` and
  // `tracestate` are ignored, so every native span is the root of a new trace.
  bool drop_trace_context = false;
  // PD role (vLLM's kv_transfer_config.kv_role): "", kv_producer, kv_consumer or kv_both.
  // Either directly or from a --kv-transfer-config JSON object.
  std::string kv_role;
  std::string kv_transfer_config;
  // Environment lookup (OTEL_*, SGLANG_*); null: the process environment.
  SimEnvFn env;
  // SGLang mode (engine == "sglang"): its server arguments. Tracing uses
  // sglang.otlp_traces_endpoint, else otlp_traces_endpoint, else SGLang's localhost:4317.
  SglangSimOptions sglang;
  // SGLang mode: where request logs go (null: stderr).
  std::function<void(const std::string&)> log_sink;
};

class SimServer {
 public:
  // Starts the engine and the HTTP server. Returns null and sets *error on bad options or
  // when the address cannot be bound.
  static std::unique_ptr<SimServer> Start(const SimOptions& options, std::string* error);
  ~SimServer();
  std::uint16_t port() const;
  // Stops serving and the engine; idempotent.
  void Stop();
  // vLLM's --shutdown-timeout: stops accepting, then waits up to `timeout` for the requests
  // being served to finish (before Stop()).
  void Drain(std::chrono::milliseconds timeout);
  // The engine, for introspection in tests.
  Engine& engine();
  // The effective PD role ("" when none).
  const std::string& kv_role() const;
  // SGLang mode: the live trace level (-1 in vLLM mode).
  int sglang_trace_level() const;

 private:
  SimServer() = default;
  static std::unique_ptr<SimServer> StartSglang(const SimOptions& options, std::string* error);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace infertel::sim
