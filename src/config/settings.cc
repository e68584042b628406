#include "config/settings.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <map>

#include <fmt/format.h>
#include <simdjson.h>

#include "core/json.h"
#include "core/printable.h"

namespace infertel::config {
namespace {

std::string Upper(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return std::toupper(c); });
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string AcceptedText(const KeySpec& spec) {
  switch (spec.type) {
    case ValueType::kBool:
      return "true or false";
    case ValueType::kInt:
      return fmt::format("an integer from {} to {}", spec.min, spec.max);
    case ValueType::kEnum: {
      std::string s(spec.allowed);
      std::replace(s.begin(), s.end(), '|', ',');
      if (spec.key == Key::kMessageContentCaptureStrategy)
        s += " (or SPAN_ONLY, EVENT_ONLY, SPAN_AND_EVENT)";
      return "one of " + s;
    }
    case ValueType::kList: {
      std::string s(spec.allowed);
      std::replace(s.begin(), s.end(), '|', ',');
      return "a comma-separated list of " + s;
    }
    case ValueType::kTable: {
      std::string s(spec.allowed);
      std::replace(s.begin(), s.end(), '|', ',');
      return fmt::format(
          "a mapping of model name to {{{}}}, each an integer from {} to {} (JSON: "
          "{{\"MODEL\": {{\"FIELD\": N}}}})",
          s, spec.min, spec.max);
    }
  }
  return "";
}

// The options of a '|' separated list, each passed to `f` until it returns true.
template <typename F>
bool AnyOption(std::string_view allowed, F f) {
  while (!allowed.empty()) {
    const auto bar = allowed.find('|');
    if (f(allowed.substr(0, bar))) return true;
    if (bar == std::string_view::npos) break;
    allowed.remove_prefix(bar + 1);
  }
  return false;
}

bool NameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
}

// One list item in canonical spelling (lower case), or nullopt when no option admits it.
std::optional<std::string> ListItem(const KeySpec& spec, std::string_view item) {
  std::string lower(Trim(item));
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  const bool ok = AnyOption(spec.allowed, [&](std::string_view option) {
    if (option.ends_with(":*")) {
      const std::string_view prefix = option.substr(0, option.size() - 1);
      if (!lower.starts_with(prefix) || lower.size() == prefix.size()) return false;
      return std::all_of(lower.begin() + static_cast<std::ptrdiff_t>(prefix.size()), lower.end(),
                         NameChar);
    }
    return lower == option;
  });
  if (!ok) return std::nullopt;
  return lower;
}

std::optional<std::string> ParseList(const KeySpec& spec, std::string_view text) {
  std::string out;
  if (Trim(text).empty()) return out;  // an empty list: set, and naming nothing
  while (true) {
    const auto comma = text.find(',');
    auto item = ListItem(spec, text.substr(0, comma));
    if (!item) return std::nullopt;
    if (!out.empty()) out += ',';
    out += *item;
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

// Canonical JSON of a table value: names in order, each one's fields in the order `allowed`
// gives them. nullopt for anything else (unknown field, a value not an integer in range).
std::optional<std::string> ParseTable(const KeySpec& spec, std::string_view text) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  simdjson::dom::object rows;
  if (parser.parse(text.data(), text.size()).get(doc) || doc.get(rows)) return std::nullopt;
  std::map<std::string, std::map<std::string, std::int64_t>> table;
  for (auto row : rows) {
    simdjson::dom::object fields;
    if (row.key.empty() || row.value.get(fields)) return std::nullopt;
    auto& out = table[std::string(row.key)];
    for (auto field : fields) {
      std::int64_t v = 0;
      const bool known =
          AnyOption(spec.allowed, [&](std::string_view o) { return o == field.key; });
      if (!known || field.value.get(v) || v < spec.min || v > spec.max) return std::nullopt;
      out[std::string(field.key)] = v;
    }
  }
  std::string json = "{";
  for (const auto& row : table) {
    const std::string& name = row.first;
    const auto& fields = row.second;  // a plain reference: lambdas may not capture bindings
    if (json.size() > 1) json += ',';
    AppendJsonString(&json, name);
    json += ":{";
    bool first = true;
    AnyOption(spec.allowed, [&](std::string_view o) {
      auto it = fields.find(std::string(o));
      if (it == fields.end()) return false;
      if (!first) json += ',';
      first = false;
      AppendJsonString(&json, o);
      json += ':' + std::to_string(it->second);
      return false;
    });
    json += '}';
  }
  return json + '}';
}

}  // namespace

std::string AcceptedValues(const KeySpec& spec) { return AcceptedText(spec); }

GenAiDialect GenAiDialectIn(const Settings& s) {
  return GenAiDialectOf(s.GetString(Key::kSemconvStabilityOptIn));
}

