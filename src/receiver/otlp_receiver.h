#pragma once
// The agent's OTLP receiver: engines (vLLM --otlp-traces-endpoint, SGLang --enable-trace) and any
// other OTLP emitter send traces, logs and metrics here, over OTLP/gRPC and OTLP/HTTP (protobuf
// or JSON, optionally gzip). Every accepted request is handed by move to the signal's sink;
// spans and log records OTLP calls invalid are removed and reported back as a partial success.
//
// gRPC: opentelemetry.proto.collector.{trace,logs,metrics}.v1 Export, served by an HTTP/2 server
// over nghttp2 (grpc_session.h, grpc_connection.h) on a thread of its own, bounded by
// OtlpReceiverOptions::grpc (docs/limits.md); undecodable payloads are counted (INVALID_ARGUMENT),
// messages over max_message_bytes are refused from their prefix (RESOURCE_EXHAUSTED, counted).
// Handlers never block (decode, validate, Submit); a call waiting for room (saturated_wait) is
// resumed on the connection's thread. HTTP: POST /v1/traces, /v1/logs, /v1/metrics on a Boost.Beast
// server with its own io_context and `threads` threads, keep-alive. Status codes: 200 (also for
// partial success), 400 malformed body or every item invalid (body: google.rpc.Status, protobuf or
// JSON like the request), 404 unknown path, 405 not POST, 413 body or inflated body above
// max_message_bytes, 415 unsupported Content-Type or Content-Encoding. Undecodable bodies (400),
// 413 and 415 count as malformed requests of the path's signal; a 400 because every item was
// invalid counts the items as refused; 404 and 405 are not counted (no signal, or not an export
// attempt). Empty ids: an OTLP/JSON span without traceId/spanId decodes with empty ids, which OTLP
// calls invalid; it is refused and counted (refused_items), never forwarded, never given a made-up
// id.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/stats.h"
#include "http/connection_guard.h"
#include "receiver/grpc_limits.h"
#include "receiver/ingest.h"
#include "receiver/span_limits.h"

namespace infertel::receiver {

namespace internal {
class GrpcFrontend;
class HttpFrontend;
}  // namespace internal

struct OtlpReceiverOptions {
  std::string grpc_address = "127.0.0.1:4317";  // HOST:PORT, port 0 = any; empty = no gRPC
  std::string http_address = "127.0.0.1:4318";  // HOST:PORT, port 0 = any; empty = no HTTP
  // Largest request accepted: the gRPC message, the HTTP body as sent and after gunzip.
  std::size_t max_message_bytes = 16u << 20;
  int threads = 1;  // HTTP io_context threads
  // OTLP/HTTP connections: cap and read timeouts (http/connection_guard.h).
  http::ConnectionLimits http_connections{.max_connections = 256};
  // How long a request that finds its signal's export queues full waits for room before it is
  // answered "retry later" (0: at once). A burst that drains within it costs the sender a short
  // delay instead of its exporter's backoff (1 s and more, during which the engine's own span
  // queue fills and drops); an HTTP body waits unread in the kernel meanwhile. At most
  // 16 requests per transport (kMaxWaiting) wait at once; further ones are refused at once.
  std::chrono::milliseconds saturated_wait{250};
  // The OpenTelemetry span limits applied to received spans (receiver/span_limits.h); the
  // agent reads them from OTEL_*_LIMIT variables.
  SpanLimits span_limits;
  GrpcServerLimits grpc;  // the gRPC listener's bounds (docs/limits.md, "OTLP/gRPC receiver")
};

// Thread-safety: Start/Stop from one controlling thread; the accessors from any thread.
class OtlpReceiver {
 public:
  // `sinks.traces` must be non-null; the sinks must outlive the receiver (or its Stop()).
  OtlpReceiver(OtlpReceiverOptions options, ReceiverSinks sinks);
  ~OtlpReceiver();  // Stop()
  OtlpReceiver(const OtlpReceiver&) = delete;
  OtlpReceiver& operator=(const OtlpReceiver&) = delete;

  // Binds the enabled listeners and starts serving. False and *error (naming the address) when
  // an address is malformed or cannot be bound; nothing is left running then.
  bool Start(std::string* error);
  // Stops accepting, cancels calls in flight (gRPC waits up to 1 s for them) and joins the
  // threads. Idempotent. No Submit() happens after it returns.
  void Stop();

  // The ports actually bound (useful with port 0); 0 when the listener is off or not started.
  std::uint16_t grpc_port() const { return grpc_port_; }
  std::uint16_t http_port() const { return http_port_; }

  const ReceiverStats& stats() const { return stats_; }
  // Registers the infertel_receiver_* series; the receiver must outlive the registry's use.
  void RegisterStats(StatsRegistry* registry) const {
    stats_.Register(registry);
    grpc_stats_.Register(registry);
  }
  const GrpcStats& grpc_stats() const { return grpc_stats_; }

 private:
  OtlpReceiverOptions options_;
  ReceiverStats stats_;
  GrpcStats grpc_stats_;
  Ingestor ingestor_;
  std::unique_ptr<internal::GrpcFrontend> grpc_;
  std::unique_ptr<internal::HttpFrontend> http_;
  std::uint16_t grpc_port_ = 0;
  std::uint16_t http_port_ = 0;
};

}  // namespace infertel::receiver
