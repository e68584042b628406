#pragma once
// Internal to the receiver: the gRPC and HTTP front ends of OtlpReceiver. Each decodes requests
// for its transport, passes them to the shared Ingestor and answers the sender.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <array>

#include "http/connection_guard.h"
#include "receiver/ingest.h"
#include "receiver/otlp_receiver.h"
#include "receiver/room_waiter.h"

namespace infertel::receiver::internal {

// The answer to a request refused while the export queues are full (Ingestor::Throttle).
inline constexpr std::string_view kThrottledMessage =
    "the agent's export queues are full; retry later";
// When a refused exporter should try again, in seconds: HTTP's `Retry-After`, and over gRPC
// the `google.rpc.retryinfo-bin` trailer (a RetryInfo), which OpenTelemetry's Python gRPC
// exporter (vLLM's and SGLang's) waits for instead of its own 1, 2, 4… s backoff.
inline constexpr int kRetryAfterSeconds = 1;
inline constexpr std::string_view kRetryInfoTrailer = "google.rpc.retryinfo-bin";
// google.rpc.RetryInfo{retry_delay: google.protobuf.Duration{seconds: s}} on the wire, for
// 0 < s < 128 (a one-byte varint): field 1 of each, length-delimited then varint.
constexpr std::array<char, 4> RetryInfoBytes(int seconds) {
  return {'\x0a', '\x02', '\x08', static_cast<char>(seconds)};
}
static_assert(kRetryAfterSeconds > 0 && kRetryAfterSeconds < 128);

class GrpcService;
class GrpcConnection;
class BufferBudget;

// OTLP/gRPC: an HTTP/2 server over nghttp2 (grpc_connection.h, grpc_session.h) on an io_context
// thread of its own; the bounds of options.grpc are applied per connection.
class GrpcFrontend {
 public:
  // nullptr and *error when the address cannot be bound. `ingestor` and `stats` must outlive
  // the front end. Serves options.grpc_address, with options.max_message_bytes,
  // options.saturated_wait and options.grpc.
  static std::unique_ptr<GrpcFrontend> Start(const OtlpReceiverOptions& options, Ingestor* ingestor,
                                             GrpcStats* stats, std::string* error);
  ~GrpcFrontend();
  std::uint16_t port() const { return port_; }
  // Answers the calls waiting for room, sends every connection GOAWAY and waits up to 1 s for
  // them to close; then stops the thread. Idempotent.
  void Stop();

 private:
  GrpcFrontend();
  void Accept();
  void Closed(GrpcConnection* connection);
  void ShutdownAll();

  OtlpReceiverOptions options_;
  GrpcStats* stats_ = nullptr;
  std::uint16_t port_ = 0;
  bool stopped_ = false;
  std::unique_ptr<RoomWaiter> waiter_;  // null when options.saturated_wait is 0
  std::unique_ptr<BufferBudget> budget_;
  std::unique_ptr<GrpcService> service_;
  // Declared last: destroyed first, with the connections still pending on it, while the
  // members above are alive.
  boost::asio::io_context io_;
  std::unique_ptr<boost::asio::ip::tcp::acceptor> acceptor_;
  std::vector<GrpcConnection*> connections_;  // open ones; on io_'s thread only
  std::atomic<std::size_t> open_{0};
  std::thread thread_;
};

class HttpFrontend {
 public:
  static std::unique_ptr<HttpFrontend> Start(const OtlpReceiverOptions& options, Ingestor* ingestor,
                                             std::string* error);
  ~HttpFrontend();
  std::uint16_t port() const { return port_; }
  void Stop();

  // Used by the connection coroutines.
  const OtlpReceiverOptions& options() const { return options_; }
  Ingestor* ingestor() const { return ingestor_; }
  http::ConnectionTable* connections() const { return connections_.get(); }
  RoomWaiter* waiter() const { return waiter_.get(); }  // null when saturated_wait is 0

 private:
  HttpFrontend() = default;
  OtlpReceiverOptions options_;
  Ingestor* ingestor_ = nullptr;
  std::shared_ptr<http::ConnectionTable> connections_;  // cap and read timeouts
  std::uint16_t port_ = 0;
  std::unique_ptr<RoomWaiter> waiter_;  // stopped before io_, which outlives its Stop()
  bool stopped_ = false;
  // Declared last: destroyed first, with the coroutine frames still pending on it, while the
  // members above are alive.
  boost::asio::io_context io_;
  std::vector<std::thread> threads_;
};

}  // namespace infertel::receiver::internal
