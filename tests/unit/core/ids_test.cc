#include <gtest/gtest.h>

#include <set>

#include "core/ids.h"
#include "core/resource.h"
#include "core/semconv.h"
#include "core/stats.h"

namespace infertel {
namespace {

TEST(TraceParentTest, ParsesAndFormatsRoundTrip) {
  auto tp = TraceParent::Parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  ASSERT_TRUE(tp.has_value());
  EXPECT_EQ(ToHex(tp->trace_id), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(ToHex(tp->span_id), "00f067aa0ba902b7");
  EXPECT_EQ(tp->flags, 1);
  EXPECT_EQ(tp->Format(), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
}

TEST(TraceParentTest, RejectsMalformedAndZeroIds) {
  for (const char* bad : {
           "", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",       // no flags
           "00-00000000000000000000000000000000-00f067aa0ba902b7-01",        // zero trace id
           "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",        // zero span id
           "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",        // version ff
           "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",        // bad hex
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",  // v00 with extra
       }) {
    EXPECT_FALSE(TraceParent::Parse(bad).has_value()) << bad;
  }
  // A future version may append fields.
  EXPECT_TRUE(
      TraceParent::Parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-ab").has_value());
}

TEST(IdsTest, NewIdsAreNonZeroAndDistinct) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    auto t = NewTraceId();
    auto s = NewSpanId();
    EXPECT_FALSE(IsZero(t));
    EXPECT_FALSE(IsZero(s));
    EXPECT_TRUE(seen.insert(ToHex(t)).second);
  }
  EXPECT_FALSE(TraceIdFromHex("abc").has_value());
  EXPECT_EQ(ToHex(*SpanIdFromHex("0123456789ABCDEF")), "0123456789abcdef");
}

TEST(ResourceTest, ServiceNameAndAttributesFromEnv) {
  auto env = [](std::string_view n) -> std::optional<std::string> {
    if (n == "OTEL_SERVICE_NAME") return "chat-backend";
    if (n == "OTEL_RESOURCE_ATTRIBUTES")
      return "deployment.environment=prod, service.name=ignored,team=ml%20infra,bad";
    return std::nullopt;
  };
  Resource r = BuildResource(env, "infertel");
  ASSERT_GE(r.attributes_size(), 3);
  EXPECT_EQ(r.attributes(0).key(), semconv::kServiceName);
  EXPECT_EQ(r.attributes(0).value().string_value(), "chat-backend");
  EXPECT_EQ(FindAttr(r.attributes(), "deployment.environment")->string_value(), "prod");
  EXPECT_EQ(FindAttr(r.attributes(), "team")->string_value(), "ml infra");
  EXPECT_EQ(FindAttr(r.attributes(), "bad"), nullptr);
}

TEST(ResourceTest, DefaultServiceNameAndResourceAttributeServiceName) {
  EXPECT_EQ(BuildResource(nullptr, "infertel").attributes(0).value().string_value(), "infertel");
  auto env = [](std::string_view n) -> std::optional<std::string> {
    if (n == "OTEL_RESOURCE_ATTRIBUTES") return "service.name=from-attrs";
    return std::nullopt;
  };
  EXPECT_EQ(BuildResource(env, "infertel").attributes(0).value().string_value(), "from-attrs");
}

TEST(StatsRegistryTest, RendersCountersWithTotalSuffixAndGauges) {
  StatsRegistry reg;
  std::atomic<std::uint64_t> a{3}, b{5}, g{7};
  reg.Add("infertel_things", "Things", StatsRegistry::Type::kCounter, R"(kind="x")", &a);
  reg.Add("infertel_things", "Things", StatsRegistry::Type::kCounter, R"(kind="y")", &b);
  reg.Add("infertel_depth", "Depth", StatsRegistry::Type::kGauge, "", &g);
  std::string text = reg.Render();
  EXPECT_NE(text.find("# TYPE infertel_things_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("infertel_things_total{kind=\"x\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("infertel_things_total{kind=\"y\"} 5\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE infertel_depth gauge\ninfertel_depth 7\n"), std::string::npos);
  EXPECT_EQ(text.find("# HELP infertel_things_total"), text.rfind("# HELP infertel_things_total"));
}

// A label value from outside (an upstream's name) with a quote, a backslash and a line feed
// would otherwise end the value early or the line, and the whole exposition with it.
TEST(StatsRegistryTest, EscapesLabelValuesFromOutside) {
  EXPECT_EQ(StatsLabel("upstream", "plain"), R"(upstream="plain")");
  EXPECT_EQ(StatsLabel("upstream", "a\"b\\c\nd"), R"(upstream="a\"b\\c\nd")");
  StatsRegistry reg;
  std::atomic<std::uint64_t> a{1};
  reg.Add("infertel_things", "Things", StatsRegistry::Type::kCounter,
          StatsLabel("upstream", "x\"}\nfake_series 1"), &a);
  EXPECT_EQ(reg.Render(),
            "# HELP infertel_things_total Things\n# TYPE infertel_things_total counter\n"
            "infertel_things_total{upstream=\"x\\\"}\\nfake_series 1\"} 1\n");
}

}  // namespace
}  // namespace infertel
