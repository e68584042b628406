// The pieces of the gateway's answer to a failing engine: the timeouts read from the settings,
// the failure reasons, the error object in OpenAI's shape and the SSE event that ends a stream.

#include "gateway/upstream_failure.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "config/settings.h"

namespace infertel::gateway {
namespace {

using namespace std::chrono_literals;

config::Settings SettingsFrom(const std::map<std::string, std::string>& env) {
  return config::Resolve([&env](std::string_view name) -> std::optional<std::string> {
           auto it = env.find(std::string(name));
           if (it == env.end()) return std::nullopt;
           return it->second;
         })
      .settings;
}

TEST(UpstreamTimeoutsTest, DefaultsSuitLlmServing) {
  const UpstreamTimeouts t = UpstreamTimeouts::From(SettingsFrom({}));
  EXPECT_EQ(t.connect, 10s);
  EXPECT_EQ(t.first_byte, 10min);  // a request may wait minutes in the engine's queue
  EXPECT_EQ(t.idle, 5min);
}

TEST(UpstreamTimeoutsTest, ReadFromTheKeys) {
  const UpstreamTimeouts t =
      UpstreamTimeouts::From(SettingsFrom({{"INFERTEL_UPSTREAM_CONNECT_TIMEOUT_MS", "250"},
                                           {"INFERTEL_UPSTREAM_FIRST_BYTE_TIMEOUT_MS", "1500"},
                                           {"INFERTEL_UPSTREAM_IDLE_TIMEOUT_MS", "700"}}));
  EXPECT_EQ(t.connect, 250ms);
  EXPECT_EQ(t.first_byte, 1500ms);
  EXPECT_EQ(t.idle, 700ms);
}

TEST(UpstreamFailureTest, ReasonsAreDistinctLabels) {
  std::vector<std::string_view> seen;
  for (std::size_t i = 0; i < kUpstreamFailureCount; ++i) {
    auto r = UpstreamFailureReason(static_cast<UpstreamFailure>(i));
    EXPECT_EQ(std::count(seen.begin(), seen.end(), r), 0) << r;
    seen.push_back(r);
  }
  EXPECT_EQ(seen, (std::vector<std::string_view>{"connect_timeout", "connect_error",
                                                 "first_byte_timeout", "idle_timeout", "closed",
                                                 "invalid_status", "malformed_response"}));
}

TEST(UpstreamFailureTest, BodyFailureSeparatesTheQueueFromASilenceMidStream) {
  EXPECT_EQ(BodyFailure(true, false, /*sse=*/true, /*body_started=*/false),
            UpstreamFailure::kFirstByteTimeout);
  EXPECT_EQ(BodyFailure(true, false, true, true), UpstreamFailure::kIdleTimeout);
  EXPECT_EQ(BodyFailure(true, false, false, false), UpstreamFailure::kIdleTimeout);
  EXPECT_EQ(BodyFailure(false, false, true, true), UpstreamFailure::kClosed);
  EXPECT_EQ(BodyFailure(false, false, true, false), UpstreamFailure::kClosed);
}

TEST(UpstreamFailureTest, BodyFailureNamesAFramingErrorMalformed) {
  EXPECT_EQ(BodyFailure(false, /*malformed=*/true, false, true), UpstreamFailure::kMalformed);
  EXPECT_EQ(BodyFailure(false, true, true, false), UpstreamFailure::kMalformed);
}

TEST(UpstreamFailureTest, TimeoutsAre504AndTheRest502) {
  const UpstreamTimeouts t{1000ms, 2000ms, 3000ms};
  struct Case {
    UpstreamFailure f;
    unsigned status;
    std::string_view json_type, error_type, words;
  };
  for (const Case& c : {
           Case{UpstreamFailure::kConnectTimeout, 504, "GatewayTimeout", "timeout",
                "within 1000 ms (connect timeout)"},
           Case{UpstreamFailure::kFirstByteTimeout, 504, "GatewayTimeout", "timeout",
                "within 2000 ms (first-byte timeout)"},
           Case{UpstreamFailure::kIdleTimeout, 504, "GatewayTimeout", "timeout",
                "for 3000 ms mid-response (idle timeout)"},
           Case{UpstreamFailure::kConnectError, 502, "BadGateway", "upstream_connection_error",
                "unavailable: Connection refused"},
           Case{UpstreamFailure::kClosed, 502, "BadGateway", "upstream_closed",
                "closed the connection before the response was complete: Connection refused"},
           Case{UpstreamFailure::kMalformed, 502, "BadGateway", "upstream_malformed_response",
                "malformed HTTP response: Connection refused"},
       }) {
    const FailureReport r = DescribeFailure(c.f, t, "10.0.0.1:8000", "Connection refused");
    EXPECT_EQ(r.status, c.status) << UpstreamFailureReason(c.f);
    EXPECT_EQ(r.json_type, c.json_type) << UpstreamFailureReason(c.f);
    EXPECT_EQ(r.error_type, c.error_type) << UpstreamFailureReason(c.f);
    EXPECT_NE(r.message.find("10.0.0.1:8000"), std::string::npos) << r.message;
    EXPECT_NE(r.message.find(c.words), std::string::npos) << r.message;
    EXPECT_EQ(IsTimeout(c.f), c.status == 504);
  }
}

TEST(UpstreamFailureTest, SseErrorEventIsOpenAisErrorObjectThenDone) {
  FailureReport r;
  r.status = 502;
  r.json_type = "BadGateway";
  r.message = "engine \"x\" died";
  const std::string ev = SseErrorEvent(r);
  ASSERT_TRUE(ev.starts_with("\ndata: ")) << ev;
  const std::string_view done = "\n\ndata: [DONE]\n\n";
  ASSERT_TRUE(ev.ends_with(done)) << ev;
  const std::string json = ev.substr(7, ev.size() - 7 - done.size());
  EXPECT_EQ(
      json,
      R"({"error":{"message":"engine \"x\" died","type":"BadGateway","param":null,"code":502}})");
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS);
  EXPECT_EQ(std::string_view(doc["error"]["message"]), "engine \"x\" died");
  EXPECT_TRUE(doc["error"]["param"].is_null());
  EXPECT_EQ(int64_t(doc["error"]["code"]), 502);
}

