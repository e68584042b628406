// Launch mode: recognising engine commands and rewriting them.

#include <gtest/gtest.h>

#include <algorithm>

#include "common/engine_ids.h"
#include "config/settings.h"
#include "engines/sglang/sglang_keys.h"
#include "engines/vllm/vllm_keys.h"
#include "launch/engine_command.h"

namespace infertel::launch {
namespace {

using Args = std::vector<std::string>;
using Env = std::vector<std::pair<std::string, std::string>>;

RewriteOptions Opts() {
  RewriteOptions o;
  o.engine_port = 41234;
  o.otlp_grpc_endpoint = "127.0.0.1:4317";
  o.otlp_http_endpoint = "http://127.0.0.1:4318";
  o.service_name = "my-app";
  o.resource_attributes = "deployment.environment=prod";
  o.tracing_level = 2;
  return o;
}

Rewritten Must(const Args& argv, const Env& env = {}, RewriteOptions o = Opts()) {
  std::string why;
  auto cmd = Recognise(argv, &why);
  EXPECT_TRUE(cmd) << why;
  auto r = Rewrite(argv, *cmd, o, env, &why);
  EXPECT_TRUE(r) << why;
  return r ? *r : Rewritten{};
}

int Count(const Args& a, std::string_view s) {
  int n = 0;
  for (const auto& x : a) n += x == s || x.starts_with(std::string(s) + "=");
  return n;
}

TEST(Recognise, EveryDocumentedForm) {
  std::string why;
  auto v = Recognise({"vllm", "serve", "m"}, &why);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->engine, VllmEngineId());
  EXPECT_EQ(v->args_begin, 2u);
  v = Recognise({"/usr/bin/python3.11", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"},
                &why);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->engine, VllmEngineId());
  EXPECT_EQ(v->args_begin, 3u);
  v = Recognise({"python", "-m", "sglang.launch_server", "--model-path", "m"}, &why);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->engine, SglangEngineId());
  v = Recognise({"/opt/venv/bin/sglang", "serve", "--model-path", "m"}, &why);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->engine, SglangEngineId());
  v = Recognise({"/x/build/infertel", "sim", "--engine", "sglang"}, &why);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->engine, SglangEngineId());
  v = Recognise({"/x/build/infertel", "sim"}, &why);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->engine, VllmEngineId());
  EXPECT_FALSE(Recognise({"python", "-m", "http.server"}, &why));
  EXPECT_NE(why.find("not an engine command"), std::string::npos);
  EXPECT_FALSE(Recognise({}, &why));
  EXPECT_FALSE(Recognise({"vllm", "bench"}, &why));
}

TEST(Rewrite, VllmMovesTheEngineAndAddsTheEndpoint) {
  auto r =
      Must({"vllm", "serve", "m", "--host", "10.0.0.5", "--port=8080", "--max-model-len", "4096"});
  EXPECT_EQ(r.user_host, "10.0.0.5");
  EXPECT_EQ(r.user_port, 8080);
  EXPECT_EQ(Count(r.argv, "--host"), 1);
  EXPECT_EQ(Count(r.argv, "--port"), 1);
  EXPECT_EQ(Args(r.argv.begin(), r.argv.begin() + 3), (Args{"vllm", "serve", "m"}));
  auto host = std::find(r.argv.begin(), r.argv.end(), "--host");
  EXPECT_EQ(*(host + 1), "127.0.0.1");
  auto port = std::find(r.argv.begin(), r.argv.end(), "--port");
  EXPECT_EQ(*(port + 1), "41234");
  auto ep = std::find(r.argv.begin(), r.argv.end(), "--otlp-traces-endpoint");
  ASSERT_NE(ep, r.argv.end());
  EXPECT_EQ(*(ep + 1), "http://127.0.0.1:4317");
  EXPECT_EQ(Count(r.argv, "--max-model-len"), 1);  // the user's flags are kept
  EXPECT_EQ(Count(r.argv, "--enable-trace"), 0);   // SGLang's flags are not vLLM's
  EXPECT_EQ(r.env, (Env{{"OTEL_SERVICE_NAME", "my-app"},
                        {"OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=prod"},
                        {"OTEL_BSP_SCHEDULE_DELAY", "500"}}));
  EXPECT_EQ(r.added.size(), 5u);
}

