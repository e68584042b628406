#include "ui/store_series.h"

#include <gtest/gtest.h>
#include <simdjson.h>

namespace infertel::ui {
namespace {

exporting::TraceSummary Trace(std::int64_t start_ms, std::int64_t dur_ms, int status = 0,
                              std::string tenant = "t") {
  exporting::TraceSummary t;
  t.model = "m";
  t.tenant = std::move(tenant);
  t.start_time_unix_nano = start_ms * 1'000'000;
  t.duration_ns = dur_ms * 1'000'000;
  t.status_code = status;
  return t;
}

std::vector<double> ValuesOf(const std::string& json, std::string_view metric) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(json);
  std::vector<double> out;
  for (auto s : doc["series"].get_array())
    if (std::string_view(s["metric"]) == metric)
      for (auto v : s["values"].get_array()) out.push_back(v.is_null() ? -1 : double(v));
  return out;
}

TEST(StepSecondsFor, TenSecondsOrLongerToStayUnderTheBound) {
  EXPECT_EQ(StepSecondsFor(15 * 60'000, 360), 10);
  EXPECT_EQ(StepSecondsFor(6 * 3'600'000, 360), 60);
  EXPECT_EQ(StepSecondsFor(24 * 3'600'000, 360), 240);
}

TEST(StoreSeriesJson, RatesAndDurationsPerWholeStep) {
  // Newest first, as the store answers; the window is [100 s, 131 s): steps 100, 110, 120.
  std::vector<exporting::TraceSummary> traces{Trace(130'500, 5),  // the step under way: left out
                                              Trace(121'000, 300, 2), Trace(120'500, 100),
                                              Trace(101'000, 10),     Trace(102'000, 30),
                                              Trace(103'000, 20)};
  const std::string json = StoreSeriesJson(traces, 100'000, 131'000, 10, true);
  EXPECT_EQ(ValuesOf(json, "requests_per_second"), (std::vector<double>{0.3, 0, 0.2}));
  EXPECT_EQ(ValuesOf(json, "errors_per_second"), (std::vector<double>{0, 0, 0.1}));
  // Durations of the requests that succeeded only; no request: no value.
  EXPECT_EQ(ValuesOf(json, "e2e_p50_seconds"), (std::vector<double>{0.02, -1, 0.1}));
  EXPECT_EQ(ValuesOf(json, "e2e_p99_seconds"), (std::vector<double>{0.03, -1, 0.1}));
  simdjson::dom::parser parser;
  auto doc = parser.parse(json);
  EXPECT_EQ(std::string_view(doc["source"]), "store");
  EXPECT_EQ(doc["times"].get_array().size(), 3u);
}

TEST(StoreSeriesJson, AReadCutShortLeavesTheOlderStepsEmpty) {
  std::vector<exporting::TraceSummary> traces{Trace(125'000, 5), Trace(115'000, 5)};
  const std::string json = StoreSeriesJson(traces, 100'000, 130'000, 10, false);
  EXPECT_EQ(ValuesOf(json, "requests_per_second"), (std::vector<double>{-1, -1, 0.1}));
}

}  // namespace
}  // namespace infertel::ui
