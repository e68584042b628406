#include "export/sqlite/record_attributes.h"

#include <google/protobuf/io/coded_stream.h>

#include "otlp/json_util.h"

namespace infertel::exporting {
namespace {

// Never the first byte of JSON (an older record starts with '{').
constexpr char kProtobufForm = 0x01;
// KeyValueList's field 1 (values), length-delimited: the bytes after the marker parse as one
// KeyValueList message.
constexpr std::uint8_t kValuesTag = (1 << 3) | 2;

}  // namespace

void AppendRecordAttributes(std::string* out,
                            const google::protobuf::RepeatedPtrField<KeyValue>& attrs) {
  out->push_back(kProtobufForm);
  for (const auto& kv : attrs) {
    const std::size_t size = kv.ByteSizeLong();
    const std::size_t at = out->size();
    out->resize(at + 1 + google::protobuf::io::CodedOutputStream::VarintSize64(size) + size);
    auto* p = reinterpret_cast<std::uint8_t*>(out->data() + at);
    *p++ = kValuesTag;
    p = google::protobuf::io::CodedOutputStream::WriteVarint64ToArray(size, p);
    kv.SerializeWithCachedSizesToArray(p);
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