// Cached prompt tokens reach the usage (infertel.cache.hit_ratio) only with the engine's flag:
// launch adds it, once, unless the user gave it.
TEST(Rewrite, VllmPromptTokenDetailsOnlyWhereTheUserSetNone) {
  auto fresh = Must({"vllm", "serve", "m"});
  EXPECT_EQ(Count(fresh.argv, "--enable-prompt-tokens-details"), 1);
  EXPECT_NE(std::find(fresh.added.begin(), fresh.added.end(), "--enable-prompt-tokens-details"),
            fresh.added.end());
  auto theirs = Must({"vllm", "serve", "m", "--enable-prompt-tokens-details"});
  EXPECT_EQ(Count(theirs.argv, "--enable-prompt-tokens-details"), 1);
  EXPECT_EQ(std::find(theirs.added.begin(), theirs.added.end(), "--enable-prompt-tokens-details"),
            theirs.added.end());
  auto sglang = Must({"sglang", "serve", "--model-path", "m"});
  EXPECT_EQ(Count(sglang.argv, "--enable-prompt-tokens-details"), 0);
  EXPECT_EQ(Count(sglang.argv, "--enable-cache-report"), 1);
}

// The console's log switches that the user set become the engine's own flags; unset ones (the
// engine's own choice) add nothing, and a flag the user gave wins.
TEST(Rewrite, LogSwitchesTheUserSetBecomeTheEnginesFlags) {
  const auto& sk = engines::sglang::keys();
  const auto& vk = engines::vllm::keys();
  auto none = [](std::string_view) -> std::optional<std::string> { return std::nullopt; };
  auto set = std::make_shared<const config::Settings>(
      config::Resolve(none, {{sk.log_requests, "true"},
                             {sk.log_requests_level, "3"},
                             {sk.logging_level, "DEBUG"},
                             {vk.logging_level, "WARNING"}})
          .settings);
  RewriteOptions o = Opts();
  o.settings = set;
  auto sglang = Must({"sglang", "serve", "--model-path", "m"}, {}, o);
  EXPECT_EQ(Count(sglang.argv, "--log-requests"), 1);
  auto level = std::find(sglang.argv.begin(), sglang.argv.end(), "--log-requests-level");
  ASSERT_NE(level, sglang.argv.end());
  EXPECT_EQ(*(level + 1), "3");
  auto log_level = std::find(sglang.argv.begin(), sglang.argv.end(), "--log-level");
  ASSERT_NE(log_level, sglang.argv.end());
  EXPECT_EQ(*(log_level + 1), "debug");
  EXPECT_NE(std::find(sglang.added.begin(), sglang.added.end(), "--log-requests-level 3"),
            sglang.added.end());
  // The user's own flag wins.
  auto theirs = Must({"sglang", "serve", "--model-path", "m", "--log-level", "error"}, {}, o);
  EXPECT_EQ(Count(theirs.argv, "--log-level"), 1);
  // vLLM: the log level through its environment variable, unless the user set it.
  auto vllm = Must({"vllm", "serve", "m"}, {}, o);
  EXPECT_NE(std::find(vllm.env.begin(), vllm.env.end(),
                      std::pair<std::string, std::string>{"VLLM_LOGGING_LEVEL", "WARNING"}),
            vllm.env.end());
  auto user_env = Must({"vllm", "serve", "m"}, {{"VLLM_LOGGING_LEVEL", "INFO"}}, o);
  EXPECT_EQ(std::count_if(user_env.env.begin(), user_env.env.end(),
                          [](const auto& kv) { return kv.first == "VLLM_LOGGING_LEVEL"; }),
            0);
  // Nothing set: nothing added.
  auto plain = Must({"sglang", "serve", "--model-path", "m"});
  EXPECT_EQ(Count(plain.argv, "--log-requests"), 0);
  EXPECT_EQ(Count(plain.argv, "--log-level"), 0);
}

