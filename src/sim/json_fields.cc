#include "sim/json_fields.h"

namespace infertel::sim {

using simdjson::dom::element;
using simdjson::dom::object;

std::optional<element> Field(const object& o, std::string_view key) {
  element e;
  if (o.at_key(key).get(e) != simdjson::SUCCESS || e.is_null()) return std::nullopt;
  return e;
}

bool GetBool(const object& o, std::string_view key, bool def) {
  auto e = Field(o, key);
  bool b;
  if (!e || e->get_bool().get(b) != simdjson::SUCCESS) return def;
  return b;
}

std::optional<std::int64_t> GetInt(const object& o, std::string_view key) {
  auto e = Field(o, key);
  if (!e) return std::nullopt;
  std::int64_t v;
  if (e->get_int64().get(v) == simdjson::SUCCESS) return v;
  double d;
  if (e->get_double().get(d) == simdjson::SUCCESS) return static_cast<std::int64_t>(d);
  return std::nullopt;
}

std::optional<double> GetDouble(const object& o, std::string_view key) {
  auto e = Field(o, key);
  if (!e) return std::nullopt;
  double d;
  if (e->get_double().get(d) == simdjson::SUCCESS) return d;
  std::int64_t v;
  if (e->get_int64().get(v) == simdjson::SUCCESS) return static_cast<double>(v);
  return std::nullopt;
}

std::optional<std::string> GetStr(const object& o, std::string_view key) {
  auto e = Field(o, key);
  std::string_view s;
  if (!e || e->get_string().get(s) != simdjson::SUCCESS) return std::nullopt;
  return std::string(s);
}

std::string ContentText(const element& content) {
  std::string_view s;
  if (content.get_string().get(s) == simdjson::SUCCESS) return std::string(s);
  std::string out;
  simdjson::dom::array parts;
  if (content.get_array().get(parts) == simdjson::SUCCESS) {
    for (element part : parts) {
      std::string_view t;
      if (part["text"].get_string().get(t) == simdjson::SUCCESS) out.append(t);
    }
  }
  return out;
}

void AppendChatTurns(const simdjson::dom::array& messages, std::string* text) {
  for (element m : messages) {
    std::string_view role = "user";
    if (m["role"].get_string().get(role) != simdjson::SUCCESS) role = "user";
    element content;
    std::string c;
    if (m["content"].get(content) == simdjson::SUCCESS) c = ContentText(content);
    *text += "<|im_start|>" + std::string(role) + "\n" + c + "<|im_end|>\n";
  }
  *text += "<|im_start|>assistant\n";
}

}  // namespace infertel::sim
