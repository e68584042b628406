#include "otlp/json.h"

#include <fmt/format.h>
#include <google/protobuf/descriptor.h>

#include <charconv>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/hex.h"
#include "otlp/json_cursor.h"
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

using Kind = JsonCursor::Kind;

// Reads the text with a JsonCursor straight into the message: each field's value is read in
// the form the field wants, what is not kept is skipped unbuilt.
struct Decoder {
  JsonCursor& in;
  DecodeBounds* bounds = nullptr;
  std::string error;
  std::string scratch;  // a string with escapes, unescaped
  std::string key_buf;  // a member name with escapes, unescaped
  std::string name;     // the member name being looked up

  bool Fail(const FieldDescriptor* f, std::string_view what) {
    error = fmt::format("field {}: {}", f->full_name(), what);
    return false;
  }
  bool Syntax() {
    error = fmt::format("invalid JSON: {}", in.error());
    return false;
  }
  // The next value is of kind `want`; a byte that starts no value is a syntax error.
  bool Expect(const FieldDescriptor* f, Kind want, std::string_view what) {
    const Kind got = in.Peek();
    if (got == want) return true;
    return got == Kind::kBad ? (in.Skip(), Syntax()) : Fail(f, what);
  }

  template <typename Int>
  bool IntFromText(const FieldDescriptor* f, std::string_view s, Int* out) {
    if constexpr (std::is_unsigned_v<Int>) {
      if (s == "-0") s = "0";
    }
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
    if (ec == std::errc::result_out_of_range ||
        (ec == std::errc::invalid_argument && std::is_unsigned_v<Int> && !s.empty() &&
         s[0] == '-' && s.size() > 1 && s[1] >= '0' && s[1] <= '9'))
      return Fail(f, "integer out of range");
    if (ec != std::errc() || p != s.data() + s.size()) return Fail(f, "bad integer string");
    return true;
  }

  template <typename Int>
  bool ParseInt(const FieldDescriptor* f, Int* out) {
    std::string_view s;
    bool integer = false;
    switch (in.Peek()) {
      case Kind::kString:
        return (in.String(&s, &scratch) || Syntax()) && IntFromText(f, s, out);
      case Kind::kNumber:
        if (!in.Number(&s, &integer)) return Syntax();
        if (integer) return IntFromText(f, s, out);
        break;
      default:
        return Expect(f, Kind::kNumber, "expected an integer");
    }
    double d = 0;
    if (!NumberToDouble(f, s, &d)) return false;
    if (d != std::floor(d) || d < static_cast<double>(std::numeric_limits<Int>::min()) ||
        d > static_cast<double>(std::numeric_limits<Int>::max()))
      return Fail(f, "not an integer");
    *out = static_cast<Int>(d);
    return true;
  }

