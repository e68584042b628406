#include "console/layered_config.h"
#include "common/env_lookup.h"
#include "engines/sglang/sglang_keys.h"
#include "engines/vllm/vllm_keys.h"

#include <gtest/gtest.h>

#include <map>

namespace infertel::console {
namespace {

using config::Key;
using config::Source;
using config::Value;

using testing::EnvOf;

Value I(std::int64_t i) { return Value{i}; }

TEST(LayeredConfigTest, PrecedenceApiOverUrlOverFileOverEnvOverDefault) {
  std::vector<std::string> errors;
  LayeredConfig lc(EnvOf({{"OTEL_INSTRUMENTATION_VLLM_TRACING_LEVEL", "2"}}), &errors);
  ASSERT_TRUE(errors.empty());
  auto k = lc.KeyOf(engines::vllm::keys().tracing_level);
  EXPECT_EQ(k.value, I(2));
  EXPECT_EQ(k.source, Source::kEnv);
  EXPECT_FALSE(k.layer.has_value());

  lc.SetLayer(Layer::kFile, {{engines::vllm::keys().tracing_level, I(0)}});
  k = lc.KeyOf(engines::vllm::keys().tracing_level);
  EXPECT_EQ(k.value, I(0));
  EXPECT_EQ(k.source, Source::kConsole);
  EXPECT_EQ(k.layer, Layer::kFile);

  lc.SetLayer(Layer::kUrl, {{engines::vllm::keys().tracing_level, I(1)}});
  EXPECT_EQ(lc.KeyOf(engines::vllm::keys().tracing_level).layer, Layer::kUrl);
  EXPECT_EQ(lc.KeyOf(engines::vllm::keys().tracing_level).value, I(1));

  lc.SetApiValue(engines::vllm::keys().tracing_level, I(2));
  EXPECT_EQ(lc.KeyOf(engines::vllm::keys().tracing_level).layer, Layer::kApi);

  // The file changing the key does not beat the API value; removing the API value uncovers
  // the URL's, removing the URL's the file's, and then the environment's.
  lc.SetLayer(Layer::kFile, {{engines::vllm::keys().tracing_level, I(1)}});
  EXPECT_EQ(lc.KeyOf(engines::vllm::keys().tracing_level).layer, Layer::kApi);
  EXPECT_TRUE(lc.RemoveApiValue(engines::vllm::keys().tracing_level));
  EXPECT_FALSE(lc.RemoveApiValue(engines::vllm::keys().tracing_level));
  EXPECT_EQ(lc.KeyOf(engines::vllm::keys().tracing_level).layer, Layer::kUrl);
  lc.SetLayer(Layer::kUrl, {});
  EXPECT_EQ(lc.KeyOf(engines::vllm::keys().tracing_level).layer, Layer::kFile);
  EXPECT_EQ(lc.KeyOf(engines::vllm::keys().tracing_level).value, I(1));
  lc.SetLayer(Layer::kFile, {});
  EXPECT_EQ(lc.KeyOf(engines::vllm::keys().tracing_level).source, Source::kEnv);

  // Untouched keys keep their defaults.
  auto d = lc.KeyOf(Key::kMessageContentMaxLength);
  EXPECT_EQ(d.value, I(8192));
  EXPECT_EQ(d.source, Source::kDefault);
}

TEST(LayeredConfigTest, BadEnvValuesAreReportedAndFallBack) {
  std::vector<std::string> errors;
  LayeredConfig lc(EnvOf({{"OTEL_INSTRUMENTATION_VLLM_TRACING_LEVEL", "9"}}), &errors);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("OTEL_INSTRUMENTATION_VLLM_TRACING_LEVEL"), std::string::npos);
  EXPECT_EQ(lc.KeyOf(engines::vllm::keys().tracing_level).source, Source::kDefault);
}

TEST(LayeredConfigTest, PublishesChangesOnlyAndFreezesRestartKeys) {
  LayeredConfig lc(EnvOf({}), nullptr);
  lc.SetLayer(Layer::kFile, {{engines::sglang::keys().enabled, Value{false}}});
  auto store = std::make_shared<config::ConfigStore>(lc.Desired());
  int published = 0;
  store->Subscribe([&](const config::Settings&, const config::Settings&) { ++published; });
  lc.Attach(store);
  EXPECT_EQ(published, 0);  // nothing changed since the store was built

  lc.SetLayer(Layer::kFile, {{engines::sglang::keys().enabled, Value{false}}});  // same values
  EXPECT_EQ(published, 0);
  EXPECT_EQ(lc.Status(Layer::kFile).keys, 1u);

  // A restart key changed at run time: the agent keeps running with the old value.
  lc.SetApiValue(engines::sglang::keys().enabled, Value{true});
  EXPECT_EQ(published, 0);
  EXPECT_FALSE(store->Current()->GetBool(engines::sglang::keys().enabled));
  auto k = lc.KeyOf(engines::sglang::keys().enabled);
  EXPECT_EQ(k.value, Value{false});
  EXPECT_EQ(k.layer, Layer::kFile);
  EXPECT_TRUE(k.pending_restart);
  EXPECT_EQ(k.pending_value, Value{true});
  EXPECT_EQ(k.pending_layer, Layer::kApi);

  lc.RemoveApiValue(engines::sglang::keys().enabled);
  EXPECT_FALSE(lc.KeyOf(engines::sglang::keys().enabled).pending_restart);

  // A live key is published at once.
  lc.SetApiValue(Key::kMessageContentMaxLength, I(10));
  EXPECT_EQ(published, 1);
  EXPECT_EQ(store->Current()->GetInt(Key::kMessageContentMaxLength), 10);
  EXPECT_EQ(store->Current()->At(Key::kMessageContentMaxLength).source, Source::kConsole);
}

TEST(LayeredConfigTest, ErrorsKeepTheLastGoodValues) {
  LayeredConfig lc(EnvOf({}), nullptr);
  lc.Configure(Layer::kFile, "/etc/console.yaml");
  lc.SetLayer(Layer::kFile, {{engines::vllm::keys().tracing_level, I(0)}});
  lc.SetLayerError(Layer::kFile, "invalid YAML");
  auto st = lc.Status(Layer::kFile);
  EXPECT_TRUE(st.configured);
  EXPECT_FALSE(st.ok);
  EXPECT_EQ(st.error, "invalid YAML");
  EXPECT_EQ(st.keys, 1u);
  EXPECT_EQ(lc.KeyOf(engines::vllm::keys().tracing_level).value, I(0));
  lc.MarkLayerOk(Layer::kFile);
  EXPECT_TRUE(lc.Status(Layer::kFile).ok);
  EXPECT_TRUE(lc.Status(Layer::kFile).error.empty());
}

}  // namespace
}  // namespace infertel::console
