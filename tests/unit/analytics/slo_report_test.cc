#include "analytics/slo_report.h"

#include <gtest/gtest.h>

namespace infertel::analytics {
namespace {

constexpr std::int64_t kS = 1'000'000'000;

TraceSpan Span(std::string_view name, std::string_view parent, std::int64_t start, std::int64_t end,
               std::map<std::string, AttrValue, std::less<>> attributes) {
  TraceSpan t;
  t.name = std::string(name);
  t.parent_span_id = std::string(parent);
  t.start_ns = start;
  t.end_ns = end;
  t.attributes = std::move(attributes);
  return t;
}

TEST(SloReport, TheEntrySpanGivesTheVerdictAndTheEngineSpanTheCause) {
  const std::vector<TraceSpan> spans{
      Span("chat m", "", 10 * kS, 13 * kS,
           {{"gen_ai.request.model", std::string("m")},
            {"infertel.tenant", std::string("acme")},
            {"infertel.slo.met", false},
            {"infertel.slo.missed", std::vector<std::string>{"ttft", "e2e"}},
            {"infertel.latency.cause", std::string("client")}}),
      Span("llm_request", "abcd", 10 * kS, 12 * kS,
           {{"infertel.latency.cause", std::string("queue")}}),
  };
  const auto r = RecordOfTrace("t1", spans);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->model, "m");
  EXPECT_EQ(r->tenant, "acme");
  EXPECT_TRUE(r->judged);
  EXPECT_FALSE(r->met);
  EXPECT_EQ(r->missed, (std::vector<std::string>{"ttft", "e2e"}));
  EXPECT_EQ(r->cause, "queue");
  EXPECT_EQ(r->duration_ns, 3 * kS);
  EXPECT_FALSE(RecordOfTrace("t2", {Span("x", "", 0, 1, {})}));
}

TEST(SloReport, AttainmentPerModelAndTenantWithTheRecentWindows) {
  std::vector<RequestRecord> records;
  const std::int64_t now = 1000 * kS;
  auto add = [&](std::string tenant, bool met, std::int64_t end_ago_s, std::int64_t dur_s,
                 std::vector<std::string> missed = {}) {
    RequestRecord r;
    r.trace_id = "trace-" + std::to_string(records.size());
    r.model = "m";
    r.tenant = std::move(tenant);
    r.judged = true;
    r.met = met;
    r.missed = std::move(missed);
    r.duration_ns = dur_s * kS;
    r.start_unix_nano = now - end_ago_s * kS - r.duration_ns;
    r.cause = met ? "" : "queue";
    records.push_back(std::move(r));
  };
  add("acme", true, 10, 1);
  add("acme", false, 30, 9, {"e2e"});
  add("acme", true, 200, 2);
  add("beta", false, 100, 5, {"ttft", "error"});
  ReportOptions o;
  o.now_unix_nano = now;
  o.slowest = 2;
  const std::string text = RenderSloReport(records, o);
  // acme: 2 of 3 met; in the last minute 1 of 2, in five minutes 2 of 3.
  EXPECT_NE(text.find("acme                   3       2     66.7%   50.0%   66.7%  0 0 1 0"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("beta                   1       0      0.0%       -    0.0%  1 0 0 1"),
            std::string::npos)
      << text;
  // The two slowest, slowest first, with what they missed and why.
  const auto nine = text.find("9.00 s");
  const auto five = text.find("5.00 s");
  ASSERT_NE(nine, std::string::npos) << text;
  ASSERT_NE(five, std::string::npos) << text;
  EXPECT_LT(nine, five);
  EXPECT_NE(text.find("ttft,error"), std::string::npos);
  EXPECT_EQ(text.find("2.00 s"), std::string::npos);  // only two listed
}

TEST(SloReport, SaysWhenNothingWasJudged) {
  RequestRecord r;
  r.model = "m";
  const std::string text = RenderSloReport({r}, {});
  EXPECT_NE(text.find("INFERTEL_SLO_TTFT_MS"), std::string::npos);
}

}  // namespace
}  // namespace infertel::analytics
