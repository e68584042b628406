#pragma once
// The server side of one HTTP/2 connection of the OTLP/gRPC receiver, over nghttp2 (Debian's,
// with the rapid-reset and CONTINUATION-flood fixes), without sockets: bytes in (Receive), bytes
// out (TakeOutput). It reads calls (GrpcCall), answers what is wrong with them itself, hands each
// whole message to its Handler and sends the handler's answer. The bounds of GrpcServerLimits
// are applied here: streams, header list, resets per second, flow-control windows, message size
// from the prefix, the shared BufferBudget. Used from one thread at a time; the fuzz target
// tests/fuzz/grpc_reader_fuzz.cc drives it with raw bytes.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "receiver/grpc_call.h"

namespace infertel::receiver::internal {

// A call whose message arrived whole. `message` (compressed when `gzip`) stays valid until the
// call is answered or its stream closes.
struct GrpcRequest {
  std::int32_t stream_id;
  std::uint64_t serial;  // tells a call from a later one on a reused GrpcSession
  Signal signal;
  std::string_view message;
  bool gzip;
  GrpcClock::time_point deadline;  // from grpc-timeout; max() without one
};

class GrpcSession {
 public:
  class Handler {
   public:
    virtual ~Handler() = default;
    // Called once per request; the call is then answered with Answer (now or later), or its
    // stream closes first. May call Answer from inside.
    virtual void OnRequest(const GrpcRequest& request) = 0;
    // A call of `signal` refused before it reached OnRequest (too large, bad framing…).
    virtual void OnMalformed(Signal signal) = 0;
  };

  // Everything must outlive the session.
  GrpcSession(const GrpcServerLimits& limits, std::size_t max_message_bytes, GrpcStats* stats,
              BufferBudget* budget, Handler* handler);
  ~GrpcSession();
  GrpcSession(const GrpcSession&) = delete;
  GrpcSession& operator=(const GrpcSession&) = delete;

  // Reads bytes from the client. False when the connection must end: what TakeOutput gives
  // (a GOAWAY, most often) is the last thing to send.
  bool Receive(std::string_view bytes, GrpcClock::time_point now);
  // Appends bytes to send to *out, up to about `max` bytes.
  void TakeOutput(std::string* out, std::size_t max = 64u << 10);
  // False once the session has nothing more to read or write (GOAWAY exchanged, or an error).
  bool Alive() const;
  // Answers a call; false when it is gone (its stream closed) or already answered.
  bool Answer(std::int32_t stream_id, std::uint64_t serial, const GrpcAnswer& answer);
  // The request of a call handed to the handler and not answered yet; nullopt when it is gone.
  std::optional<GrpcRequest> Pending(std::int32_t stream_id, std::uint64_t serial) const;
  // Sends GOAWAY with `error_code` (NGHTTP2_NO_ERROR to end gracefully); calls in flight end.
  void GoAway(std::uint32_t error_code);

  bool handshake_done() const { return handshake_done_; }
  std::size_t calls() const { return calls_.size(); }
  // Calls to be answered (handed to the handler, or refused by the session), and answered.
  std::uint64_t requests() const { return requests_; }
  std::uint64_t answered() const { return answered_; }

 private:
  struct Callbacks;  // nghttp2's callbacks, as static functions
  friend struct Callbacks;

  GrpcCall* Find(std::int32_t stream_id) const;
  void OnHeadersEnd(GrpcCall* call, GrpcClock::time_point now);
  void OnData(GrpcCall* call, std::string_view bytes);
  void OnFrameEnd(GrpcCall* call, bool end_stream);
  void Refuse(GrpcCall* call, GrpcRefusal reason, const GrpcAnswer& answer);
  void Dispatch(GrpcCall* call);
  void ReleaseHeld(GrpcCall* call);
  void ChargeReset();
  void CloseCall(std::int32_t stream_id);

  const GrpcServerLimits limits_;
  const std::size_t max_message_bytes_;
  GrpcStats* stats_;
  BufferBudget* budget_;
  Handler* handler_;
  nghttp2_session* session_ = nullptr;
  std::map<std::int32_t, std::unique_ptr<GrpcCall>> calls_;  // by stream id
  std::uint64_t next_serial_ = 1;
  std::uint64_t requests_ = 0, answered_ = 0;
  bool handshake_done_ = false;
  bool our_goaway_ = false;  // a GOAWAY we asked for (not one nghttp2 sent on its own)
  GrpcClock::time_point now_{};
  // The token bucket of resets (GrpcServerLimits::max_resets_per_second).
  double reset_tokens_;
  GrpcClock::time_point reset_refill_{};
};

}  // namespace infertel::receiver::internal
