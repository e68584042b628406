#pragma once
// Decodes an OTLP trace export request as protobuf's generated parser does, except that every
// attribute key points at an interned key (core/static_key.h) instead of being a copy.
//
// Why: a span from vLLM carries about 13 attributes whose keys are longer than the 15
// characters a std::string holds inline. Parsed by protobuf onto an arena, each key was a
// heap allocation on the receiving thread, a string object on the arena with a destructor in
// its cleanup list, and a free on the export lane when the arena went: freeing the received
// strings was about 6 % of the agent's CPU in the OTLP pipeline benchmark, nearly as much as
// writing the spans out (docs/performance.md, "Received keys shared").

#include <cstdint>
#include <string_view>
#include <type_traits>

#include "core/telemetry.h"
#include "pipeline/held.h"
#include "receiver/span_limits.h"

namespace infertel::receiver {

// Decodes `wire` into `out`, which must be empty, within `limits` (none when null): what they
// drop is never kept in memory, and is added to *counts (when not null).
//
// True: `out` holds what `out->ParseFromArray(wire)` followed by ApplySpanLimits(limits) would
// give, unknown fields included, and that parse would have succeeded. False: the decoder gave up,
// on malformed input or on what it leaves to protobuf (groups, nesting deeper than kMaxDecodeDepth,
// the deprecated instrumentation_library_spans); `out` is then in an unspecified state, and the
// caller parses `wire` with protobuf into a new message, which decides.
//
// The keys read as unset by reflection, as the agent's own shared keys do: code that reads
// received spans must read a KeyValue's key through key() (core/static_key.h).
inline constexpr int kMaxDecodeDepth = 32;
bool DecodeTraces(std::string_view wire, TracesRequest* out, const SpanLimits* limits = nullptr,
                  LimitCounts* counts = nullptr);

// Decodes a protobuf export request onto a new Held request (pipeline/held.h): traces by
// DecodeTraces, and by protobuf when it gives up (then ApplySpanLimits); logs and metrics by
// protobuf. `limits` and `counts` as DecodeTraces's, for traces. False when `wire` is not a
// valid request.
template <typename Request>
bool DecodeProtobuf(std::string_view wire, pipeline::Held<Request>* out,
                    const SpanLimits* limits = nullptr, LimitCounts* counts = nullptr) {
  *out = pipeline::Held<Request>::Make();
  if constexpr (std::is_same_v<Request, TracesRequest>) {
    if (DecodeTraces(wire, out->request, limits, counts)) return true;
    *out = pipeline::Held<Request>::Make();  // the decoder's message is half-filled
  }
  const bool ok = wire.size() <= static_cast<std::size_t>(INT32_MAX) &&
                  out->request->ParseFromArray(wire.data(), static_cast<int>(wire.size()));
  if constexpr (std::is_same_v<Request, TracesRequest>) {
    if (ok && limits != nullptr) {
      LimitCounts unused;
      ApplySpanLimits(out->request, *limits, counts != nullptr ? counts : &unused);
    }
  }
  return ok;
}

}  // namespace infertel::receiver