  // A number's text as a double; one too small for a double is zero, one too large refused.
  bool NumberToDouble(const FieldDescriptor* f, std::string_view s, double* out) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
    if (ec == std::errc::result_out_of_range) {
      const auto e = s.find_first_of("eE");
      if (e == std::string_view::npos || e + 1 >= s.size() || s[e + 1] != '-')
        return Fail(f, "number out of range");
      *out = s[0] == '-' ? -0.0 : 0.0;
      return true;
    }
    if (ec != std::errc() || p != s.data() + s.size()) return Fail(f, "bad number string");
    return true;
  }

  bool ParseDouble(const FieldDescriptor* f, double* out) {
    std::string_view s;
    bool integer = false;
    if (in.Peek() == Kind::kNumber)
      return (in.Number(&s, &integer) || Syntax()) && NumberToDouble(f, s, out);
    if (!Expect(f, Kind::kString, "expected a number")) return false;
    if (!in.String(&s, &scratch)) return Syntax();
    if (s == "NaN")
      *out = std::numeric_limits<double>::quiet_NaN();
    else if (s == "Infinity")
      *out = std::numeric_limits<double>::infinity();
    else if (s == "-Infinity")
      *out = -std::numeric_limits<double>::infinity();
    else
      return NumberToDouble(f, s, out);
    return true;
  }

  bool ParseEnum(const FieldDescriptor* f, int* out) {
    if (in.Peek() != Kind::kString) return ParseInt(f, out);
    std::string_view s;
    if (!in.String(&s, &scratch)) return Syntax();
    if (const auto* ev = f->enum_type()->FindValueByName(std::string(s)); ev != nullptr) {
      *out = ev->number();
      return true;
    }
    return IntFromText(f, s, out) || Fail(f, "unknown enum name");
  }

  bool ParseBool(const FieldDescriptor* f, bool* out) {
    const Kind k = in.Peek();
    if (k != Kind::kTrue && k != Kind::kFalse) return Expect(f, Kind::kTrue, "expected a boolean");
    return in.Literal(out) || Syntax();
  }

  bool ParseString(const FieldDescriptor* f, std::string* v) {
    std::string_view s;
    if (!Expect(f, Kind::kString, "expected a string")) return false;
    if (!in.String(&s, &scratch)) return Syntax();
    if (f->type() != FieldDescriptor::TYPE_BYTES) {
      v->assign(s);
      return true;
    }
    // Hex per OTLP/JSON; base64 (protobuf's JSON mapping) only if it yields an id.
    const bool ok = IsIdField(f) ? HexToBytes(s, v) ||
                                       (Base64Decode(s, v) && (v->size() == 8 || v->size() == 16))
                                 : Base64Decode(s, v);
    return ok || Fail(f, IsIdField(f) ? "bad hex id" : "bad base64");
  }

  // Decodes one value of field `f` of `m` (`rep`: append to the repeated field).
  bool Value(Message* m, const FieldDescriptor* f, bool rep, int depth) {
    const Reflection* r = m->GetReflection();
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32:
        return Scalar<std::int32_t>(m, f, rep, &Reflection::AddInt32, &Reflection::SetInt32);
      case FieldDescriptor::CPPTYPE_UINT32:
        return Scalar<std::uint32_t>(m, f, rep, &Reflection::AddUInt32, &Reflection::SetUInt32);
      case FieldDescriptor::CPPTYPE_INT64:
        return Scalar<std::int64_t>(m, f, rep, &Reflection::AddInt64, &Reflection::SetInt64);
      case FieldDescriptor::CPPTYPE_UINT64:
        return Scalar<std::uint64_t>(m, f, rep, &Reflection::AddUInt64, &Reflection::SetUInt64);
      case FieldDescriptor::CPPTYPE_DOUBLE:
        return Scalar<double>(m, f, rep, &Reflection::AddDouble, &Reflection::SetDouble);
      case FieldDescriptor::CPPTYPE_FLOAT: {
        double v{};
        if (!ParseDouble(f, &v)) return false;
        rep ? r->AddFloat(m, f, static_cast<float>(v)) : r->SetFloat(m, f, static_cast<float>(v));
        return true;
      }
      case FieldDescriptor::CPPTYPE_BOOL:
        return Scalar<bool>(m, f, rep, &Reflection::AddBool, &Reflection::SetBool);
      case FieldDescriptor::CPPTYPE_ENUM:
        return Scalar<int>(m, f, rep, &Reflection::AddEnumValue, &Reflection::SetEnumValue);
      case FieldDescriptor::CPPTYPE_STRING: {
        std::string v;
        if (!ParseString(f, &v)) return false;
        rep ? r->AddString(m, f, std::move(v)) : r->SetString(m, f, std::move(v));
        return true;
      }
      case FieldDescriptor::CPPTYPE_MESSAGE:
        if (!Expect(f, Kind::kObject, "expected an object")) return false;
        return Object(rep ? r->AddMessage(m, f) : r->MutableMessage(m, f), depth + 1);
    }
    return Fail(f, "unsupported type");
  }

  template <typename T>
  bool Parse(const FieldDescriptor* f, T* v) {
    if constexpr (std::is_same_v<T, double>)
      return ParseDouble(f, v);
    else if constexpr (std::is_same_v<T, bool>)
      return ParseBool(f, v);
    else if constexpr (std::is_same_v<T, int>)
      return f->cpp_type() == FieldDescriptor::CPPTYPE_ENUM ? ParseEnum(f, v) : ParseInt(f, v);
    else
      return ParseInt(f, v);
  }

  template <typename T>
  bool Scalar(Message* m, const FieldDescriptor* f, bool rep,
              void (Reflection::*add)(Message*, const FieldDescriptor*, T) const,
              void (Reflection::*set)(Message*, const FieldDescriptor*, T) const) {
    T v{};
    if (!Parse(f, &v)) return false;
    (m->GetReflection()->*(rep ? add : set))(m, f, v);
    return true;
  }

  // A repeated field's items, nulls skipped; past the bound on collections' elements, the
  // rest skipped unbuilt and counted.
  bool Repeated(Message* m, const FieldDescriptor* f, int depth) {
    if (!Expect(f, Kind::kArray, "expected an array")) return false;
    if (!in.EnterArray()) return Syntax();
    std::uint32_t room =
        bounds != nullptr && IsCollectionValues(f) ? bounds->collection_values : UINT32_MAX;
    bool done = false;
    for (bool first = true;; first = false) {
      if (!in.NextElement(first, &done)) return Syntax();
      if (done) return true;
      if (in.Peek() == Kind::kNull || room == 0) {
        if (in.Peek() != Kind::kNull) ++bounds->skipped;
        if (!in.Skip()) return Syntax();
        continue;
      }
      if (room != UINT32_MAX) --room;
      if (!Value(m, f, true, depth)) return false;
    }
  }

  bool Object(Message* m, int depth) {
    if (depth > kMaxDepth) {
      error = "nesting too deep";
      return false;
    }
    if (!in.EnterObject()) return Syntax();
    const auto* desc = m->GetDescriptor();
    std::string_view key;
    bool done = false;
    for (bool first = true;; first = false) {
      if (!in.NextMember(first, &key, &key_buf, &done)) return Syntax();
      if (done) return true;
      name.assign(key);  // the descriptor's lookups take a std::string
      const FieldDescriptor* f = desc->FindFieldByName(name);
      if (f == nullptr) f = desc->FindFieldByCamelcaseName(name);
      // Unknown fields are ignored, as protobuf does; so are nulls.
      if (f == nullptr || in.Peek() == Kind::kNull) {
        if (!in.Skip()) return Syntax();
      } else if (!(f->is_repeated() ? Repeated(m, f, depth) : Value(m, f, false, depth))) {
        return false;
      }
    }
  }
};

}  // namespace

std::string Encode(const Message& message) {
  std::string out;
  out.reserve(message.ByteSizeLong() * 2 + 16);
  EncodeMessage(message, &out);
  return out;
}

bool Decode(std::string_view json, Message* out, std::string* error, DecodeBounds* bounds) {
  out->Clear();
  JsonCursor in(json);
  Decoder d{in, bounds, {}, {}, {}, {}};
  if (!in.Validate()) {
    d.Syntax();
  } else if (const Kind k = in.Peek(); k != Kind::kObject) {
    if (k == Kind::kBad && !in.Skip())
      d.Syntax();
    else
      d.error = "top-level JSON value is not an object";
  } else if (d.Object(out, 0) && in.AtEnd()) {
    return true;
  } else if (d.error.empty()) {
    d.Syntax();
  }
  if (error) *error = std::move(d.error);
  return false;
}

}  // namespace infertel::otlp_json
