#pragma once
// OTLP partial success (Export*ServiceResponse.partial_success). The OTLP protos this build
// compiles predate that field, so it is read from the wire form directly: field 1 of the
// response is the partial-success message, whose field 1 is the rejected count (rejected_spans
// / rejected_log_records / rejected_data_points) and field 2 the error message.

#include <cstdint>
#include <string>
#include <string_view>

namespace infertel::otlp {

struct PartialSuccess {
  std::int64_t rejected = 0;
  std::string error_message;
};

// From a serialized Export*ServiceResponse (protobuf). False when malformed.
bool ParsePartialSuccessProto(std::string_view wire, PartialSuccess* out);
// From an OTLP/JSON response body; accepts partialSuccess/partial_success and the
// rejectedSpans/rejectedLogRecords/rejectedDataPoints names (either spelling). False when
// malformed JSON.
bool ParsePartialSuccessJson(std::string_view json, PartialSuccess* out);
// Serialized response carrying a partial success, for receivers and tests.
std::string EncodePartialSuccessProto(const PartialSuccess& ps);

}  // namespace infertel::otlp