std::string_view SourceName(Source s) {
  switch (s) {
    case Source::kDefault:
      return "default";
    case Source::kEnv:
      return "env";
    case Source::kConsole:
      return "console";
  }
  return "default";
}

std::variant<Value, std::string> ParseValue(const KeySpec& spec, std::string_view raw) {
  std::string_view text = Trim(raw);
  auto error = [&] {
    // Cut and escaped: the value may come from a console document or an admin API caller.
    return fmt::format("invalid value '{}' for {}: expected {}", Excerpt(raw, 64), spec.console_key,
                       AcceptedText(spec));
  };
  switch (spec.type) {
    case ValueType::kBool: {
      std::string u = Upper(text);
      if (u == "TRUE" || u == "1" || u == "ON" || u == "YES") return Value{true};
      if (u == "FALSE" || u == "0" || u == "OFF" || u == "NO") return Value{false};
      return error();
    }
    case ValueType::kInt: {
      std::int64_t v = 0;
      auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (ec != std::errc() || p != text.data() + text.size() || v < spec.min || v > spec.max)
        return error();
      return Value{v};
    }
    case ValueType::kEnum: {
      std::string u = Upper(text);
      if (spec.key == Key::kMessageContentCaptureStrategy) {
        if (u == "SPAN_ONLY") return Value{std::string("span")};
        if (u == "EVENT_ONLY") return Value{std::string("event")};
      }
      std::string_view allowed = spec.allowed;
      while (!allowed.empty()) {
        auto bar = allowed.find('|');
        std::string_view option = allowed.substr(0, bar);
        if (Upper(option) == u) return Value{std::string(option)};
        if (bar == std::string_view::npos) break;
        allowed.remove_prefix(bar + 1);
      }
      return error();
    }
    case ValueType::kList: {
      if (auto list = ParseList(spec, text)) return Value{std::move(*list)};
      return error();
    }
    case ValueType::kTable: {
      if (auto table = ParseTable(spec, text)) return Value{std::move(*table)};
      return error();
    }
  }
  return error();
}

std::string FormatValue(const Value& v) {
  struct V {
    std::string operator()(std::monostate) const { return ""; }
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(std::int64_t i) const { return std::to_string(i); }
    std::string operator()(const std::string& s) const { return s; }
  };
  return std::visit(V{}, v);
}

bool Settings::GetBool(Key k) const {
  const auto* b = std::get_if<bool>(&At(k).value);
  return b != nullptr && *b;
}
std::int64_t Settings::GetInt(Key k) const {
  const auto* i = std::get_if<std::int64_t>(&At(k).value);
  return i != nullptr ? *i : 0;
}
std::string_view Settings::GetString(Key k) const {
  const auto* s = std::get_if<std::string>(&At(k).value);
  return s != nullptr ? std::string_view(*s) : std::string_view();
}

EnvLookup ProcessEnv() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* v = std::getenv(std::string(name).c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

Resolution Resolve(const EnvLookup& env, const std::map<Key, std::string>& console) {
  Resolution r;
  for (const KeySpec& spec : AllKeys()) {
    Settings::Entry& e = r.settings.Mutable(spec.key);
    if (!spec.default_value.empty()) {
      auto parsed = ParseValue(spec, spec.default_value);
      e.value = std::get<Value>(parsed);  // defaults are checked by the unit tests
    }
    e.source = Source::kDefault;
    if (!spec.env_var.empty() && env) {
      if (auto text = env(spec.env_var)) {
        auto parsed = ParseValue(spec, *text);
        if (auto* v = std::get_if<Value>(&parsed)) {
          e.value = *v;
          e.source = Source::kEnv;
        } else {
          r.errors.push_back(
              fmt::format("{} (from {})", std::get<std::string>(parsed), spec.env_var));
        }
      }
    }
    if (auto it = console.find(spec.key); it != console.end()) {
      auto parsed = ParseValue(spec, it->second);
      if (auto* v = std::get_if<Value>(&parsed)) {
        e.value = *v;
        e.source = Source::kConsole;
      } else {
        r.errors.push_back(std::get<std::string>(parsed));
      }
    }
  }
  return r;
}

ConfigStore::ConfigStore(Settings initial)
    : current_(std::make_shared<const Settings>(std::move(initial))) {}

void ConfigStore::Publish(Settings next) {
  std::lock_guard lock(mu_);
  auto fresh = std::make_shared<const Settings>(std::move(next));
  auto old = current_.exchange(fresh, std::memory_order_acq_rel);
  for (auto& l : listeners_) l(*old, *fresh);
}

void ConfigStore::Subscribe(Listener listener) {
  std::lock_guard lock(mu_);
  listeners_.push_back(std::move(listener));
}

}  // namespace infertel::config
