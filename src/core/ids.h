#pragma once
// Trace and span identifiers and the W3C trace-context header.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace infertel {

using TraceId = std::array<std::uint8_t, 16>;
using SpanId = std::array<std::uint8_t, 8>;

// Random, non-zero ids from a per-thread generator (thread-safe, lock-free).
TraceId NewTraceId();
SpanId NewSpanId();
bool IsZero(const TraceId& id);
bool IsZero(const SpanId& id);

// Lowercase hex and back; parsing returns nullopt on bad length or characters.
std::string ToHex(const TraceId& id);
std::string ToHex(const SpanId& id);
std::optional<TraceId> TraceIdFromHex(std::string_view hex);
std::optional<SpanId> SpanIdFromHex(std::string_view hex);

// Views of ids as protobuf `bytes` fields.
inline std::string_view AsBytes(const TraceId& id) {
  return {reinterpret_cast<const char*>(id.data()), id.size()};
}
inline std::string_view AsBytes(const SpanId& id) {
  return {reinterpret_cast<const char*>(id.data()), id.size()};
}

// A W3C `traceparent` value: version 00, trace id, parent span id, flags.
struct TraceParent {
  TraceId trace_id{};
  SpanId span_id{};
  std::uint8_t flags = 1;  // sampled

  // Parses a header value; nullopt when malformed or when either id is all zero
  // (the W3C rule: such a header must be ignored and a new trace started).
  static std::optional<TraceParent> Parse(std::string_view value);
  std::string Format() const;
};

}  // namespace infertel
