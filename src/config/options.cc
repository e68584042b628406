#include "config/options.h"

#include <fmt/format.h>

#include <mutex>
#include <utility>

namespace infertel::config {

namespace {

std::string Code(const std::string& s) { return s.empty() ? "—" : fmt::format("`{}`", s); }

struct Group {
  std::string name;
  OptionLister lister;
};

std::vector<Group>& Groups() {
  static std::vector<Group> groups;
  return groups;
}
std::mutex g_groups_mu;

}  // namespace

std::string OptionsMarkdownTable(std::span<const OptionDoc> options) {
  std::string out =
      "| flag | agent file | env | console key | default | unit | range | meaning |\n"
      "| --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (const OptionDoc& o : options) {
    std::string meaning = o.help;
    if (!o.more.empty()) meaning += o.more.front() == '(' ? " " + o.more : "; " + o.more;
    out += fmt::format("| `{}` | {} | {} | {} | {} | {} | {} | {} |\n", o.flag, Code(o.yaml_key),
                       Code(o.env_var), Code(o.console_key), Code(o.default_text),
                       o.unit.empty() ? "—" : o.unit, o.range.empty() ? "—" : o.range, meaning);
  }
  return out;
}

void RegisterOptionGroup(std::string_view name, OptionLister lister) {
  std::lock_guard lock(g_groups_mu);
  Groups().push_back(Group{std::string(name), std::move(lister)});
}

std::vector<OptionDoc> RegisteredOptions() {
  std::lock_guard lock(g_groups_mu);
  std::vector<OptionDoc> out;
  for (const Group& g : Groups()) {
    auto rows = g.lister();
    out.insert(out.end(), rows.begin(), rows.end());
  }
  return out;
}

}  // namespace infertel::config
