#include <gtest/gtest.h>

#include <set>

#include "config/keys.h"
#include "config/settings.h"
#include "engines/sglang/sglang_keys.h"
#include "engines/vllm/vllm_keys.h"

namespace infertel::config {
namespace {

TEST(KeysTest, EveryDefaultParses) {
  for (const KeySpec& spec : AllKeys()) {
    if (spec.default_value.empty()) continue;
    auto parsed = ParseValue(spec, spec.default_value);
    EXPECT_TRUE(std::holds_alternative<Value>(parsed)) << spec.console_key;
  }
}

TEST(KeysTest, ConsoleKeysAndEnvVarsAreUnique) {
  std::set<std::string_view> keys, envs;
  for (const KeySpec& spec : AllKeys()) {
    EXPECT_TRUE(keys.insert(spec.console_key).second) << spec.console_key;
    if (!spec.env_var.empty()) {
      EXPECT_TRUE(envs.insert(spec.env_var).second) << spec.env_var;
    }
  }
}

TEST(KeysTest, SpecNamesAndDefaults) {
  // Spec C2/C3/C4 defaults, character for character.
  EXPECT_EQ(Spec(Key::kCaptureMessageContent).console_key,
            "otel.instrumentation.genai.capture-message-content");
  EXPECT_EQ(Spec(Key::kMessageContentMaxLength).default_value, "8192");
  EXPECT_EQ(Spec(engines::vllm::keys().tracing_level).env_var,
            "OTEL_INSTRUMENTATION_VLLM_TRACING_LEVEL");
  EXPECT_EQ(Spec(engines::vllm::keys().tracing_level).default_value, "1");
  EXPECT_EQ(Spec(engines::sglang::keys().tracing_level).default_value, "3");
  EXPECT_EQ(Spec(engines::sglang::keys().enabled).env_var, "SGLANG_INSTRUMENTATION_ENABLED");
  EXPECT_EQ(Spec(engines::vllm::keys().enabled).apply, Apply::kRestart);
  EXPECT_EQ(FindByConsoleKey("apsara.apm.inference.sglang.log_requests.level"),
            engines::sglang::keys().log_requests_level);
  EXPECT_FALSE(FindByConsoleKey("otel.instrumentation.nope").has_value());
}

// The engines' keys (engines/NAME/NAME_keys.cc) follow the agent's in the table, which the
// test main closed (engines::RegisterEngines); the listing keeps the documented order.
TEST(KeysTest, EnginesAddTheirKeysAfterTheAgents) {
  ASSERT_TRUE(KeysClosed());
  EXPECT_EQ(KeyCount(),
            kAgentKeyCount + engines::vllm::KeySpecs().size() + engines::sglang::KeySpecs().size());
  EXPECT_EQ(IndexOf(engines::vllm::keys().enabled), kAgentKeyCount);
  EXPECT_EQ(Spec(engines::vllm::keys().logging_level).console_key,
            "apsara.apm.inference.vllm.logging.level");
  EXPECT_EQ(Spec(engines::sglang::keys().log_trace_context).console_key,
            "apsara.apm.inference.vllm.log_trace_context.enabled");
  KeyGroup last = KeyGroup::kPlugin;
  for (const KeySpec& spec : AllKeys()) {
    EXPECT_EQ(Spec(spec.key).console_key, spec.console_key);
    EXPECT_LT(IndexOf(spec.key), kMaxKeys);
    EXPECT_LE(last, spec.group) << spec.console_key;
    last = spec.group;
  }
}

TEST(KeysDeathTest, NoKeyIsAddedOnceTheTableIsClosed) {
  EXPECT_DEATH(AddKeys(engines::vllm::KeySpecs()), "keys added once the table is closed");
}

TEST(SettingsTest, EnvOverridesDefaultAndConsoleOverridesEnv) {
  std::map<std::string, std::string> env = {
      {"OTEL_INSTRUMENTATION_VLLM_TRACING_LEVEL", "2"},
      {"OTEL_INSTRUMENTATION_GENAI_MESSAGE_CONTENT_MAX_LENGTH", "100"}};
  auto lookup = [&](std::string_view n) -> std::optional<std::string> {
    auto it = env.find(std::string(n));
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  auto r = Resolve(lookup, {{Key::kMessageContentMaxLength, "50"}});
  ASSERT_TRUE(r.errors.empty());
  EXPECT_EQ(r.settings.GetInt(engines::vllm::keys().tracing_level), 2);
  EXPECT_EQ(r.settings.At(engines::vllm::keys().tracing_level).source, Source::kEnv);
  EXPECT_EQ(r.settings.GetInt(Key::kMessageContentMaxLength), 50);
  EXPECT_EQ(r.settings.At(Key::kMessageContentMaxLength).source, Source::kConsole);
  EXPECT_TRUE(r.settings.GetBool(Key::kCaptureMessageContent));
  EXPECT_EQ(r.settings.At(Key::kCaptureMessageContent).source, Source::kDefault);
  EXPECT_FALSE(r.settings.IsSet(engines::vllm::keys().log_requests));
}

TEST(SettingsTest, BadEnvValueIsReportedAndDefaultKept) {
  auto lookup = [](std::string_view n) -> std::optional<std::string> {
    if (n == "OTEL_INSTRUMENTATION_VLLM_TRACING_LEVEL") return "7";
    return std::nullopt;
  };
  auto r = Resolve(lookup);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("otel.instrumentation.vllm.tracing.level"), std::string::npos);
  EXPECT_NE(r.errors[0].find("from 0 to 2"), std::string::npos);
  EXPECT_EQ(r.settings.GetInt(engines::vllm::keys().tracing_level), 1);
}

TEST(SettingsTest, CaptureStrategyAliases) {
  const auto& spec = Spec(Key::kMessageContentCaptureStrategy);
  EXPECT_EQ(std::get<std::string>(std::get<Value>(ParseValue(spec, "EVENT_ONLY"))), "event");
  EXPECT_EQ(std::get<std::string>(std::get<Value>(ParseValue(spec, "SPAN_ONLY"))), "span");
  EXPECT_EQ(std::get<std::string>(std::get<Value>(ParseValue(spec, "SPAN_AND_EVENT"))),
            "span_and_event");
  EXPECT_TRUE(std::holds_alternative<std::string>(ParseValue(spec, "logs")));
}

TEST(ConfigStoreTest, PublishNotifiesListeners) {
  ConfigStore store(Resolve(nullptr).settings);
  int calls = 0;
  store.Subscribe([&](const Settings& o, const Settings& n) {
    ++calls;
    EXPECT_EQ(o.GetInt(engines::vllm::keys().tracing_level), 1);
    EXPECT_EQ(n.GetInt(engines::vllm::keys().tracing_level), 0);
  });
  Settings next = *store.Current();
  next.Mutable(engines::vllm::keys().tracing_level) = {Value{std::int64_t{0}}, Source::kConsole};
  store.Publish(next);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(store.Current()->GetInt(engines::vllm::keys().tracing_level), 0);
}

}  // namespace
}  // namespace infertel::config
