#include "otlp/partial_success.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/wire_format_lite.h>
#include <simdjson.h>

#include <charconv>

namespace infertel::otlp {
namespace {

using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedInputStream;

bool SkipOrFail(CodedInputStream& in, std::uint32_t tag) {
  return WireFormatLite::SkipField(&in, tag);
}

bool ParseInner(std::string_view wire, PartialSuccess* out) {
  CodedInputStream in(reinterpret_cast<const std::uint8_t*>(wire.data()),
                      static_cast<int>(wire.size()));
  while (std::uint32_t tag = in.ReadTag()) {
    const int field = WireFormatLite::GetTagFieldNumber(tag);
    const auto type = WireFormatLite::GetTagWireType(tag);
    if (field == 1 && type == WireFormatLite::WIRETYPE_VARINT) {
      std::uint64_t v;
      if (!in.ReadVarint64(&v)) return false;
      out->rejected = static_cast<std::int64_t>(v);
    } else if (field == 2 && type == WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
      std::uint32_t len;
      if (!in.ReadVarint32(&len) || !in.ReadString(&out->error_message, static_cast<int>(len)))
        return false;
    } else if (!SkipOrFail(in, tag)) {
      return false;
    }
  }
  return in.ConsumedEntireMessage();
}

}  // namespace

bool ParsePartialSuccessProto(std::string_view wire, PartialSuccess* out) {
  CodedInputStream in(reinterpret_cast<const std::uint8_t*>(wire.data()),
                      static_cast<int>(wire.size()));
  while (std::uint32_t tag = in.ReadTag()) {
    if (WireFormatLite::GetTagFieldNumber(tag) == 1 &&
        WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
      std::uint32_t len;
      std::string inner;
      if (!in.ReadVarint32(&len) || !in.ReadString(&inner, static_cast<int>(len))) return false;
      if (!ParseInner(inner, out)) return false;
    } else if (!SkipOrFail(in, tag)) {
      return false;
    }
  }
  return in.ConsumedEntireMessage();
}

bool ParsePartialSuccessJson(std::string_view json, PartialSuccess* out) {
  thread_local simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(json.data(), json.size(), true).get(doc) != simdjson::SUCCESS) return false;
  simdjson::dom::object obj;
  if (doc.get_object().get(obj) != simdjson::SUCCESS) return false;
  simdjson::dom::object ps;
  if (obj["partialSuccess"].get_object().get(ps) != simdjson::SUCCESS &&
      obj["partial_success"].get_object().get(ps) != simdjson::SUCCESS)
    return true;
  for (auto field : ps) {
    const std::string_view k = field.key;
    if (k == "errorMessage" || k == "error_message") {
      std::string_view s;
      if (field.value.get_string().get(s) == simdjson::SUCCESS) out->error_message.assign(s);
    } else if (k.rfind("rejected", 0) == 0) {
      std::int64_t v = 0;
      std::string_view s;
      if (field.value.get_int64().get(v) == simdjson::SUCCESS) {
        out->rejected = v;
      } else if (field.value.get_string().get(s) == simdjson::SUCCESS) {
        std::from_chars(s.data(), s.data() + s.size(), v);
        out->rejected = v;
      }
    }
  }
  return true;
}

std::string EncodePartialSuccessProto(const PartialSuccess& ps) {
  std::string inner;
  {
    google::protobuf::io::StringOutputStream zs(&inner);
    google::protobuf::io::CodedOutputStream out(&zs);
    if (ps.rejected != 0) {
      WireFormatLite::WriteInt64(1, ps.rejected, &out);
    }
    if (!ps.error_message.empty()) WireFormatLite::WriteString(2, ps.error_message, &out);
  }
  std::string outer;
  {
    google::protobuf::io::StringOutputStream zs(&outer);
    google::protobuf::io::CodedOutputStream out(&zs);
    WireFormatLite::WriteBytes(1, inner, &out);
  }
  return outer;
}

}  // namespace infertel::otlp
