// SGLang entry spans (spec M4.1): the two SGLang SSE fixtures replayed through the stream
// observer, as the gateway does, then built into entry spans.

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "common/engine_ids.h"
#include "core/semconv.h"
#include "gateway/entry_span.h"
#include "openai/openai.h"

namespace infertel::gateway {

using openai::Exchange;
using openai::ExchangeListener;
using openai::Outcome;

namespace {
namespace sc = semconv;

std::vector<std::string> FixtureEvents(const std::string& name) {
  std::ifstream in(std::string(INFERTEL_FIXTURES_DIR) + "/" + name);
  EXPECT_TRUE(in.good()) << name;
  std::vector<std::string> events;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("data:", 0) != 0) continue;
    std::string payload = line.substr(5);
    if (!payload.empty() && payload[0] == ' ') payload.erase(0, 1);
    events.push_back(payload);
  }
  return events;
}

const AnyValue* Get(const Span& s, std::string_view key) { return FindAttr(s.attributes(), key); }

// An SGLang chat-stream exchange: the request body parsed, the fixture's events through the
// observer, the way the gateway fills the exchange.
Exchange StreamExchange(const std::string& body, const std::string& fixture, bool capture = true) {
  openai::Exchange ex;
  ex.engine = SglangEngineId();
  ex.upstream_name = "sgl";
  ex.op = openai::Operation::kChat;
  openai::CaptureOptions cap;
  cap.capture_content = capture;
  ex.capture_content = capture;
  ex.request = openai::ParseRequest(ex.op, body, cap);
  EXPECT_TRUE(ex.request.parsed);
  ex.trace_id = NewTraceId();
  ex.span_id = NewSpanId();
  ex.start = Stopwatch::Start();
  openai::StreamObserver::Options o;
  o.capture = cap;
  openai::StreamObserver obs(ex.op, o);
  for (const auto& e : FixtureEvents(fixture)) {
    std::string out;
    obs.OnData(e, &out);
  }
  ex.streamed = true;
  ex.response = obs.Finish();
  ex.stream_deltas = obs.delta_count();
  ex.end_mono_ns = ex.start.mono_start_ns + 250'000'000;  // 0.25 s
  ex.http_status = 200;
  return ex;
}

constexpr const char* kReasoningBody =
    R"({"model":"Qwen/Qwen3.8-Flash-Next","stream":true,"stream_options":{"include_usage":true},)"
    R"("temperature":0.6,"top_p":0.95,"top_k":20,"max_tokens":64,"n":1,"user":"u-1",)"
    R"("messages":[{"role":"user","content":"Reply with exactly: OK"}]})";

constexpr const char* kToolBody =
    R"({"model":"deepseek-ai/DeepSeek-V4-Flash-0731","stream":true,"stream_interval":2,)"
    R"("tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}],)"
    R"("messages":[{"role":"user","content":"Weather in Paris and Tokyo?"}]})";