TEST(UpstreamFailureTest, AStatusOutsideHttpIsNamedInTheMessage) {
  const FailureReport r = DescribeFailure(UpstreamFailure::kInvalidStatus, {}, "h:1", "999");
  EXPECT_EQ(r.status, 502u);
  EXPECT_EQ(r.json_type, "BadGateway");
  EXPECT_EQ(r.error_type, "upstream_invalid_status");
  EXPECT_EQ(r.message, "engine at h:1 answered with status 999, outside 100-599");
}

TEST(InvalidAnswerLogTest, CountsByReason) {
  InvalidAnswerLog log;
  for (int i = 0; i < 3; ++i) log.Record(InvalidAnswer::kUsage, "default", "prompt_tokens");
  log.Record(InvalidAnswer::kNotJson, "default", "not JSON");
  EXPECT_EQ(log.count(InvalidAnswer::kUsage).load(), 3u);
  EXPECT_EQ(log.count(InvalidAnswer::kNotJson).load(), 1u);
  EXPECT_EQ(InvalidAnswerReason(InvalidAnswer::kUsage), "usage");
  EXPECT_EQ(InvalidAnswerReason(InvalidAnswer::kNotJson), "not_json");
}

TEST(UpstreamFailureLogTest, CountsEveryFailureFromEveryThread) {
  UpstreamFailureLog log;
  FailureReport r = DescribeFailure(UpstreamFailure::kClosed, {}, "h:1", "reset");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) log.Record(UpstreamFailure::kClosed, "default", r);
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(log.count(UpstreamFailure::kClosed).load(), 4000u);
  EXPECT_EQ(log.count(UpstreamFailure::kIdleTimeout).load(), 0u);
}

}  // namespace
}  // namespace infertel::gateway
