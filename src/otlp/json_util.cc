#include "otlp/json_util.h"

#include "core/json.h"

#include <fmt/format.h>

#include <cmath>

namespace infertel::otlp_json {

void AppendString(std::string* out, std::string_view s) { AppendJsonString(out, s); }

void AppendDouble(std::string* out, double v) {
  if (!std::isfinite(v)) {
    out->append("null");
    return;
  }
  fmt::format_to(std::back_inserter(*out), "{}", v);
}

std::string Base64Encode(std::string_view in) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    std::uint32_t n =
        (std::uint8_t(in[i]) << 16) | (std::uint8_t(in[i + 1]) << 8) | std::uint8_t(in[i + 2]);
    out.push_back(kAlphabet[(n >> 18) & 63]);
    out.push_back(kAlphabet[(n >> 12) & 63]);
    out.push_back(kAlphabet[(n >> 6) & 63]);
    out.push_back(kAlphabet[n & 63]);
  }
  if (std::size_t rest = in.size() - i; rest > 0) {
    std::uint32_t n = std::uint8_t(in[i]) << 16;
    if (rest == 2) n |= std::uint8_t(in[i + 1]) << 8;
    out.push_back(kAlphabet[(n >> 18) & 63]);
    out.push_back(kAlphabet[(n >> 12) & 63]);
    out.push_back(rest == 2 ? kAlphabet[(n >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

bool Base64Decode(std::string_view text, std::string* out) {
  out->clear();
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    int v;
    if (c >= 'A' && c <= 'Z')
      v = c - 'A';
    else if (c >= 'a' && c <= 'z')
      v = c - 'a' + 26;
    else if (c >= '0' && c <= '9')
      v = c - '0' + 52;
    else if (c == '+' || c == '-')
      v = 62;
    else if (c == '/' || c == '_')
      v = 63;
    else if (c == '=')
      break;
    else
      return false;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out->push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return true;
}

void AppendPlainValue(std::string* out, const AnyValue& v) {
  switch (v.value_case()) {
    case AnyValue::kStringValue:
      AppendString(out, v.string_value());
      break;
    case AnyValue::kBoolValue:
      out->append(v.bool_value() ? "true" : "false");
      break;
    case AnyValue::kIntValue:
      fmt::format_to(std::back_inserter(*out), "{}", v.int_value());
      break;
    case AnyValue::kDoubleValue:
      AppendDouble(out, v.double_value());
      break;
    case AnyValue::kBytesValue:
      AppendString(out, Base64Encode(v.bytes_value()));
      break;
    case AnyValue::kArrayValue: {
      out->push_back('[');
      bool first = true;
      for (const auto& e : v.array_value().values()) {
        if (!first) out->push_back(',');
        first = false;
        AppendPlainValue(out, e);
      }
      out->push_back(']');
      break;
    }
    case AnyValue::kKvlistValue:
      AppendPlainAttributes(out, v.kvlist_value().values());
      break;
    default:
      out->append("null");
  }
}

void AppendPlainAttributes(std::string* out,
                           const google::protobuf::RepeatedPtrField<KeyValue>& attrs) {
  out->push_back('{');
  bool first = true;
  for (const auto& kv : attrs) {
    if (!first) out->push_back(',');
    first = false;
    AppendString(out, kv.key());
    out->push_back(':');
    AppendPlainValue(out, kv.value());
  }
  out->push_back('}');
}

std::string PlainAttributes(const google::protobuf::RepeatedPtrField<KeyValue>& attrs) {
  std::string s;
  AppendPlainAttributes(&s, attrs);
  return s;
}

}  // namespace infertel::otlp_json
