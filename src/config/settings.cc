#include "config/settings.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>

#include <fmt/format.h>

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
  }
  return "";
}

}  // namespace

std::string AcceptedValues(const KeySpec& spec) { return AcceptedText(spec); }

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
