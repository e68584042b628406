#pragma once
// OTLP/JSON (the OTLP specification's JSON encoding, which is not protobuf's default JSON
// mapping): trace/span ids as lowercase hex, other bytes as base64, enums as integers,
// lowerCamelCase field names, 64-bit integers as decimal strings, default values omitted.
// Encoding and decoding walk the message by protobuf reflection, so every OTLP message
// (requests, responses, all three signals) is covered by one implementation.
//
// Decoding is lenient as receivers must be: field names in lowerCamelCase or snake_case,
// 64-bit integers as strings or numbers, enums as integers or names, ids as hex (base64
// accepted as a fallback), doubles also as "NaN"/"Infinity"/"-Infinity"; unknown fields and
// nulls are ignored. Nesting deeper than 64 levels is rejected.
//
// Thread-safety: all functions are reentrant.

#include <cstdint>
#include <string>
#include <string_view>

#include <google/protobuf/message.h>

#include "core/telemetry.h"

namespace infertel::otlp_json {

std::string Encode(const google::protobuf::Message& message);
inline std::string EncodeTraces(const TracesRequest& r) { return Encode(r); }
inline std::string EncodeLogs(const LogsRequest& r) { return Encode(r); }
inline std::string EncodeMetrics(const MetricsRequest& r) { return Encode(r); }

// Bounds on what Decode keeps (the receiver's, receiver/span_limits.h): the elements of an
// AnyValue array or key-value list past `collection_values` are skipped, neither decoded nor
// kept, and counted in `skipped`, so that a request of a million elements costs none of them.
struct DecodeBounds {
  std::uint32_t collection_values = UINT32_MAX;
  std::uint64_t skipped = 0;
};

// Replaces `*out` with the message decoded from `json`, within `bounds` when not null. On error
// returns false, sets `*error` (when non-null) and leaves `*out` in an unspecified state.
bool Decode(std::string_view json, google::protobuf::Message* out, std::string* error,
            DecodeBounds* bounds = nullptr);
inline bool DecodeTraces(std::string_view json, TracesRequest* out, std::string* error) {
  return Decode(json, out, error);
}
inline bool DecodeLogs(std::string_view json, LogsRequest* out, std::string* error) {
  return Decode(json, out, error);
}
inline bool DecodeMetrics(std::string_view json, MetricsRequest* out, std::string* error) {
  return Decode(json, out, error);
}

}  // namespace infertel::otlp_json
