#include "pipeline/span_wire.h"

#include "pipeline/wire.h"

namespace infertel::pipeline {
namespace {

using wire::CodedOutputStream;
using wire::WireFormatLite;
using wire::WriteHead;
using wire::WriteMessage;
using wire::WriteString;

// Tags of the non-length-delimited fields written here: a tag under 128 is one byte.
constexpr std::uint32_t Tag(int field, WireFormatLite::WireType type) {
  return static_cast<std::uint32_t>(field) << 3 | static_cast<std::uint32_t>(type);
}
constexpr auto kVarint = WireFormatLite::WIRETYPE_VARINT;
constexpr auto kFixed64 = WireFormatLite::WIRETYPE_FIXED64;

inline std::uint8_t* Fixed64(std::uint32_t tag, std::uint64_t v, std::uint8_t* p) {
  *p++ = static_cast<std::uint8_t>(tag);
  return CodedOutputStream::WriteLittleEndian64ToArray(v, p);
}

// AnyValue's fields, as AnyValue::_InternalSerialize orders them (one oneof member).
std::uint8_t* WriteAnyValueFields(const AnyValue& v, std::uint8_t* p) {
  switch (v.value_case()) {
    case AnyValue::kStringValue:
      return WriteString(1, v.string_value(), p);
    case AnyValue::kBoolValue:
      *p++ = static_cast<std::uint8_t>(Tag(2, kVarint));
      *p++ = v.bool_value() ? 1 : 0;
      return p;
    case AnyValue::kIntValue:
      *p++ = static_cast<std::uint8_t>(Tag(3, kVarint));
      return CodedOutputStream::WriteVarint64ToArray(static_cast<std::uint64_t>(v.int_value()), p);
    case AnyValue::kDoubleValue:
      return Fixed64(Tag(4, kFixed64), WireFormatLite::EncodeDouble(v.double_value()), p);
    default:  // array, kvlist, bytes, or unset
      return v.SerializeWithCachedSizesToArray(p);
  }
}

std::uint8_t* WriteKeyValue(int field, const KeyValue& kv, std::uint8_t* p) {
  p = WriteHead(field, static_cast<std::size_t>(kv.GetCachedSize()), p);
  if (!kv.key().empty()) p = WriteString(1, kv.key(), p);
  if (kv.has_value()) {
    const AnyValue& v = kv.value();
    p = WriteHead(2, static_cast<std::size_t>(v.GetCachedSize()), p);
    p = WriteAnyValueFields(v, p);
  }
  return p;
}

inline std::uint8_t* Varint32Field(std::uint32_t tag, std::uint32_t v, std::uint8_t* p) {
  *p++ = static_cast<std::uint8_t>(tag);
  return CodedOutputStream::WriteVarint32ToArray(v, p);
}

}  // namespace

std::uint8_t* WriteSpanFields(const Span& span, std::uint8_t* p) {
  std::uint8_t* const start = p;
  // Field by field in field-number order, each written only when protobuf would write it
  // (proto3: a scalar or string when not zero or empty, a message when present).
  if (!span.trace_id().empty()) p = WriteString(1, span.trace_id(), p);
  if (!span.span_id().empty()) p = WriteString(2, span.span_id(), p);
  if (!span.trace_state().empty()) p = WriteString(3, span.trace_state(), p);
  if (!span.parent_span_id().empty()) p = WriteString(4, span.parent_span_id(), p);
  if (!span.name().empty()) p = WriteString(5, span.name(), p);
  if (span.kind() != 0) {
    // An enum is an int32 varint: a negative value takes ten bytes, as protobuf writes it.
    *p++ = static_cast<std::uint8_t>(Tag(6, kVarint));
    p = CodedOutputStream::WriteVarint64ToArray(
        static_cast<std::uint64_t>(static_cast<std::int64_t>(span.kind())), p);
  }
  if (span.start_time_unix_nano() != 0)
    p = Fixed64(Tag(7, kFixed64), span.start_time_unix_nano(), p);
  if (span.end_time_unix_nano() != 0) p = Fixed64(Tag(8, kFixed64), span.end_time_unix_nano(), p);
  for (const KeyValue& kv : span.attributes()) p = WriteKeyValue(9, kv, p);
  if (span.dropped_attributes_count() != 0)
    p = Varint32Field(Tag(10, kVarint), span.dropped_attributes_count(), p);
  for (const auto& e : span.events()) p = WriteMessage(11, e, p);
  if (span.dropped_events_count() != 0)
    p = Varint32Field(Tag(12, kVarint), span.dropped_events_count(), p);
  for (const auto& l : span.links()) p = WriteMessage(13, l, p);
  if (span.dropped_links_count() != 0)
    p = Varint32Field(Tag(14, kVarint), span.dropped_links_count(), p);
  if (span.has_status()) p = WriteMessage(15, span.status(), p);
  // Unknown fields (on the span, an attribute or its value) are in the cached sizes but not
  // in what was written above: the span came out short. protobuf writes it again, whole, with
  // them. (Asking each message for its unknown fields would cost a reflection call each.)
  if (p - start != span.GetCachedSize()) return span.SerializeWithCachedSizesToArray(start);
  return p;
}

}  // namespace infertel::pipeline
