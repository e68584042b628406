#pragma once
// The options of `infertel agent` (and `infertel launch`, which takes them all): each declared
// once, in app/agent_options.cc, with its flag, field, checks, agent-file key, environment
// variable, live key and help. CLI11 registration and the option table of
// docs/configuration.md are both driven from it.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "app/agent_flags.h"
#include "config/keys.h"
#include "config/options.h"
#include "config/settings.h"
#include "http/url.h"

namespace infertel {

template <typename T>
using FieldRef = T& (*)(AgentFlags&);
using AgentField = std::variant<FieldRef<std::string>, FieldRef<int>, FieldRef<std::size_t>,
                                FieldRef<std::int64_t>, FieldRef<std::uint32_t>>;

struct AgentOption {
  std::string_view flag;
  AgentField field;
  std::string_view help;
  std::string_view unit = {};
  std::int64_t min = 0, max = 0;  // a range check when min < max
  std::string_view allowed = {};  // '|' separated: a membership check
  std::string_view yaml_key = {};
  std::string_view env_var = {};
  // The live key the flag sets as its environment variable would (the console wins over it):
  // its env var, default and range come from the key registry.
  std::optional<config::Key> key = {};
  std::string_view default_text = {};  // shown instead of the field's initial value
  std::string_view more = {};          // the document only
};

std::span<const AgentOption> AgentOptionTable();
// The option as the document shows it; its default is the field's initial value in a
// default-constructed AgentFlags unless the row says otherwise.
config::OptionDoc DocOf(const AgentOption& option);
// The agent's rows, then any registered group's (config/options.h).
std::vector<config::OptionDoc> AgentOptionDocs();
// The table of docs/configuration.md's "Agent settings".
std::string AgentOptionsMarkdown();

// `env` with the values of the given flags that stand for live keys (--upstream-*-timeout-ms,
// --drain-timeout-ms) put over their variables: a flag wins over the variable, and the console
// (file, URL, API) over both.
config::EnvLookup KeyFlagsOverEnv(config::EnvLookup env, const AgentFlags& flags);

// --admin over the agent file's `admin` (already in *admin) over the default: an empty flag
// leaves *admin; false when the flag is not HOST:PORT.
bool ApplyAdminFlag(const std::string& flag, http::HostPort* admin);

// Registers the table's options on `sub`, each bound to its field of `flags`.
void AddAgentTableOptions(CLI::App* sub, AgentFlags* flags);

}  // namespace infertel
