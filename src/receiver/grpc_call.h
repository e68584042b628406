#pragma once
// One gRPC call on an HTTP/2 stream of the OTLP/gRPC receiver: what its header block says (path,
// content-type, grpc-encoding, grpc-timeout), its message as it arrives (MessageReader), and its
// answer as HEADERS, DATA and trailers. Owned by GrpcSession, one per open stream; used on the
// connection's thread only.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nghttp2/nghttp2.h>

#include "receiver/grpc_framing.h"
#include "receiver/grpc_limits.h"
#include "receiver/ingest.h"

namespace infertel::receiver::internal {

using GrpcClock = std::chrono::steady_clock;

// google.rpc.Code values the receiver answers with.
enum GrpcCode : int {
  kGrpcOk = 0,
  kGrpcCancelled = 1,
  kGrpcInvalidArgument = 3,
  kGrpcDeadlineExceeded = 4,
  kGrpcResourceExhausted = 8,
  kGrpcUnimplemented = 12,
  kGrpcInternal = 13,
  kGrpcUnavailable = 14,
};

// The answer to a call that finds no room in GrpcServerLimits::max_buffered_bytes (UNAVAILABLE,
// with RetryInfo).
inline constexpr std::string_view kBufferFullMessage =
    "the receiver holds as many message bytes as it may; retry later";

// What a call is answered. A status other than kGrpcOk is sent "Trailers-Only" (one HEADERS
// frame); kGrpcOk sends HEADERS, DATA (the prefixed `body`) and trailers.
struct GrpcAnswer {
  int http_status = 200;  // other than 200: no gRPC fields at all (a non-gRPC request)
  int grpc_status = kGrpcOk;
  std::string message;           // grpc-message, percent-encoded when written
  std::string body;              // the response message (status kGrpcOk only)
  bool retry_info = false;       // google.rpc.retryinfo-bin: retry after kRetryAfterSeconds
  bool accept_encoding = false;  // grpc-accept-encoding: identity,gzip
  // RST_STREAM NO_ERROR once the answer is out, when the client has not finished sending: what
  // is left of its request is not wanted (a message over the limit is not read).
  bool stop_request = false;

  static GrpcAnswer Status(int code, std::string message) {
    GrpcAnswer a;
    a.grpc_status = code;
    a.message = std::move(message);
    return a;
  }
};

// Message bytes held by every connection together (GrpcServerLimits::max_buffered_bytes).
class BufferBudget {
 public:
  explicit BufferBudget(std::size_t max_bytes) : max_(max_bytes) {}
  bool Take(std::size_t n) noexcept;
  void Give(std::size_t n) noexcept { used_.fetch_sub(n, std::memory_order_relaxed); }
  std::size_t used() const { return used_.load(std::memory_order_relaxed); }

 private:
  const std::size_t max_;
  std::atomic<std::size_t> used_{0};
};

class GrpcCall {
 public:
  GrpcCall(std::int32_t stream_id, std::uint64_t serial, std::size_t max_message_bytes,
           std::size_t max_header_list_bytes)
      : stream_id_(stream_id),
        serial_(serial),
        max_header_list_(max_header_list_bytes),
        reader_(max_message_bytes) {}

  // One header field of the request's header block. Past max_header_list_bytes the call is
  // marked and further fields are ignored.
  void AddHeader(std::string_view name, std::string_view value);
  // Once the header block is read: why the call cannot be served (its answer and the counter's
  // reason), or nullopt. Sets signal() and deadline() when it can.
  struct Refusal {
    GrpcRefusal reason;
    GrpcAnswer answer;
  };
  std::optional<Refusal> CheckHeaders(GrpcClock::time_point now);

  std::int32_t stream_id() const { return stream_id_; }
  std::uint64_t serial() const { return serial_; }
  std::optional<Signal> signal() const { return signal_; }
  GrpcClock::time_point deadline() const { return deadline_; }
  bool gzip() const { return gzip_; }
  MessageReader& reader() { return reader_; }

  // Where the call is: reading its message, handed to the service (maybe waiting for room),
  // or answered.
  enum class Phase { kReading, kDispatched, kAnswered };
  Phase phase = Phase::kReading;
  // Bytes of this call taken from the BufferBudget and not yet given back to it and to the
  // connection's flow-control window.
  std::size_t held = 0;
  bool stop_request = false;  // GrpcAnswer::stop_request, once its HEADERS went out

  // The answer's frames, kept until sent: header fields, the DATA payload and the trailers.
  void SetAnswer(const GrpcAnswer& answer);
  const std::vector<nghttp2_nv>& headers() const { return headers_nv_; }
  const std::vector<nghttp2_nv>& trailers() const { return trailers_nv_; }
  bool has_body() const { return has_body_; }
  // Copies up to `max` bytes of the DATA payload from where the last call stopped; `*eof` once
  // it is all out.
  std::size_t ReadBody(std::uint8_t* dst, std::size_t max, bool* eof);

 private:
  const std::int32_t stream_id_;
  const std::uint64_t serial_;
  const std::size_t max_header_list_;
  std::size_t header_bytes_ = 0;
  bool header_overflow_ = false;
  std::string method_, path_, content_type_, encoding_, timeout_;
  bool has_timeout_ = false;
  std::optional<Signal> signal_;
  GrpcClock::time_point deadline_ = GrpcClock::time_point::max();
  bool gzip_ = false;
  MessageReader reader_;

  std::vector<std::pair<std::string, std::string>> header_fields_, trailer_fields_;
  std::vector<nghttp2_nv> headers_nv_, trailers_nv_;
  std::string data_;  // 5-byte prefix + response message
  std::size_t data_sent_ = 0;
  bool has_body_ = false;
};

// The signal served at an OTLP Export path, or nullopt.
std::optional<Signal> SignalForGrpcPath(std::string_view path);

}  // namespace infertel::receiver::internal
