#pragma once
// The simulator's own OTLP span export, shaped like the OpenTelemetry Python SDK that vLLM
// uses (facts/vllm.md §1.1): an OTLP/gRPC or OTLP/HTTP-protobuf exporter behind a batch span
// processor configured by the standard OTEL_BSP_* variables. Deliberately independent of the
// agent's export code: the simulator stands in for a foreign process.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "core/telemetry.h"

namespace infertel::sim {

// Reads an environment variable; nullopt when unset. Tests inject their own.
using SimEnvFn = std::function<std::optional<std::string>(std::string_view)>;
SimEnvFn ProcessEnv();

// Sends one export request; blocking, called from the processor's worker thread only.
class SpanExporter {
 public:
  virtual ~SpanExporter() = default;
  // Returns false and sets *error when the request was not accepted.
  virtual bool Export(const TracesRequest& request, std::string* error) = 0;
};

// OTLP/gRPC TraceService.Export, plaintext (vLLM passes insecure=True). `endpoint` is
// `grpc://host:port`, `http://host:port` or `host:port`; a path is ignored. Null and *error
// for an endpoint that cannot be used (https, malformed).
std::unique_ptr<SpanExporter> MakeGrpcSpanExporter(std::string_view endpoint,
                                                   std::chrono::milliseconds timeout,
                                                   std::string* error);
// OTLP/HTTP with a protobuf body, POSTed to `url` exactly as given (no `/v1/traces` added).
std::unique_ptr<SpanExporter> MakeHttpSpanExporter(std::string_view url,
                                                   std::chrono::milliseconds timeout,
                                                   std::string* error);

struct BatchOptions {
  std::chrono::milliseconds schedule_delay{5000};   // OTEL_BSP_SCHEDULE_DELAY
  std::size_t max_export_batch_size = 512;          // OTEL_BSP_MAX_EXPORT_BATCH_SIZE
  std::size_t max_queue_size = 2048;                // OTEL_BSP_MAX_QUEUE_SIZE
  std::chrono::milliseconds export_timeout{30000};  // OTEL_BSP_EXPORT_TIMEOUT
};

// The exporter a vLLM process would build from its flag and environment:
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL (grpc | http/protobuf; anything else is an error naming
// the variable, as vLLM raises ValueError), OTEL_EXPORTER_OTLP_TRACES_TIMEOUT (ms, default
// 10000) and the OTEL_BSP_* variables. Returns null and *error on a bad configuration.
struct SpanExportConfig {
  std::unique_ptr<SpanExporter> exporter;
  BatchOptions batch;
  std::string protocol;
};
std::optional<SpanExportConfig> SpanExportConfigFromEnv(std::string_view endpoint,
                                                        const SimEnvFn& env, std::string* error);

// Queues finished spans and exports them in batches from one worker thread, like the Python
// SDK's BatchSpanProcessor: a batch goes out when max_export_batch_size spans are queued or
// schedule_delay has passed; spans arriving at a full queue are dropped; Shutdown() exports
// everything still queued.
//
// Thread-safety: OnEnd() may be called from any thread and never blocks on the network.
class BatchSpanProcessor {
 public:
  BatchSpanProcessor(std::unique_ptr<SpanExporter> exporter, Resource resource,
                     std::string scope_name, BatchOptions options);
  ~BatchSpanProcessor();
  BatchSpanProcessor(const BatchSpanProcessor&) = delete;
  BatchSpanProcessor& operator=(const BatchSpanProcessor&) = delete;

  void OnEnd(Span span);
  // Exports what is queued and stops the worker; idempotent.
  void Shutdown();

  std::uint64_t dropped() const;
  std::uint64_t exported() const;
  std::uint64_t failed() const;

 private:
  void Run();
  void ExportBatch(std::deque<Span>& batch);

  std::unique_ptr<SpanExporter> exporter_;
  Resource resource_;
  std::string scope_name_;
  BatchOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Span> queue_;
  bool done_ = false;
  std::uint64_t dropped_ = 0, exported_ = 0, failed_ = 0;
  std::thread worker_;
};

}  // namespace infertel::sim
