#pragma once
// The bounds of the OTLP/gRPC receiver (an HTTP/2 server over nghttp2, grpc_connection.h) and
// the counter of what they refuse. docs/limits.md, "OTLP/gRPC receiver", lists each with its
// flag and what the sender sees.

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace infertel {
class StatsRegistry;
}

namespace infertel::receiver {

struct GrpcServerLimits {
  // Connections open at once; a further one is closed at once, before any byte is read.
  std::size_t max_connections = 128;
  // SETTINGS_MAX_CONCURRENT_STREAMS: a stream beyond it is refused (RST_STREAM REFUSED_STREAM,
  // or GOAWAY PROTOCOL_ERROR once the client acknowledged the setting).
  std::uint32_t max_concurrent_streams = 100;
  // SETTINGS_MAX_HEADER_LIST_SIZE, enforced: a call whose header list (names, values and 32
  // bytes each, as RFC 9113 counts) is larger is answered RESOURCE_EXHAUSTED.
  std::uint32_t max_header_list_bytes = 16u << 10;
  // RST_STREAM frames a connection may cause per second (those the client sends and the streams
  // the server refuses), with as many at once; beyond: GOAWAY ENHANCE_YOUR_CALM.
  std::uint32_t max_resets_per_second = 100;
  // Message bytes held at once by every connection together (a message is held from its first
  // byte until it is answered); a call that finds no room is answered UNAVAILABLE with
  // RetryInfo, as a full export queue is.
  std::size_t max_buffered_bytes = 64u << 20;
  // A new connection must send its preface and SETTINGS within this.
  std::chrono::milliseconds handshake_timeout{10'000};
  // A connection that sends nothing for this long is closed (GOAWAY NO_ERROR).
  std::chrono::milliseconds idle_timeout{60'000};
};

// Why the gRPC receiver refused a connection, a stream or a call.
enum class GrpcRefusal {
  kConnections,       // over max_connections
  kHandshakeTimeout,  // no preface and SETTINGS within handshake_timeout
  kIdleTimeout,       // nothing received within idle_timeout
  kStreams,           // a stream over max_concurrent_streams
  kHeaderList,        // a header list over max_header_list_bytes
  kResetRate,         // resets over max_resets_per_second: GOAWAY ENHANCE_YOUR_CALM
  kProtocol,          // an HTTP/2 error that ends the connection (bad preface, floods, HPACK…)
  kMessageSize,       // a message whose prefix announces more than the message limit
  kInflatedSize,      // a gzip message that inflates past the message limit
  kBufferFull,        // no room in max_buffered_bytes
  kEncoding,          // a grpc-encoding other than identity and gzip
  kContentType,       // not application/grpc
  kMethod,            // an unknown path or a method other than POST
  kMalformed,         // no message, two messages, a bad compressed flag, a bad grpc-timeout
  kCount
};
std::string_view GrpcRefusalName(GrpcRefusal reason);

// The counters: infertel_receiver_grpc_refused_total{reason} and the gauge
// infertel_receiver_grpc_connections. Thread-safe.
class GrpcStats {
 public:
  // Counts one refusal and logs it, at most one line per reason every 10 s (saying how many
  // went unlogged in between).
  void Refuse(GrpcRefusal reason, std::string_view detail) noexcept;
  std::uint64_t refused(GrpcRefusal reason) const {
    return refused_[static_cast<std::size_t>(reason)].load(std::memory_order_relaxed);
  }
  std::atomic<std::uint64_t>& connections() { return connections_; }
  // `this` must outlive `registry`'s use of it.
  void Register(StatsRegistry* registry) const;

 private:
  static constexpr std::size_t kReasons = static_cast<std::size_t>(GrpcRefusal::kCount);
  std::array<std::atomic<std::uint64_t>, kReasons> refused_{};
  std::array<std::atomic<std::int64_t>, kReasons> last_log_s_{};
  std::array<std::atomic<std::uint64_t>, kReasons> logged_at_{};
  std::atomic<std::uint64_t> connections_{0};
};

}  // namespace infertel::receiver