// vLLM exports its spans every 500 ms instead of the SDK's 5 s, so that they are visible within
// a second of their request; a delay the user set is theirs, and SGLang gets nothing (it passes
// its own delay to its span processor).
TEST(Rewrite, VllmExportDelayOnlyWhereTheUserSetNone) {
  auto fresh = Must({"vllm", "serve", "m"});
  EXPECT_NE(std::find(fresh.added.begin(), fresh.added.end(), "OTEL_BSP_SCHEDULE_DELAY=500"),
            fresh.added.end());
  auto theirs = Must({"vllm", "serve", "m"}, {{"OTEL_BSP_SCHEDULE_DELAY", "5000"}});
  for (const auto& [k, v] : theirs.env) EXPECT_NE(k, "OTEL_BSP_SCHEDULE_DELAY");
  auto o = Opts();
  o.export_delay_ms = "";
  auto none = Must({"vllm", "serve", "m"}, {}, o);
  for (const auto& [k, v] : none.env) EXPECT_NE(k, "OTEL_BSP_SCHEDULE_DELAY");
  auto sglang = Must({"sglang", "serve", "--model-path", "m"});
  for (const auto& [k, v] : sglang.env) EXPECT_NE(k, "OTEL_BSP_SCHEDULE_DELAY");
}

TEST(Rewrite, DefaultsOfEachEngine) {
  auto v = Must({"vllm", "serve", "m"});
  EXPECT_EQ(v.user_host, "0.0.0.0");
  EXPECT_EQ(v.user_port, 8000);
  auto s = Must({"python3", "-m", "sglang.launch_server", "--model-path", "m"});
  EXPECT_EQ(s.user_host, "127.0.0.1");
  EXPECT_EQ(s.user_port, 30000);
}

TEST(Rewrite, SglangFlagsOnlyWhereTheUserSetNone) {
  auto r = Must({"python", "-m", "sglang.launch_server", "--model-path", "m", "--port", "30001",
                 "--enable-metrics", "--otlp-traces-endpoint=collector:4317"},
                {{"OTEL_SERVICE_NAME", "theirs"}});
  EXPECT_EQ(r.user_port, 30001);
  EXPECT_EQ(Count(r.argv, "--enable-trace"), 1);
  EXPECT_EQ(Count(r.argv, "--enable-metrics"), 1);  // not duplicated
  EXPECT_EQ(Count(r.argv, "--enable-cache-report"), 1);
  EXPECT_EQ(Count(r.argv, "--otlp-traces-endpoint"), 1);  // the user's endpoint stays
  EXPECT_NE(std::find(r.argv.begin(), r.argv.end(), "--otlp-traces-endpoint=collector:4317"),
            r.argv.end());
  EXPECT_EQ(r.env, (Env{{"OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=prod"},
                        {"SGLANG_TRACE_LEVEL", "2"}}));  // OTEL_SERVICE_NAME is the user's

  auto fresh = Must({"sglang", "serve", "--model-path", "m"});
  auto ep = std::find(fresh.argv.begin(), fresh.argv.end(), "--otlp-traces-endpoint");
  ASSERT_NE(ep, fresh.argv.end());
  EXPECT_EQ(*(ep + 1), "127.0.0.1:4317");  // SGLang's gRPC format: HOST:PORT
}

TEST(Rewrite, HttpProtocolUsesTheHttpReceiver) {
  auto r = Must({"vllm", "serve", "m"}, {{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf"}});
  auto ep = std::find(r.argv.begin(), r.argv.end(), "--otlp-traces-endpoint");
  ASSERT_NE(ep, r.argv.end());
  EXPECT_EQ(*(ep + 1), "http://127.0.0.1:4318/v1/traces");
}

TEST(Rewrite, PluginOffLeavesTheEngineUntouchedButMoved) {
  auto o = Opts();
  o.instrument = false;
  auto r = Must({"python", "-m", "sglang.launch_server", "--model-path", "m"}, {}, o);
  EXPECT_EQ(Count(r.argv, "--enable-trace"), 0);
  EXPECT_EQ(Count(r.argv, "--otlp-traces-endpoint"), 0);
  EXPECT_TRUE(r.env.empty());
  EXPECT_TRUE(r.added.empty());
  EXPECT_EQ(Count(r.argv, "--port"), 1);
}

TEST(Rewrite, SimulatorListenFlagAndBadPorts) {
  auto r = Must({"infertel", "sim", "--engine", "vllm", "--listen", "127.0.0.1:9100"});
  EXPECT_EQ(r.user_port, 9100);
  EXPECT_EQ(Count(r.argv, "--listen"), 0);
  std::string why;
  Args bad{"vllm", "serve", "m", "--port", "eighty"};
  auto cmd = Recognise(bad, &why);
  EXPECT_FALSE(Rewrite(bad, *cmd, Opts(), {}, &why));
  EXPECT_NE(why.find("--port"), std::string::npos);
}

}  // namespace
}  // namespace infertel::launch
