#include <gtest/gtest.h>
#include <CLI/CLI.hpp>

#include <unistd.h>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <ranges>
#include <sstream>
#include <variant>

#include "app/agent.h"
#include "app/agent_options.h"
#include "config/keys.h"

namespace infertel {
namespace {

std::string ReadDoc() {
  std::ifstream in(std::string(INFERTEL_SOURCE_DIR) + "/docs/configuration.md");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The field's value as text, through the row's binding.
std::string FieldText(const AgentOption& o, AgentFlags& f) {
  return std::visit(
      [&](auto ref) {
        const auto& v = ref(f);
        if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::string>) {
          return v;
        } else {
          return std::to_string(v);
        }
      },
      o.field);
}

// A value the option accepts that differs from its initial one.
std::string SampleValue(const AgentOption& o) {
  if (!o.allowed.empty()) {
    AgentFlags initial;
    for (auto part : std::views::split(o.allowed, '|'))
      if (std::string value(part.begin(), part.end()); value != FieldText(o, initial)) return value;
  }
  if (std::holds_alternative<FieldRef<std::string>>(o.field)) return "sample:1";
  if (o.key) return std::to_string(config::Spec(*o.key).max);
  if (o.min < o.max) return std::to_string(o.max);
  return "7";
}

// Parses `agent ARGS...` as main does and returns the flags.
AgentFlags Parse(std::vector<std::string> args) {
  CLI::App app;
  CLI::App* sub = app.add_subcommand("agent");
  AgentFlags flags;
  AddAgentFlags(sub, &flags);
  args.insert(args.begin(), "agent");
  std::reverse(args.begin(), args.end());  // CLI11 takes them last first
  app.parse(args);
  return flags;
}

// docs/configuration.md carries the generated option table; regenerate it with
// `build/infertel config --markdown-options` when an option changes.
TEST(AgentOptionsTest, ConfigurationDocMatchesTheTable) {
  const std::string doc = ReadDoc();
  const std::string begin = "<!-- options:begin -->\n", end = "<!-- options:end -->";
  auto b = doc.find(begin), e = doc.find(end);
  ASSERT_NE(b, std::string::npos);
  ASSERT_NE(e, std::string::npos);
  EXPECT_EQ(doc.substr(b + begin.size(), e - b - begin.size()), AgentOptionsMarkdown());
}

// Every option `infertel agent` registers, in the table or not (the export flags), is named
// in docs/configuration.md.
TEST(AgentOptionsTest, EveryAgentOptionIsDocumented) {
  const std::string doc = ReadDoc();
  CLI::App app;
  CLI::App* sub = app.add_subcommand("agent");
  AgentFlags flags;
  AddAgentFlags(sub, &flags);
  std::size_t seen = 0;
  for (const CLI::Option* opt : sub->get_options()) {
    for (const std::string& name : opt->get_lnames()) {
      if (name == "help") continue;
      ++seen;
      EXPECT_NE(doc.find("`--" + name), std::string::npos) << "--" << name;
    }
  }
  EXPECT_GT(seen, AgentOptionTable().size());
}

TEST(AgentOptionsTest, EachFlagParsesToItsField) {
  for (const AgentOption& o : AgentOptionTable()) {
    const std::string value = SampleValue(o);
    AgentFlags initial;
    ASSERT_NE(FieldText(o, initial), value) << o.flag;
    AgentFlags parsed = Parse({std::string(o.flag), value});
    EXPECT_EQ(FieldText(o, parsed), value) << o.flag;
  }
}

TEST(AgentOptionsTest, RangesAndValueListsAreChecked) {
  for (const AgentOption& o : AgentOptionTable()) {
    if (!o.allowed.empty()) {
      EXPECT_THROW(Parse({std::string(o.flag), "nonsense"}), CLI::ValidationError) << o.flag;
    } else if (o.key || o.min < o.max) {
      const std::int64_t max = o.key ? config::Spec(*o.key).max : o.max;
      EXPECT_THROW(Parse({std::string(o.flag), std::to_string(max + 1)}), CLI::ValidationError)
          << o.flag;
    }
  }
}

// Defaults as the document shows them are the values the agent starts with.
TEST(AgentOptionsTest, DocumentedDefaultsAreTheFieldsInitialValues) {
  AgentFlags initial;
  for (const AgentOption& o : AgentOptionTable()) {
    const config::OptionDoc d = DocOf(o);
    if (o.key) {
      EXPECT_EQ(d.default_text, config::Spec(*o.key).default_value) << o.flag;
    } else if (o.default_text.empty()) {
      EXPECT_EQ(d.default_text, FieldText(o, initial)) << o.flag;
    }
  }
  auto admin = std::find_if(AgentOptionTable().begin(), AgentOptionTable().end(),
                            [](const AgentOption& o) { return o.flag == "--admin"; });
  ASSERT_NE(admin, AgentOptionTable().end());
  AgentOptions opts;
  EXPECT_EQ(opts.admin.host + ":" + std::to_string(opts.admin.port), DocOf(*admin).default_text);
}

// A flag that stands for a live key and its environment variable reach the same value: the
// flag over the variable over the key's default.
TEST(AgentOptionsTest, KeyFlagWinsOverItsVariable) {
  for (const AgentOption& o : AgentOptionTable()) {
    if (!o.key) continue;
    const config::KeySpec& spec = config::Spec(*o.key);
    ASSERT_EQ(DocOf(o).env_var, spec.env_var);
    std::map<std::string, std::string, std::less<>> vars{{std::string(spec.env_var), "5"}};
    config::EnvLookup env = [&](std::string_view n) -> std::optional<std::string> {
      auto it = vars.find(n);
      if (it == vars.end()) return std::nullopt;
      return it->second;
    };
    EXPECT_EQ(KeyFlagsOverEnv(env, Parse({}))(spec.env_var), "5") << o.flag;
    EXPECT_EQ(KeyFlagsOverEnv(env, Parse({std::string(o.flag), "7"}))(spec.env_var), "7") << o.flag;
    vars.clear();
    EXPECT_EQ(KeyFlagsOverEnv(env, Parse({}))(spec.env_var), std::nullopt) << o.flag;
  }
}

// --admin and the agent file's `admin` reach the same address: the flag over the file over the
// default. Before the table, the flag's default hid the file's value.
TEST(AgentOptionsTest, AdminFlagOverAgentFileOverDefault) {
  char path[] = "/tmp/infertel-agent-options-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << "admin: 127.0.0.1:9500\n";
  AgentOptions opts;
  std::string error;
  ASSERT_TRUE(LoadAgentFile(path, &opts, &error)) << error;
  std::remove(path);
  AgentFlags flags = Parse({});
  ASSERT_TRUE(ApplyAdminFlag(flags.admin, &opts.admin));
  EXPECT_EQ(opts.admin.port, 9500);
  flags = Parse({"--admin", "127.0.0.1:9600"});
  ASSERT_TRUE(ApplyAdminFlag(flags.admin, &opts.admin));
  EXPECT_EQ(opts.admin.port, 9600);
  AgentOptions defaults;
  ASSERT_TRUE(ApplyAdminFlag(Parse({}).admin, &defaults.admin));
  EXPECT_EQ(defaults.admin.port, 9464);
  EXPECT_FALSE(ApplyAdminFlag("no-port", &defaults.admin));
}

// A group of options registered from outside the table (the hook engines will use) follows
// the agent's rows in the document. Last in this file: the group stays registered.
TEST(AgentOptionsTest, RegisteredGroupsFollowTheTable) {
  const std::size_t before = AgentOptionDocs().size();
  EXPECT_EQ(before, AgentOptionTable().size());
  config::RegisterOptionGroup("test", [] {
    return std::vector<config::OptionDoc>{{.flag = "--test-only", .help = "test"}};
  });
  auto docs = AgentOptionDocs();
  ASSERT_EQ(docs.size(), before + 1);
  EXPECT_EQ(docs.back().flag, "--test-only");
}

}  // namespace
}  // namespace infertel
