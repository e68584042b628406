#include "core/stats.h"

#include <fmt/format.h>

#include <map>

namespace infertel {

void AppendLabelValue(std::string* out, std::string_view value) {
  for (char c : value) {
    switch (c) {
      case '\\':
        *out += "\\\\";
        break;
      case '"':
        *out += "\\\"";
        break;
      case '\n':
        *out += "\\n";
        break;
      default:
        *out += c;
    }
  }
}

std::string StatsLabel(std::string_view name, std::string_view value) {
  std::string out;
  out.reserve(name.size() + value.size() + 3);
  out += name;
  out += "=\"";
  AppendLabelValue(&out, value);
  out += '"';
  return out;
}

void StatsRegistry::Add(std::string name, std::string help, Type type, std::string labels,
                        const std::atomic<std::uint64_t>* value) {
  AddFn(std::move(name), std::move(help), type, std::move(labels),
        [value] { return static_cast<double>(value->load(std::memory_order_relaxed)); });
}

void StatsRegistry::AddFn(std::string name, std::string help, Type type, std::string labels,
                          std::function<double()> value) {
  std::lock_guard lock(mu_);
  series_.push_back({std::move(name), std::move(help), std::move(labels), type, std::move(value)});
}

std::string StatsRegistry::Render() const {
  std::lock_guard lock(mu_);
  // Group by family so HELP/TYPE appear once, in registration order.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const Series*>> families;
  for (const auto& s : series_) {
    auto& v = families[s.name];
    if (v.empty()) order.push_back(s.name);
    v.push_back(&s);
  }
  std::string out;
  for (const auto& name : order) {
    const auto& v = families[name];
    bool counter = v.front()->type == Type::kCounter;
    std::string exposed = counter ? name + "_total" : name;
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", exposed, v.front()->help, exposed,
                       counter ? "counter" : "gauge");
    for (const auto* s : v) {
      if (s->labels.empty())
        out += fmt::format("{} {}\n", exposed, s->read());
      else
        out += fmt::format("{}{{{}}} {}\n", exposed, s->labels, s->read());
    }
  }
  return out;
}

}  // namespace infertel
