#include "otlp/json.h"

#include <fmt/format.h>
#include <google/protobuf/descriptor.h>
#include <simdjson.h>

#include <charconv>
#include <cmath>
#include <limits>
#include <vector>

#include "core/hex.h"
#include "otlp/json_util.h"

namespace infertel::otlp_json {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

constexpr int kMaxDepth = 64;

// The OTLP/JSON rule: these bytes fields are hex, every other bytes field is base64.
bool IsIdField(const FieldDescriptor* f) {
  const std::string& n = f->name();
  return n == "trace_id" || n == "span_id" || n == "parent_span_id";
}

void AppendNonFinite(std::string* out, double v) {
  if (std::isnan(v))
    out->append("\"NaN\"");
  else
    out->append(v > 0 ? "\"Infinity\"" : "\"-Infinity\"");
}

void EncodeMessage(const Message& m, std::string* out);

// The fields the agent may set without a copy (core/static_key.h), which reflection reads as
// unset: a KeyValue's key and a span's trace id, parent span id and name, read through their
// accessors instead (these are the generated classes: the only ones this encoder is given).
const std::string* SharedString(const Message& m, const FieldDescriptor* f) {
  if (f->containing_type() == KeyValue::descriptor()) {
    if (f->number() == KeyValue::kKeyFieldNumber) return &static_cast<const KeyValue&>(m).key();
  } else if (f->containing_type() == Span::descriptor()) {
    const auto& span = static_cast<const Span&>(m);
    switch (f->number()) {
      case Span::kTraceIdFieldNumber:
        return &span.trace_id();
      case Span::kParentSpanIdFieldNumber:
        return &span.parent_span_id();
      case Span::kNameFieldNumber:
        return &span.name();
    }
  }
  return nullptr;
}

void EncodeValue(const Message& m, const FieldDescriptor* f, int index, std::string* out) {
  const Reflection* r = m.GetReflection();
  const bool rep = index >= 0;
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      fmt::format_to(std::back_inserter(*out), "{}",
                     rep ? r->GetRepeatedInt32(m, f, index) : r->GetInt32(m, f));
      break;
    case FieldDescriptor::CPPTYPE_UINT32:
      fmt::format_to(std::back_inserter(*out), "{}",
                     rep ? r->GetRepeatedUInt32(m, f, index) : r->GetUInt32(m, f));
      break;
    case FieldDescriptor::CPPTYPE_INT64:
      fmt::format_to(std::back_inserter(*out), "\"{}\"",
                     rep ? r->GetRepeatedInt64(m, f, index) : r->GetInt64(m, f));
      break;
    case FieldDescriptor::CPPTYPE_UINT64:
      fmt::format_to(std::back_inserter(*out), "\"{}\"",
                     rep ? r->GetRepeatedUInt64(m, f, index) : r->GetUInt64(m, f));
      break;
    case FieldDescriptor::CPPTYPE_DOUBLE:
    case FieldDescriptor::CPPTYPE_FLOAT: {
      double v = f->cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE
                     ? (rep ? r->GetRepeatedDouble(m, f, index) : r->GetDouble(m, f))
                     : (rep ? r->GetRepeatedFloat(m, f, index) : r->GetFloat(m, f));
      if (std::isfinite(v))
        AppendDouble(out, v);
      else
        AppendNonFinite(out, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_BOOL:
      out->append((rep ? r->GetRepeatedBool(m, f, index) : r->GetBool(m, f)) ? "true" : "false");
      break;
    case FieldDescriptor::CPPTYPE_ENUM:
      fmt::format_to(std::back_inserter(*out), "{}",
                     rep ? r->GetRepeatedEnumValue(m, f, index) : r->GetEnumValue(m, f));
      break;
    case FieldDescriptor::CPPTYPE_STRING: {
      std::string scratch;
      const std::string* shared = rep ? nullptr : SharedString(m, f);
      const std::string& s = shared ? *shared
                             : rep  ? r->GetRepeatedStringReference(m, f, index, &scratch)
                                    : r->GetStringReference(m, f, &scratch);
      if (f->type() == FieldDescriptor::TYPE_BYTES)
        AppendString(out, IsIdField(f) ? BytesToHex(s) : Base64Encode(s));
      else
        AppendString(out, s);
      break;
    }
    case FieldDescriptor::CPPTYPE_MESSAGE:
      EncodeMessage(rep ? r->GetRepeatedMessage(m, f, index) : r->GetMessage(m, f), out);
      break;
  }
}

void EncodeMessage(const Message& m, std::string* out) {
  const Reflection* r = m.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  r->ListFields(m, &fields);
  out->push_back('{');
  bool first = true;
  for (const FieldDescriptor* f : fields) {
    if (!first) out->push_back(',');
    first = false;
    AppendString(out, f->json_name());
    out->push_back(':');
    if (f->is_repeated()) {
      out->push_back('[');
      const int n = r->FieldSize(m, f);
      for (int i = 0; i < n; ++i) {
        if (i > 0) out->push_back(',');
        EncodeValue(m, f, i, out);
      }
      out->push_back(']');
    } else {
      EncodeValue(m, f, -1, out);
    }
  }
  out->push_back('}');
}

// ---- decoding ----

// An AnyValue array's or key-value list's elements.
bool IsCollectionValues(const FieldDescriptor* f) {
  return f->containing_type() == otlp_common::ArrayValue::descriptor() ||
         f->containing_type() == otlp_common::KeyValueList::descriptor();
}

struct Decoder {
  std::string error;
  DecodeBounds* bounds = nullptr;

  bool Fail(const FieldDescriptor* f, std::string_view what) {
    error = fmt::format("field {}: {}", f->full_name(), what);
    return false;
  }

  template <typename Int>
  bool ParseInt(const FieldDescriptor* f, simdjson::dom::element e, Int* out) {
    if (e.is_string()) {
      std::string_view s = e.get_string().value_unsafe();
      auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
      if (ec != std::errc() || p != s.data() + s.size()) return Fail(f, "bad integer string");
      return true;
    }
    if (e.is_int64()) {
      std::int64_t v = e.get_int64().value_unsafe();
      if (v < static_cast<std::int64_t>(std::numeric_limits<Int>::min()) ||
          (v > 0 && static_cast<std::uint64_t>(v) > std::numeric_limits<Int>::max()))
        return Fail(f, "integer out of range");
      *out = static_cast<Int>(v);
      return true;
    }
    if (e.is_uint64()) {
      std::uint64_t v = e.get_uint64().value_unsafe();
      if (v > static_cast<std::uint64_t>(std::numeric_limits<Int>::max()))
        return Fail(f, "integer out of range");
      *out = static_cast<Int>(v);
      return true;
    }
    if (e.is_double()) {
      double d = e.get_double().value_unsafe();
      if (d != std::floor(d) || d < static_cast<double>(std::numeric_limits<Int>::min()) ||
          d > static_cast<double>(std::numeric_limits<Int>::max()))
        return Fail(f, "not an integer");
      *out = static_cast<Int>(d);
      return true;
    }
    return Fail(f, "expected an integer");
  }

  bool ParseDouble(const FieldDescriptor* f, simdjson::dom::element e, double* out) {
    if (e.is_string()) {
      std::string_view s = e.get_string().value_unsafe();
      if (s == "NaN")
        *out = std::numeric_limits<double>::quiet_NaN();
      else if (s == "Infinity")
        *out = std::numeric_limits<double>::infinity();
      else if (s == "-Infinity")
        *out = -std::numeric_limits<double>::infinity();
      else {
        auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
        if (ec != std::errc() || p != s.data() + s.size()) return Fail(f, "bad number string");
      }
      return true;
    }
    if (e.get_double().get(*out) != simdjson::SUCCESS) return Fail(f, "expected a number");
    return true;
  }

  // Decodes one value of field `f` of `m` (`rep`: append to the repeated field).
  bool Value(Message* m, const FieldDescriptor* f, simdjson::dom::element e, bool rep, int depth) {
    const Reflection* r = m->GetReflection();
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32: {
        std::int32_t v{};
        if (!ParseInt(f, e, &v)) return false;
        rep ? r->AddInt32(m, f, v) : r->SetInt32(m, f, v);
        return true;
      }
      case FieldDescriptor::CPPTYPE_UINT32: {
        std::uint32_t v{};
        if (!ParseInt(f, e, &v)) return false;
        rep ? r->AddUInt32(m, f, v) : r->SetUInt32(m, f, v);
        return true;
      }
      case FieldDescriptor::CPPTYPE_INT64: {
        std::int64_t v{};
        if (!ParseInt(f, e, &v)) return false;
        rep ? r->AddInt64(m, f, v) : r->SetInt64(m, f, v);
        return true;
      }
      case FieldDescriptor::CPPTYPE_UINT64: {
        std::uint64_t v{};
        if (!ParseInt(f, e, &v)) return false;
        rep ? r->AddUInt64(m, f, v) : r->SetUInt64(m, f, v);
        return true;
      }
      case FieldDescriptor::CPPTYPE_DOUBLE:
      case FieldDescriptor::CPPTYPE_FLOAT: {
        double v{};
        if (!ParseDouble(f, e, &v)) return false;
        if (f->cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE)
          rep ? r->AddDouble(m, f, v) : r->SetDouble(m, f, v);
        else
          rep ? r->AddFloat(m, f, static_cast<float>(v)) : r->SetFloat(m, f, static_cast<float>(v));
        return true;
      }
      case FieldDescriptor::CPPTYPE_BOOL: {
        bool v{};
        if (e.get_bool().get(v) != simdjson::SUCCESS) return Fail(f, "expected a boolean");
        rep ? r->AddBool(m, f, v) : r->SetBool(m, f, v);
        return true;
      }
      case FieldDescriptor::CPPTYPE_ENUM: {
        int v{};
        if (e.is_string()) {
          std::string_view s = e.get_string().value_unsafe();
          const auto* ev = f->enum_type()->FindValueByName(std::string(s));
          if (ev == nullptr) {
            if (!ParseInt(f, e, &v)) return Fail(f, "unknown enum name");
          } else {
            v = ev->number();
          }
        } else if (!ParseInt(f, e, &v)) {
          return false;
        }
        rep ? r->AddEnumValue(m, f, v) : r->SetEnumValue(m, f, v);
        return true;
      }
      case FieldDescriptor::CPPTYPE_STRING: {
        std::string_view s;
        if (e.get_string().get(s) != simdjson::SUCCESS) return Fail(f, "expected a string");
        std::string v;
        if (f->type() == FieldDescriptor::TYPE_BYTES) {
          bool ok = false;
          if (IsIdField(f)) {
            // Hex per OTLP/JSON; base64 (protobuf's JSON mapping) only if it yields an id.
            ok = HexToBytes(s, &v) || (Base64Decode(s, &v) && (v.size() == 8 || v.size() == 16));
          } else {
            ok = Base64Decode(s, &v);
          }
          if (!ok) return Fail(f, IsIdField(f) ? "bad hex id" : "bad base64");
        } else {
          v.assign(s);
        }
        rep ? r->AddString(m, f, std::move(v)) : r->SetString(m, f, std::move(v));
        return true;
      }
      case FieldDescriptor::CPPTYPE_MESSAGE: {
        simdjson::dom::object obj;
        if (e.get_object().get(obj) != simdjson::SUCCESS) return Fail(f, "expected an object");
        return Object(rep ? r->AddMessage(m, f) : r->MutableMessage(m, f), obj, depth + 1);
      }
    }
    return Fail(f, "unsupported type");
  }

  // A repeated field's items, nulls skipped; past the bound on collections' elements, the
  // rest only counted.
  bool Repeated(Message* m, const FieldDescriptor* f, simdjson::dom::element e, int depth) {
    simdjson::dom::array arr;
    if (e.get_array().get(arr) != simdjson::SUCCESS) return Fail(f, "expected an array");
    std::uint32_t room =
        bounds != nullptr && IsCollectionValues(f) ? bounds->collection_values : UINT32_MAX;
    for (auto item : arr) {
      if (item.is_null()) continue;
      if (room == 0) {
        ++bounds->skipped;
        continue;
      }
      if (room != UINT32_MAX) --room;
      if (!Value(m, f, item, true, depth)) return false;
    }
    return true;
  }

  bool Object(Message* m, simdjson::dom::object obj, int depth) {
    if (depth > kMaxDepth) {
      error = "nesting too deep";
      return false;
    }
    const auto* desc = m->GetDescriptor();
    std::string key_buf;
    for (auto field : obj) {
      key_buf.assign(field.key);
      const FieldDescriptor* f = desc->FindFieldByName(key_buf);
      if (f == nullptr) f = desc->FindFieldByCamelcaseName(key_buf);
      if (f == nullptr) continue;  // unknown fields are ignored, as protobuf does
      simdjson::dom::element e = field.value;
      if (e.is_null()) continue;
      if (f->is_repeated()) {
        if (!Repeated(m, f, e, depth)) return false;
      } else if (!Value(m, f, e, false, depth)) {
        return false;
      }
    }
    return true;
  }
};

}  // namespace

