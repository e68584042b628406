#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/metric_families.h"
#include "engines/sglang/sglang_families.h"
#include "engines/vllm/vllm_families.h"

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

// The engines' families (engines/NAME/NAME_families.cc) follow the agent's ids; the listing
// puts the agent's families where the first engine places them, as the spec's tables do.
TEST(MetricFamilies, EnginesAddTheirFamiliesAfterTheAgents) {
  using engines::sglang::SglangMetric;
  using engines::vllm::VllmMetric;
  EXPECT_EQ(IndexOf(Id(VllmMetric::kIterCount)), kAgentMetricCount);
  EXPECT_EQ(Family(Id(VllmMetric::kFirstTokenSeconds)).name, "genai_llm_first_token_seconds");
  EXPECT_EQ(Family(Id(SglangMetric::kInterTokenLatency)).name,
            "sglang_inter_token_latency_seconds");
  EXPECT_EQ(Family(Id(VllmMetric::kGpuCacheUsageSys)).generation, "v0");
  EXPECT_EQ(Family(MetricId::kRequestDuration).engine, "");
  const auto all = AllMetricFamilies();
  ASSERT_EQ(all.size(), MetricFamilyCount());
  EXPECT_EQ(all[0].id, MetricId::kUsageTokens);
  EXPECT_EQ(ListingRank(MetricId::kTimePerOutputToken),
            ListingRank(Id(VllmMetric::kFirstTokenSeconds)) + 1);
  for (std::size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(ListingRank(all[i].id), i) << all[i].name;
    EXPECT_EQ(FindMetric(all[i].name), all[i].id) << all[i].name;
  }
}

TEST(MetricFamiliesDeathTest, NoFamilyIsAddedOnceTheTableIsClosed) {
  EXPECT_DEATH(AddMetricFamilies(engines::vllm::MetricFamilyRows()),
               "families added once the table is closed");
}

}  // namespace
}  // namespace infertel::metrics