TEST(SglangEntrySpan, ReasoningStreamWithUsage) {
  openai::Exchange ex = StreamExchange(kReasoningBody, "sglang-sse-chat-reasoning-usage.txt");
  Span s;
  BuildEntrySpan(ex, &s, EngineFacts{.stream_interval = 4});  // the server's --stream-interval 4
  EXPECT_EQ(s.name(), "chat Qwen/Qwen3.8-Flash-Next");
  EXPECT_EQ(s.kind(), otlp_trace::Span::SPAN_KIND_INTERNAL);
  EXPECT_EQ(Get(s, sc::kGenAiSpanKind)->string_value(), "LLM");
  EXPECT_EQ(Get(s, sc::kGenAiOperationName)->string_value(), "chat");
  EXPECT_EQ(Get(s, sc::kGenAiRequestModel)->string_value(), "Qwen/Qwen3.8-Flash-Next");
  EXPECT_EQ(Get(s, sc::kGenAiRequestId)->string_value(), "b2718869cf124b6a81ac2aaddf1f62be");
  EXPECT_TRUE(Get(s, sc::kGenAiRequestIsStream)->bool_value());
  EXPECT_DOUBLE_EQ(Get(s, sc::kGenAiRequestTemperature)->double_value(), 0.6);
  EXPECT_DOUBLE_EQ(Get(s, sc::kGenAiRequestTopP)->double_value(), 0.95);
  EXPECT_EQ(Get(s, sc::kGenAiRequestTopK)->int_value(), 20);
  EXPECT_EQ(Get(s, sc::kGenAiRequestMaxTokens)->int_value(), 64);
  EXPECT_EQ(Get(s, sc::kGenAiRequestChoiceCount)->int_value(), 1);
  EXPECT_EQ(Get(s, sc::kGenAiResponseId)->string_value(), "b2718869cf124b6a81ac2aaddf1f62be");
  EXPECT_EQ(Get(s, sc::kGenAiResponseModel), nullptr);  // M4.1: non-streaming only
  ASSERT_NE(Get(s, sc::kGenAiResponseFinishReasons), nullptr);
  EXPECT_EQ(Get(s, sc::kGenAiResponseFinishReasons)->array_value().values(0).string_value(),
            "stop");
  EXPECT_EQ(Get(s, sc::kGenAiUsageInputTokens)->int_value(), 57);
  EXPECT_EQ(Get(s, sc::kGenAiUsageOutputTokens)->int_value(), 28);  // the engine's usage wins
  EXPECT_EQ(Get(s, sc::kGenAiUsageTotalTokens)->int_value(), 85);
  EXPECT_EQ(Get(s, sc::kGenAiUsageCacheReadInputTokens), nullptr);  // not reported by SGLang
  EXPECT_DOUBLE_EQ(Get(s, sc::kGenAiLatencyE2e)->double_value(), 0.25);
  // 8 deltas (7 reasoning, 1 content) × stream_interval 4.
  EXPECT_EQ(Get(s, sc::kGenAiResponseTokensStreamed)->int_value(), 32);
  EXPECT_FALSE(Get(s, sc::kGenAiRequestHasToolCalls)->bool_value());
  EXPECT_FALSE(Get(s, sc::kGenAiRequestToolCallDetected)->bool_value());
  EXPECT_EQ(Get(s, sc::kGenAiRequestToolCallsCount)->int_value(), 0);
  EXPECT_NE(Get(s, sc::kGenAiInputMessages), nullptr);
  EXPECT_NE(Get(s, sc::kGenAiOutputMessages), nullptr);
  // Not in M4.1.
  EXPECT_EQ(Get(s, sc::kGenAiUserId), nullptr);
  EXPECT_EQ(Get(s, sc::kSessionId), nullptr);
  EXPECT_EQ(s.status().code(), otlp_trace::Status::STATUS_CODE_UNSET);
}

TEST(SglangEntrySpan, ParallelToolCallsWithoutUsage) {
  openai::Exchange ex = StreamExchange(kToolBody, "sglang-sse-chat-toolcall-parallel.txt");
  Span s;
  BuildEntrySpan(ex, &s, EngineFacts{.stream_interval = 1});
  EXPECT_TRUE(Get(s, sc::kGenAiRequestHasToolCalls)->bool_value());
  EXPECT_TRUE(Get(s, sc::kGenAiRequestToolCallDetected)->bool_value());
  EXPECT_EQ(Get(s, sc::kGenAiRequestToolCallsCount)->int_value(), 2);
  EXPECT_EQ(Get(s, "gen_ai.completions.0.tool_calls.0.name")->string_value(), "get_weather");
  EXPECT_EQ(Get(s, "gen_ai.completions.0.tool_calls.0.arguments")->string_value(),
            "{\"city\": \"Paris\"}");
  EXPECT_EQ(Get(s, "gen_ai.completions.0.tool_calls.1.name")->string_value(), "get_weather");
  EXPECT_EQ(Get(s, "gen_ai.completions.0.tool_calls.1.arguments")->string_value(),
            "{\"city\": \"Tokyo\"}");
  EXPECT_EQ(Get(s, "gen_ai.completions.0.tool_calls.2.name"), nullptr);
  // 18 deltas (9 reasoning, 3 content, 6 tool-call frames) × the request's stream_interval 2,
  // which wins over the server's; no usage came back, so it fills the output tokens.
  EXPECT_EQ(Get(s, sc::kGenAiResponseTokensStreamed)->int_value(), 36);
  EXPECT_EQ(Get(s, sc::kGenAiUsageOutputTokens)->int_value(), 36);
  EXPECT_EQ(Get(s, sc::kGenAiUsageInputTokens), nullptr);
  EXPECT_EQ(Get(s, sc::kGenAiResponseFinishReasons)->array_value().values(0).string_value(),
            "tool_calls");
  EXPECT_EQ(Get(s, sc::kGenAiRequestId)->string_value(), "669d24a3423f4012bece9b51f2028500");
}