std::string Encode(const Message& message) {
  std::string out;
  out.reserve(message.ByteSizeLong() * 2 + 16);
  EncodeMessage(message, &out);
  return out;
}

namespace {

bool DecodeWith(simdjson::dom::parser& parser, std::string_view json, Message* out,
                std::string* error, DecodeBounds* bounds) {
  out->Clear();
  simdjson::dom::element doc;
  if (auto err = parser.parse(json.data(), json.size(), true).get(doc); err) {
    if (error) *error = fmt::format("invalid JSON: {}", simdjson::error_message(err));
    return false;
  }
  simdjson::dom::object obj;
  if (doc.get_object().get(obj) != simdjson::SUCCESS) {
    if (error) *error = "top-level JSON value is not an object";
    return false;
  }
  Decoder d;
  d.bounds = bounds;
  if (!d.Object(out, obj, 0)) {
    if (error) *error = std::move(d.error);
    return false;
  }
  return true;
}

// A parser's buffers grow to the largest document it read (several times its size: the tape
// takes 8 bytes a value, the index 4 a structural character) and are kept for the next one.
// Past this size they are given back once the document is decoded, so that one large request
// does not keep tens of MiB in each receiving thread for the agent's lifetime.
constexpr std::size_t kKeepParserBytes = 1u << 20;

}  // namespace

bool Decode(std::string_view json, Message* out, std::string* error, DecodeBounds* bounds) {
  thread_local simdjson::dom::parser parser;
  const bool ok = DecodeWith(parser, json, out, error, bounds);
  if (json.size() > kKeepParserBytes) parser = simdjson::dom::parser{};
  return ok;
}

}  // namespace infertel::otlp_json
