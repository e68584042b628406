#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "config/doc.h"

namespace infertel::config {
namespace {

// docs/configuration.md carries the generated key table; regenerate it with
// `build/infertel config --markdown` when a key changes.
TEST(DocTest, ConfigurationDocMatchesTheRegistry) {
  std::ifstream in(std::string(INFERTEL_SOURCE_DIR) + "/docs/configuration.md");
  ASSERT_TRUE(in) << "docs/configuration.md missing";
  std::stringstream ss;
  ss << in.rdbuf();
  std::string doc = ss.str();
  const std::string begin = "<!-- keys:begin -->\n", end = "<!-- keys:end -->";
  auto b = doc.find(begin);
  auto e = doc.find(end);
  ASSERT_NE(b, std::string::npos);
  ASSERT_NE(e, std::string::npos);
  EXPECT_EQ(doc.substr(b + begin.size(), e - b - begin.size()), KeysMarkdownTable());
}

TEST(DocTest, DescribeShowsSources) {
  auto r = Resolve([](std::string_view n) -> std::optional<std::string> {
    if (n == "OTEL_INSTRUMENTATION_VLLM_TRACING_LEVEL") return "0";
    return std::nullopt;
  });
  std::string text = DescribeSettings(r.settings);
  EXPECT_NE(text.find("otel.instrumentation.vllm.tracing.level"), std::string::npos);
  auto line_start = text.find("otel.instrumentation.vllm.tracing.level");
  auto line = text.substr(line_start, text.find('\n', line_start) - line_start);
  EXPECT_NE(line.find(" 0 "), std::string::npos) << line;
  EXPECT_NE(line.find("env"), std::string::npos) << line;
}

}  // namespace
}  // namespace infertel::config