TEST(SglangEntrySpan, ToolArgumentsAreContent) {
  openai::Exchange ex = StreamExchange(kToolBody, "sglang-sse-chat-toolcall-parallel.txt", false);
  Span s;
  BuildEntrySpan(ex, &s);
  EXPECT_EQ(Get(s, "gen_ai.completions.0.tool_calls.1.name")->string_value(), "get_weather");
  EXPECT_EQ(Get(s, "gen_ai.completions.0.tool_calls.1.arguments"), nullptr);
  EXPECT_EQ(Get(s, sc::kGenAiInputMessages), nullptr);
  EXPECT_EQ(Get(s, sc::kGenAiRequestToolCallsCount)->int_value(), 2);
}

TEST(SglangEntrySpan, ClientRidIsTheRequestIdAndNonStreamingHasTheModel) {
  openai::Exchange ex = StreamExchange(
      R"({"model":"m","stream":true,"rid":"my-rid-1","messages":[{"role":"user","content":"hi"}]})",
      "sglang-sse-chat-reasoning-usage.txt");
  Span s;
  BuildEntrySpan(ex, &s);
  EXPECT_EQ(Get(s, sc::kGenAiRequestId)->string_value(), "my-rid-1");
  EXPECT_EQ(Get(s, sc::kGenAiResponseTokensStreamed)->int_value(), 8);  // default interval 1

  Exchange ns;
  ns.engine = SglangEngineId();
  ns.op = openai::Operation::kTextCompletion;
  ns.request = openai::ParseRequest(ns.op, R"({"model":"m","prompt":"hi","max_tokens":4})", {});
  ns.response = openai::ParseResponse(
      ns.op,
      R"({"id":"abc","object":"text_completion","model":"m","choices":[{"index":0,"text":"x",)"
      R"("finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":4,)"
      R"("total_tokens":7,"prompt_tokens_details":{"cached_tokens":2}}})",
      {});
  ns.start = Stopwatch::Start();
  ns.end_mono_ns = ns.start.mono_start_ns + 1'500'000'000;
  Span t;
  BuildEntrySpan(ns, &t);
  EXPECT_EQ(t.name(), "text_completion m");
  EXPECT_EQ(Get(t, sc::kGenAiResponseModel)->string_value(), "m");
  EXPECT_EQ(Get(t, sc::kGenAiRequestId), nullptr);  // chat streaming only
  EXPECT_EQ(Get(t, sc::kGenAiUsageCacheReadInputTokens)->int_value(), 2);
  EXPECT_DOUBLE_EQ(Get(t, sc::kGenAiLatencyE2e)->double_value(), 1.5);
  EXPECT_EQ(Get(t, sc::kGenAiResponseTokensStreamed), nullptr);
  EXPECT_EQ(Get(t, sc::kGenAiRequestHasToolCalls), nullptr);
  EXPECT_FALSE(Get(t, sc::kGenAiRequestIsStream)->bool_value());
}

TEST(SglangEntrySpan, VllmSpansKeepTheirShape) {
  openai::Exchange ex = StreamExchange(kReasoningBody, "sglang-sse-chat-reasoning-usage.txt");
  ex.engine = VllmEngineId();
  Span s;
  BuildEntrySpan(ex, &s);
  EXPECT_EQ(Get(s, sc::kGenAiUserId)->string_value(), "u-1");
  EXPECT_EQ(Get(s, sc::kSessionId)->string_value(), "b2718869cf124b6a81ac2aaddf1f62be");
  EXPECT_EQ(Get(s, sc::kGenAiResponseModel)->string_value(), "Qwen/Qwen3.8-Flash-Next");
  for (auto k : {sc::kGenAiRequestId, sc::kGenAiLatencyE2e, sc::kGenAiResponseTokensStreamed,
                 sc::kGenAiRequestHasToolCalls, sc::kGenAiUsageCacheReadInputTokens}) {
    EXPECT_EQ(Get(s, k), nullptr) << k;
  }
}

}  // namespace
}  // namespace infertel::gateway
