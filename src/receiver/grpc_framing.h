#pragma once
// The pieces of gRPC over HTTP/2 (grpc/grpc PROTOCOL-HTTP2.md) that the receiver reads and
// writes, without HTTP/2 itself: the length-prefixed message, checked against the limit from
// its 5-byte prefix before any of its body is kept; gzip inflated with a bound; grpc-timeout;
// the percent-encoding of grpc-message; base64 for binary (-bin) metadata. Pure functions and
// one small state machine, unit-tested in tests/unit/receiver/grpc_framing_test.cc.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace infertel::receiver::internal {

// grpc-timeout: 1 to 8 ASCII digits and a unit (H, M, S, m, u, n). nullopt when malformed.
std::optional<std::chrono::nanoseconds> ParseGrpcTimeout(std::string_view value);

// grpc-message: bytes outside 0x20–0x7E, and '%', as %XX (upper-case hex).
std::string PercentEncode(std::string_view text);

// Base64 without padding (what gRPC writes in -bin metadata; decoders accept it).
std::string Base64Unpadded(std::string_view bytes);

// Reads the one message of a unary call from DATA frame payloads. The 5-byte prefix is read
// first: a length over the limit is refused before a byte of the body is kept.
class MessageReader {
 public:
  enum class State {
    kPrefix,    // reading the prefix
    kBody,      // reading the body
    kComplete,  // one whole message read; further bytes are an error (kExtra)
    kTooLarge,  // the prefix announced more than max_bytes: nothing kept
    kBadFlag,   // the compressed-flag byte is neither 0 nor 1
    kExtra,     // bytes after the message (a second message on a unary call)
  };
  explicit MessageReader(std::size_t max_bytes) : max_bytes_(max_bytes) {}

  // Takes the next bytes of the stream; returns the state after them. Once in a final state
  // (all but kPrefix and kBody) further bytes change nothing but kComplete → kExtra.
  State Feed(std::string_view bytes);
  State state() const { return state_; }
  bool compressed() const { return compressed_; }
  std::uint64_t announced() const { return length_; }  // the prefix's length, once read
  // The body, whole once kComplete.
  std::string_view body() const { return body_; }
  // Bytes kept now (the body so far): what the connection holds for this call.
  std::size_t kept() const { return body_.size(); }
  void Release();  // gives the body's memory back (after the call is answered)

 private:
  std::size_t max_bytes_;
  State state_ = State::kPrefix;
  unsigned char prefix_[5] = {};
  std::size_t prefix_read_ = 0;
  bool compressed_ = false;
  std::uint64_t length_ = 0;
  std::string body_;
};

enum class InflateResult { kOk, kTooLarge, kCorrupt };
// Inflates gzip `in` into *out, stopping as soon as the output would pass `max_out` bytes
// (kTooLarge: *out then holds at most max_out bytes): a bomb costs the limit, not its size.
// Trailing bytes after the gzip member, or a truncated member, are kCorrupt.
InflateResult InflateBounded(std::string_view in, std::size_t max_out, std::string* out);

}  // namespace infertel::receiver::internal
