#pragma once
// Decodes an OTLP trace export request as protobuf's generated parser does, except that every
// attribute key points at an interned key (core/static_key.h) instead of being a copy.
//
// Why: a span from vLLM carries about 13 attributes whose keys are longer than the 15
// characters a std::string holds inline. Parsed by protobuf onto an arena, each key was a
// heap allocation on the receiving thread, a string object on the arena with a destructor in
// its cleanup list, and a free on the export lane when the arena went: freeing the received
// strings was about 6 % of the agent's CPU in the OTLP pipeline benchmark, nearly as much as
// writing the spans out (docs/performance-history.md, "Received keys shared").

#include <cstdint>
#include <string_view>
#include <type_traits>

#include "core/telemetry.h"
#include "pipeline/held.h"
#include "receiver/span_limits.h"

namespace infertel::receiver {

// Decodes `wire` into `out`, which must be empty, within `limits` (none when null): what they
// drop is never kept in memory, and is added to *counts (when not null). Within limits, fields
// that OTLP does not define are read as protobuf reads them but not kept.
//
// True: `out` holds what `out->ParseFromArray(wire)` followed by ApplySpanLimits(limits) and
// DropUnknownFields would give (without limits: unknown fields included, as protobuf keeps
// them), and that parse would have succeeded. False: the decoder gave up,
// on malformed input or on what it leaves to protobuf (groups, nesting deeper than kMaxDecodeDepth,
// the deprecated instrumentation_library_spans); `out` is then in an unspecified state, and the
// caller parses `wire` with protobuf into a new message, which decides.
//
// The keys read as unset by reflection, as the agent's own shared keys do: code that reads
// received spans must read a KeyValue's key through key() (core/static_key.h).
// Counted from an attribute's KeyValue (1), which protobuf sees 4 or 5 messages deep: within
// protobuf's own limit of 100, so that what the decoder takes protobuf takes too, and deep
// enough that values nested past SpanLimits::value_depth (each level 2 or 3 messages) are
// still decoded here, within the limits, rather than whole by protobuf.
inline constexpr int kMaxDecodeDepth = 80;
bool DecodeTraces(std::string_view wire, TracesRequest* out, const SpanLimits* limits = nullptr,
                  LimitCounts* counts = nullptr);

// Decodes a protobuf export request onto a new Held request (pipeline/held.h): traces by
// DecodeTraces, and by protobuf when it gives up (then ApplySpanLimits); logs and metrics by
// protobuf (then ApplyLogLimits for logs). Within `limits`, fields OTLP does not define are not
// kept (DropUnknownFields). `limits` and `counts` as DecodeTraces's. False when `wire` is not a
// valid request.
template <typename Request>
bool DecodeProtobuf(std::string_view wire, pipeline::Held<Request>* out,
                    const SpanLimits* limits = nullptr, LimitCounts* counts = nullptr) {
  *out = pipeline::Held<Request>::Make();
  if constexpr (std::is_same_v<Request, TracesRequest>) {
    LimitCounts decoded;  // counted only when the decoder finishes: protobuf's counts else
    if (DecodeTraces(wire, out->request, limits, &decoded)) {
      if (counts != nullptr) *counts += decoded;
      return true;
    }
    *out = pipeline::Held<Request>::Make();  // the decoder's message is half-filled
  }
  const bool ok = wire.size() <= static_cast<std::size_t>(INT32_MAX) &&
                  out->request->ParseFromArray(wire.data(), static_cast<int>(wire.size()));
  if (ok && limits != nullptr) {
    LimitCounts unused;
    LimitCounts* c = counts != nullptr ? counts : &unused;
    if constexpr (std::is_same_v<Request, TracesRequest>) ApplySpanLimits(out->request, *limits, c);
    if constexpr (std::is_same_v<Request, LogsRequest>) ApplyLogLimits(out->request, *limits, c);
    // After the limits, so that what they drop is not counted twice (as DecodeTraces counts).
    c->unknown_fields += DropUnknownFields(out->request);
  }
  return ok;
}

}  // namespace infertel::receiver
