#pragma once
// A span's wire form written field by field, for the export encoder (encode.h).
//
// Why not protobuf's own serializer: for a proto3 `string` field it checks the value for
// valid UTF-8 on every write, and only logs when the check fails: the bytes written are the
// same either way. At four spans out per span in, that check and the stream's per-field room
// checks were about a third of the export lane's serializing time (docs/performance-history.md,
// "Spans written field by field"). Here every size is known before the first byte (the
// caller sized the batch), so the writer needs no room checks, and the strings were checked
// where they came in (the receiver's parse) or were made by the agent.
//
// The output is byte for byte what span.SerializeWithCachedSizesToArray() writes. Anything
// this writer does not spell out itself goes through protobuf's serializer: events, links,
// status, array, map and bytes values; and a whole span when it or one of its attributes
// carries unknown fields (a field a newer OTLP adds), which protobuf keeps and writes last.

#include <cstdint>

#include "core/telemetry.h"

namespace infertel::pipeline {

// Writes the fields of `span` (without its own tag and length) at `p` and returns the end.
// Precondition: span.ByteSizeLong() ran since the span (and its attributes) last changed, so
// that every nested size is cached; the caller reserved span.GetCachedSize() bytes.
std::uint8_t* WriteSpanFields(const Span& span, std::uint8_t* p);

}  // namespace infertel::pipeline
