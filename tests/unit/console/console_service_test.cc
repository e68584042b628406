#include "console/console_service.h"

#include "common/env_lookup.h"
#include "engines/registry.h"
#include "engines/sglang/sglang_keys.h"
#include "engines/vllm/vllm_keys.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace infertel::console {
namespace {

using config::Key;
using config::Value;

using testing::EnvOf;

std::string WriteTemp(std::string_view name, std::string_view text) {
  auto path = std::filesystem::temp_directory_path() /
              ("infertel-console-svc-" + std::to_string(::getpid()) + "-" + std::string(name));
  std::ofstream(path, std::ios::trunc) << text;
  return path.string();
}

std::vector<KnobUpstream> Upstreams() {
  return {{"v", *engines::FindEngine("vllm"), *http::ParseUrl("http://127.0.0.1:1")},
          {"s", *engines::FindEngine("sglang"), *http::ParseUrl("http://127.0.0.1:2")}};
}

TEST(ConsoleServiceTest, BadEnvOrConsoleFileStopsTheStart) {
  std::string error;
  EXPECT_EQ(ConsoleService::Create({}, EnvOf({{"OTEL_INSTRUMENTATION_VLLM_TRACING_LEVEL", "x"}}),
                                   {}, &error),
            nullptr);
  EXPECT_NE(error.find("OTEL_INSTRUMENTATION_VLLM_TRACING_LEVEL"), std::string::npos) << error;

  ConsoleOptions o;
  o.file = WriteTemp("bad.yaml", "otel.instrumentation.vllm.tracing.level: 3\n");
  EXPECT_EQ(ConsoleService::Create(o, EnvOf({}), {}, &error), nullptr);
  EXPECT_NE(error.find("--console-file"), std::string::npos) << error;
  EXPECT_NE(error.find("otel.instrumentation.vllm.tracing.level"), std::string::npos) << error;
  std::filesystem::remove(o.file);

  o.file = "/nonexistent/console.yaml";
  EXPECT_EQ(ConsoleService::Create(o, EnvOf({}), {}, &error), nullptr);
  EXPECT_NE(error.find("cannot read"), std::string::npos) << error;

  ConsoleOptions u;
  u.url = "https://127.0.0.1:1/console";
  EXPECT_EQ(ConsoleService::Create(u, EnvOf({}), {}, &error), nullptr);
  EXPECT_NE(error.find("--console-url"), std::string::npos) << error;
}

TEST(ConsoleServiceTest, StartsFromTheFileAndAnUnreachableUrlIsOnlyReported) {
  ConsoleOptions o;
  o.file = WriteTemp("ok.yaml", "otel.instrumentation.genai.message-content.max-length: 12\n");
  o.url = "http://127.0.0.1:1/console";
  std::string error;
  auto svc = ConsoleService::Create(o, EnvOf({}), Upstreams(), &error);
  ASSERT_NE(svc, nullptr) << error;
  EXPECT_EQ(svc->InitialSettings().GetInt(Key::kMessageContentMaxLength), 12);
  EXPECT_FALSE(svc->config().Status(Layer::kUrl).ok);
  // Both engines' plugins are on: one knob state per upstream of the key's engine.
  EXPECT_EQ(svc->knobs().StateOf(engines::sglang::keys().tracing_level).size(), 1u);
  EXPECT_EQ(svc->knobs().StateOf(engines::vllm::keys().logging_level).size(), 1u);

  auto store = std::make_shared<config::ConfigStore>(svc->InitialSettings());
  svc->Start(store);
  svc->config().SetApiValue(Key::kMessageContentMaxLength, Value{std::int64_t{34}});
  EXPECT_EQ(store->Current()->GetInt(Key::kMessageContentMaxLength), 34);

  auto handler = svc->AdminHandler();
  http::StringRequest req{boost::beast::http::verb::get,
                          "/api/config/otel.instrumentation.genai.message-content.max-length", 11};
  auto res = handler(req);
  EXPECT_EQ(res.result_int(), 200u);
  EXPECT_NE(res.body().find("\"value\":34"), std::string::npos) << res.body();
  svc->Stop();
  std::filesystem::remove(o.file);
}

TEST(ConsoleServiceTest, NoKnobsForAnEngineWhosePluginIsOff) {
  std::string error;
  auto svc = ConsoleService::Create({}, EnvOf({{"SGLANG_INSTRUMENTATION_ENABLED", "false"}}),
                                    Upstreams(), &error);
  ASSERT_NE(svc, nullptr) << error;
  EXPECT_TRUE(svc->knobs().StateOf(engines::sglang::keys().tracing_level).empty());
  EXPECT_EQ(svc->knobs().StateOf(engines::vllm::keys().logging_level).size(), 1u);
}

}  // namespace
}  // namespace infertel::console
