#pragma once
// The documented face of a command-line option: its flag, agent-file key, environment variable,
// console key, default, unit and help. Option tables (app/agent_options.cc for `infertel agent`
// and `infertel launch`) describe each option once with this, bind it to its field, and the
// option table of docs/configuration.md is rendered from the same rows.

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace infertel::config {

struct OptionDoc {
  std::string flag;          // "--listen"
  std::string yaml_key;      // key in the agent file (--config); empty: none
  std::string env_var;       // empty: none
  std::string console_key;   // live key the flag sets (config/keys.h); empty: none
  std::string default_text;  // as shown; empty: no default
  std::string unit;          // "ms", "MiB", "duration"; empty: none or self-evident
  std::string range;         // "1..100000", or the allowed values; empty: unchecked here
  std::string help;          // one sentence, shown by --help and in the document
  std::string more;          // the document only: details and links
};

// The Markdown table of a list of options, as docs/configuration.md carries it.
std::string OptionsMarkdownTable(std::span<const OptionDoc> options);

// Options declared outside the agent's own table (engines, later) register a function that
// lists them; their rows follow the agent's in the document.
using OptionLister = std::function<std::vector<OptionDoc>()>;
void RegisterOptionGroup(std::string_view name, OptionLister lister);
// The registered groups' rows, in registration order.
std::vector<OptionDoc> RegisteredOptions();

}  // namespace infertel::config
