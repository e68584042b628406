#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/metric_families.h"

namespace infertel::metrics {
namespace {

// docs/telemetry-reference.md carries the generated metric table; regenerate it with
// `build/infertel metrics --markdown` when a family changes.
TEST(MetricsDoc, TelemetryReferenceMatchesTheTable) {
  std::ifstream in(std::string(INFERTEL_SOURCE_DIR) + "/docs/telemetry-reference.md");
  ASSERT_TRUE(in) << "docs/telemetry-reference.md missing";
  std::stringstream ss;
  ss << in.rdbuf();
  std::string doc = ss.str();
  const std::string begin = "<!-- metrics:begin -->\n", end = "<!-- metrics:end -->";
  auto b = doc.find(begin);
  auto e = doc.find(end);
  ASSERT_NE(b, std::string::npos);
  ASSERT_NE(e, std::string::npos);
  EXPECT_EQ(doc.substr(b + begin.size(), e - b - begin.size()), MetricsMarkdownTable());
}

}  // namespace
}  // namespace infertel::metrics
