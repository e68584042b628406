#include "console/document.h"

#include <gtest/gtest.h>

namespace infertel::console {
namespace {

using config::Key;
using config::Value;

ConsoleValues Ok(std::string_view text) {
  auto r = ParseConsoleDocument(text);
  if (auto* err = std::get_if<std::string>(&r)) {
    ADD_FAILURE() << "unexpected error: " << *err;
    return {};
  }
  return std::get<ConsoleValues>(r);
}

std::string Err(std::string_view text) {
  auto r = ParseConsoleDocument(text);
  if (std::holds_alternative<ConsoleValues>(r)) {
    ADD_FAILURE() << "accepted: " << text;
    return "";
  }
  return std::get<std::string>(r);
}

TEST(ConsoleDocumentTest, FlatYamlIsTyped) {
  auto v =
      Ok("otel.instrumentation.vllm.tracing.level: 2\n"
         "otel.instrumentation.genai.capture-message-content: off\n"
         "apsara.apm.inference.sglang.logging.level: debug\n"
         "otel.instrumentation.genai.message-content.capture-strategy: SPAN_AND_EVENT\n");
  ASSERT_EQ(v.size(), 4u);
  EXPECT_EQ(v[Key::kVllmTracingLevel], Value{std::int64_t{2}});
  EXPECT_EQ(v[Key::kCaptureMessageContent], Value{false});
  EXPECT_EQ(v[Key::kSglangLoggingLevel], Value{std::string("DEBUG")});
  EXPECT_EQ(v[Key::kMessageContentCaptureStrategy], Value{std::string("span_and_event")});
}

TEST(ConsoleDocumentTest, NestedYamlIsJoinedWithDots) {
  auto v =
      Ok("otel:\n"
         "  instrumentation:\n"
         "    vllm:\n"
         "      enabled: false\n"
         "      tracing.level: 0\n"
         "    genai:\n"
         "      message-content:\n"
         "        max-length: 100\n");
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[Key::kVllmEnabled], Value{false});
  EXPECT_EQ(v[Key::kVllmTracingLevel], Value{std::int64_t{0}});
  EXPECT_EQ(v[Key::kMessageContentMaxLength], Value{std::int64_t{100}});
}

TEST(ConsoleDocumentTest, JsonWithTabsAndNestedObjects) {
  auto v =
      Ok("{\n\t\"otel.instrumentation.sglang.tracing.level\": 1,\n"
         "\t\"apsara.apm.inference.sglang\": {\"log_requests.enabled\": true,"
         " \"log_requests.level\": \"3\"}\n}");
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[Key::kSglangTracingLevel], Value{std::int64_t{1}});
  EXPECT_EQ(v[Key::kSglangLogRequests], Value{true});
  EXPECT_EQ(v[Key::kSglangLogRequestsLevel], Value{std::int64_t{3}});
}

TEST(ConsoleDocumentTest, NullLeavesTheKeyUnsetAndEmptyIsNoValues) {
  auto v =
      Ok("otel.instrumentation.vllm.tracing.level: ~\n"
         "otel.instrumentation.vllm.metrics.enabled: false\n");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v.count(Key::kVllmTracingLevel), 0u);
  EXPECT_TRUE(Ok("").empty());
  EXPECT_TRUE(Ok("# only a comment\n").empty());
  EXPECT_TRUE(Ok("{}").empty());
}

TEST(ConsoleDocumentTest, UnknownKeyRejectsTheWholeDocument) {
  std::string e =
      Err("otel.instrumentation.vllm.tracing.level: 2\n"
          "otel.instrumentation.vllm.nope: 1\n");
  EXPECT_NE(e.find("unknown key 'otel.instrumentation.vllm.nope'"), std::string::npos) << e;
}

TEST(ConsoleDocumentTest, BadValueNamesTheKeyAndTheAcceptedValues) {
  std::string e = Err("otel.instrumentation.vllm.tracing.level: 7\n");
  EXPECT_NE(e.find("otel.instrumentation.vllm.tracing.level"), std::string::npos) << e;
  EXPECT_NE(e.find("an integer from 0 to 2"), std::string::npos) << e;
  e = Err("{\"apsara.apm.inference.sglang.logging.level\": \"LOUD\"}");
  EXPECT_NE(e.find("one of DEBUG,INFO,WARNING,ERROR,CRITICAL"), std::string::npos) << e;
  e = Err("{\"otel.instrumentation.genai.message-content.max-length\": 1.5}");
  EXPECT_NE(e.find("max-length"), std::string::npos) << e;
}

TEST(ConsoleDocumentTest, SyntaxAndShapeErrors) {
  EXPECT_NE(Err("a: [1, 2").find("invalid YAML"), std::string::npos);
  EXPECT_NE(Err("{\"a\": }").find("invalid JSON"), std::string::npos);
  EXPECT_NE(Err("- 1\n- 2\n").find("expected a mapping"), std::string::npos);
  EXPECT_NE(Err("otel.instrumentation.vllm.tracing.level: [1]\n").find("got a list"),
            std::string::npos);
  EXPECT_NE(Err(std::string(kMaxDocumentBytes + 1, ' ')).find("larger than"), std::string::npos);
}

TEST(ConsoleDocumentTest, ErrorListIsBounded) {
  std::string doc;
  for (int i = 0; i < 30; ++i) doc += "unknown.key" + std::to_string(i) + ": 1\n";
  std::string e = Err(doc);
  EXPECT_NE(e.find("and 22 more"), std::string::npos) << e;
}

}  // namespace
}  // namespace infertel::console
