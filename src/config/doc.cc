#include "config/doc.h"

#include <fmt/format.h>

namespace infertel::config {

namespace {
std::string Cell(std::string_view s) { return s.empty() ? "—" : fmt::format("`{}`", s); }
std::string Type(const KeySpec& k) {
  switch (k.type) {
    case ValueType::kBool:
      return "bool";
    case ValueType::kInt:
      return fmt::format("int {}..{}", k.min, k.max);
    case ValueType::kEnum: {
      std::string s(k.allowed);
      for (auto& c : s)
        if (c == '|') c = '/';
      return s;
    }
    case ValueType::kList: {
      std::string s(k.allowed);
      for (auto& c : s)
        if (c == '|') c = '/';
      return "list of " + s;
    }
    case ValueType::kTable: {
      std::string s(k.allowed);
      for (auto& c : s)
        if (c == '|') c = '/';
      return fmt::format("model → {} (int {}..{})", s, k.min, k.max);
    }
  }
  return "";
}
}  // namespace

std::string KeysMarkdownTable() {
  std::string out =
      "| spec | console key | env var | type | default | applies | engine | description |\n"
      "| --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (const KeySpec& k : AllKeys()) {
    out +=
        fmt::format("| {} | `{}` | {} | {} | {} | {} | {} | {} |\n", k.spec_section, k.console_key,
                    Cell(k.env_var), Type(k),
                    k.default_value.empty() ? std::string(k.engine_knob ? "engine's own" : "unset")
                                            : Cell(k.default_value),
                    k.apply == Apply::kLive ? "live" : "restart",
                    k.engine.empty() ? std::string("all") : std::string(k.engine), k.description);
  }
  return out;
}

std::string DescribeSettings(const Settings& s) {
  std::string out;
  for (const KeySpec& k : AllKeys()) {
    const auto& e = s.At(k.key);
    out += fmt::format("{:<62} {:<14} {:<8} {:<7} {}\n", k.console_key,
                       s.IsSet(k.key)  ? FormatValue(e.value)
                       : k.engine_knob ? "(engine's own)"
                                       : "(unset)",
                       SourceName(e.source), k.apply == Apply::kLive ? "live" : "restart",
                       k.env_var.empty() ? "-" : k.env_var);
  }
  return out;
}

}  // namespace infertel::config
