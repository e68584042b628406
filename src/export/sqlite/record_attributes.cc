#include "export/sqlite/record_attributes.h"

#include <google/protobuf/io/coded_stream.h>

#include <bit>
#include <cstring>

#include "otlp/json_util.h"

namespace infertel::exporting {
namespace {

// Never the first byte of JSON (an older record starts with '{').
constexpr char kProtobufForm = 0x01;
// KeyValueList's field 1 (values), length-delimited: the bytes after the marker parse as one
// KeyValueList message.
constexpr std::uint8_t kValuesTag = (1 << 3) | 2;

using google::protobuf::io::CodedOutputStream;

// Field tags of the OTLP messages written here (common.proto).
constexpr std::uint8_t kKeyTag = (1 << 3) | 2;    // KeyValue.key
constexpr std::uint8_t kValueTag = (2 << 3) | 2;  // KeyValue.value
constexpr std::uint8_t kStringTag = (1 << 3) | 2, kBoolTag = (2 << 3) | 0, kIntTag = (3 << 3) | 0,
                       kDoubleTag = (4 << 3) | 1, kArrayTag = (5 << 3) | 2,
                       kKvlistTag = (6 << 3) | 2, kBytesTag = (7 << 3) | 2;

std::size_t LenField(std::size_t len) { return 1 + CodedOutputStream::VarintSize64(len) + len; }

// An AnyValue's encoded size. Arrays and lists (rare in attributes) are protobuf's own.
std::size_t ValueSize(const AnyValue& v) {
  switch (v.value_case()) {
    case AnyValue::kStringValue:
      return LenField(v.string_value().size());
    case AnyValue::kBoolValue:
      return 2;
    case AnyValue::kIntValue:
      return 1 + CodedOutputStream::VarintSize64(static_cast<std::uint64_t>(v.int_value()));
    case AnyValue::kDoubleValue:
      return 9;
    case AnyValue::kArrayValue:
      return LenField(v.array_value().ByteSizeLong());
    case AnyValue::kKvlistValue:
      return LenField(v.kvlist_value().ByteSizeLong());
    case AnyValue::kBytesValue:
      return LenField(v.bytes_value().size());
    default:
      return 0;
  }
}

std::uint8_t* Len(std::uint8_t tag, std::size_t len, std::uint8_t* p) {
  *p++ = tag;
  return CodedOutputStream::WriteVarint64ToArray(len, p);
}

std::uint8_t* Text(std::uint8_t tag, std::string_view s, std::uint8_t* p) {
  p = Len(tag, s.size(), p);
  std::memcpy(p, s.data(), s.size());
  return p + s.size();
}

// Writes `v` (ValueSize bytes); array and list sizes were cached by ValueSize.
std::uint8_t* WriteValue(const AnyValue& v, std::uint8_t* p) {
  switch (v.value_case()) {
    case AnyValue::kStringValue:
      return Text(kStringTag, v.string_value(), p);
    case AnyValue::kBoolValue:
      *p++ = kBoolTag;
      *p++ = v.bool_value() ? 1 : 0;
      return p;
    case AnyValue::kIntValue:
      *p++ = kIntTag;
      return CodedOutputStream::WriteVarint64ToArray(static_cast<std::uint64_t>(v.int_value()), p);
    case AnyValue::kDoubleValue:
      *p++ = kDoubleTag;
      return CodedOutputStream::WriteLittleEndian64ToArray(
          std::bit_cast<std::uint64_t>(v.double_value()), p);
    case AnyValue::kArrayValue:
      p = Len(kArrayTag, v.array_value().GetCachedSize(), p);
      return v.array_value().SerializeWithCachedSizesToArray(p);
    case AnyValue::kKvlistValue:
      p = Len(kKvlistTag, v.kvlist_value().GetCachedSize(), p);
      return v.kvlist_value().SerializeWithCachedSizesToArray(p);
    case AnyValue::kBytesValue:
      return Text(kBytesTag, v.bytes_value(), p);
    default:
      return p;
  }
}

}  // namespace

// The same bytes as protobuf's serializer writes (a test compares them), written directly:
// its generic walk over each KeyValue, sizes then bytes, was most of a span's encoding.
void AppendRecordAttributes(std::string* out,
                            const google::protobuf::RepeatedPtrField<KeyValue>& attrs) {
  out->push_back(kProtobufForm);
  for (const auto& kv : attrs) {
    const std::size_t value = kv.has_value() ? ValueSize(kv.value()) : 0;
    const std::size_t size =
        (kv.key().empty() ? 0 : LenField(kv.key().size())) + (kv.has_value() ? LenField(value) : 0);
    const std::size_t at = out->size();
    out->resize(at + LenField(size));
    auto* p = Len(kValuesTag, size, reinterpret_cast<std::uint8_t*>(out->data() + at));
    if (!kv.key().empty()) p = Text(kKeyTag, kv.key(), p);
    if (kv.has_value()) WriteValue(kv.value(), Len(kValueTag, value, p));
  }
}

std::string RecordAttributesJson(std::string_view record) {
  if (record.empty() || record.front() != kProtobufForm)
    return record.empty() || record.front() != '{' ? std::string("{}") : std::string(record);
  otlp_common::KeyValueList list;
  if (!list.ParseFromArray(record.data() + 1, static_cast<int>(record.size() - 1))) return "{}";
  return otlp_json::PlainAttributes(list.values());
}

}  // namespace infertel::exporting
