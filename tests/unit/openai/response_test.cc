#include <gtest/gtest.h>
#include <simdjson.h>

#include <string>

#include "common/json_reading.h"
#include "openai/openai.h"

namespace infertel::openai {
namespace {

using testing::ParseJson;
using testing::Str;

TEST(OpenAiResponse, ChatWithToolCallsReasoningAndUsage) {
  const std::string body = R"({"id":"chatcmpl-abc","object":"chat.completion","model":"m1",
    "choices":[
      {"index":1,"message":{"role":"assistant","content":"second"},"logprobs":null,"finish_reason":"length"},
      {"index":0,"message":{"role":"assistant","content":null,"reasoning_content":"think",
        "tool_calls":[{"id":"call_a","type":"function","function":{"name":"f","arguments":"{\"k\":\"v\"}"}},
                      {"id":"call_b","type":"function","function":{"name":"g","arguments":"{}"}}]},
       "finish_reason":"tool_calls"}],
    "usage":{"prompt_tokens":10,"completion_tokens":20,"total_tokens":30,
             "prompt_tokens_details":{"cached_tokens":8}}})";
  ResponseInfo info = ParseResponse(Operation::kChat, body, CaptureOptions{});
  ASSERT_TRUE(info.parsed);
  EXPECT_EQ(info.id, "chatcmpl-abc");
  EXPECT_EQ(info.model, "m1");
  EXPECT_EQ(info.finish_reasons, (std::vector<std::string>{"tool_calls", "length"}));
  EXPECT_EQ(info.usage.input_tokens, 10);
  EXPECT_EQ(info.usage.output_tokens, 20);
  EXPECT_EQ(info.usage.total_tokens, 30);
  EXPECT_EQ(info.usage.cached_tokens, 8);
  ASSERT_EQ(info.tool_calls.size(), 2u);
  ASSERT_EQ(info.tool_calls[0].size(), 2u);
  EXPECT_EQ(info.tool_calls[0][0].name, "f");
  EXPECT_EQ(info.tool_calls[0][0].arguments, "{\"k\":\"v\"}");
  EXPECT_EQ(info.tool_calls[0][1].id, "call_b");
  EXPECT_TRUE(info.tool_calls[1].empty());
  EXPECT_FALSE(info.error_type.has_value());

  simdjson::dom::parser parser;
  auto msgs = ParseJson(parser, info.output_messages_json);
  ASSERT_EQ(msgs.get_array().size(), 2u);
  EXPECT_EQ(Str(msgs.at(0)["finish_reason"]), "tool_call");
  ASSERT_EQ(msgs.at(0)["parts"].get_array().size(), 3u);
  EXPECT_EQ(Str(msgs.at(0)["parts"].at(0)["type"]), "reasoning");
  EXPECT_EQ(Str(msgs.at(0)["parts"].at(0)["content"]), "think");
  EXPECT_EQ(Str(msgs.at(0)["parts"].at(1)["type"]), "tool_call");
  EXPECT_EQ(Str(msgs.at(0)["parts"].at(2)["name"]), "g");
  EXPECT_EQ(Str(msgs.at(1)["parts"].at(0)["content"]), "second");
  EXPECT_EQ(Str(msgs.at(1)["finish_reason"]), "length");
}

TEST(OpenAiResponse, CompletionsEmbeddingsRerank) {
  ResponseInfo c = ParseResponse(
      Operation::kTextCompletion,
      R"({"id":"cmpl-1","model":"m","choices":[{"index":0,"text":"hello","logprobs":null,"finish_reason":"stop","stop_reason":null}],"usage":{"prompt_tokens":3,"total_tokens":5,"completion_tokens":2}})",
      CaptureOptions{});
  EXPECT_EQ(c.finish_reasons, std::vector<std::string>{"stop"});
  simdjson::dom::parser parser;
  EXPECT_EQ(Str(ParseJson(parser, c.output_messages_json).at(0)["parts"].at(0)["content"]),
            "hello");

  ResponseInfo e = ParseResponse(
      Operation::kEmbeddings,
      R"({"id":"embd-1","object":"list","model":"e","data":[{"index":0,"object":"embedding","embedding":[0.1,0.2]}],"usage":{"prompt_tokens":4,"total_tokens":4,"completion_tokens":0}})",
      CaptureOptions{});
  EXPECT_EQ(e.id, "embd-1");
  EXPECT_EQ(e.usage.input_tokens, 4);
  EXPECT_TRUE(e.output_messages_json.empty());

  ResponseInfo r = ParseResponse(
      Operation::kRerank,
      R"({"id":"score-1","model":"r","usage":{"total_tokens":12},"results":[{"index":0,"relevance_score":0.9}]})",
      CaptureOptions{});
  EXPECT_EQ(r.usage.total_tokens, 12);
  EXPECT_FALSE(r.usage.input_tokens.has_value());
  EXPECT_TRUE(r.output_messages_json.empty());
}

TEST(OpenAiResponse, ErrorBodies) {
  ResponseInfo v = ParseResponse(
      Operation::kChat,
      R"({"error":{"message":"stream_options only with stream","type":"BadRequestError","param":null,"code":400}})",
      CaptureOptions{});
  EXPECT_EQ(v.error_type, "BadRequestError");
  EXPECT_EQ(v.error_message, "stream_options only with stream");

  ResponseInfo old = ParseResponse(
      Operation::kChat,
      R"({"object":"error","message":"The model `x` does not exist.","type":"NotFoundError","param":null,"code":404})",
      CaptureOptions{});
  EXPECT_EQ(old.error_type, "NotFoundError");
  EXPECT_EQ(old.error_message, "The model `x` does not exist.");

  ResponseInfo code_only = ParseResponse(
      Operation::kChat, R"({"error":{"message":"m","code":"rate_limited"}})", CaptureOptions{});
  EXPECT_EQ(code_only.error_type, "rate_limited");

  ResponseInfo unauthorized =
      ParseResponse(Operation::kChat, R"({"error":"Unauthorized"})", CaptureOptions{});
  EXPECT_EQ(unauthorized.error_message, "Unauthorized");

  ResponseInfo detail =
      ParseResponse(Operation::kChat, R"({"detail":"Not Found"})", CaptureOptions{});
  EXPECT_EQ(detail.error_message, "Not Found");

  ResponseInfo validation = ParseResponse(
      Operation::kChat,
      R"({"detail":[{"type":"missing","loc":["body","messages"],"msg":"Field required","input":{"api_key":"sk-x"}}]})",
      CaptureOptions{});
  EXPECT_EQ(validation.error_message, "Field required");

  ResponseInfo garbage = ParseResponse(Operation::kChat, "<html>502</html>", CaptureOptions{});
  EXPECT_FALSE(garbage.parsed);
  EXPECT_FALSE(garbage.parse_error.empty());
}

TEST(OpenAiResponse, MalformedAndWrongTypes) {
  const std::vector<std::string> corpus = {
      "",
      "{\"id\":",
      std::string(3000, '{'),
      R"({"id":5,"model":[],"choices":{"a":1},"usage":"x"})",
      R"({"choices":[1,null,{"index":"x","message":5},{"index":3,"message":{"content":7,"tool_calls":[1,{"function":{"arguments":{"a":1}}}]},"finish_reason":5}]})",
      R"({"usage":{"prompt_tokens":-1,"completion_tokens":1.5,"total_tokens":1e30,"prompt_tokens_details":[]}})",
      "{\"id\":\"\xc3\x28\"}",
  };
  simdjson::dom::parser parser;
  for (const auto& body : corpus) {
    for (Operation op : {Operation::kChat, Operation::kTextCompletion, Operation::kEmbeddings}) {
      ResponseInfo info = ParseResponse(op, body, CaptureOptions{});
      if (!info.parsed) {
        EXPECT_FALSE(info.parse_error.empty());
      }
      if (!info.output_messages_json.empty()) ParseJson(parser, info.output_messages_json);
      EXPECT_EQ(info.tool_calls.size(), info.finish_reasons.size());
    }
  }
  ResponseInfo wrong = ParseResponse(Operation::kChat, corpus[4], CaptureOptions{});
  ASSERT_EQ(wrong.tool_calls.size(), 2u);  // two object choices
  ASSERT_EQ(wrong.tool_calls[1].size(), 1u);
  EXPECT_EQ(wrong.tool_calls[1][0].arguments, R"({"a":1})");
  ResponseInfo usage = ParseResponse(Operation::kChat, corpus[5], CaptureOptions{});
  EXPECT_FALSE(usage.usage.input_tokens.has_value());  // a negative count is no count
  EXPECT_FALSE(usage.usage.output_tokens.has_value());
  EXPECT_FALSE(usage.usage.total_tokens.has_value());
  EXPECT_EQ(usage.usage.invalid, "prompt_tokens,completion_tokens,total_tokens");
}

TEST(OpenAiResponse, StripInjectedLogprobsNonStreaming) {
  const std::string body =
      R"({"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"logprobs":{"content":[{"token":"Hi","logprob":-0.1}]},"finish_reason":"stop"},{"index":1,"message":{"content":"logprobs"},"logprobs" : { "content" : [] } }],"usage":{"total_tokens":3}})";
  auto out = StripInjectedLogprobs(body);
  ASSERT_TRUE(out);
  EXPECT_EQ(
      *out,
      R"({"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"logprobs":null,"finish_reason":"stop"},{"index":1,"message":{"content":"logprobs"},"logprobs" : null }],"usage":{"total_tokens":3}})");
  EXPECT_FALSE(StripInjectedLogprobs(*out).has_value());
  EXPECT_FALSE(StripInjectedLogprobs("{oops").has_value());
}

// An engine's usage that is not token counts (negative, fractional, above 2^53, not a number)
// is left out and named, so that it reaches neither the token counters nor the span.
TEST(OpenAiResponse, UsageThatIsNotTokenCountsIsDroppedAndNamed) {
  const std::string body = R"({"id":"x","choices":[],
    "usage":{"prompt_tokens":-5,"completion_tokens":3.5,"total_tokens":9007199254740993,
             "prompt_tokens_details":{"cached_tokens":"4"}}})";
  ResponseInfo info = ParseResponse(Operation::kChat, body, CaptureOptions{});
  ASSERT_TRUE(info.parsed);
  EXPECT_FALSE(info.usage.input_tokens.has_value());
  EXPECT_FALSE(info.usage.output_tokens.has_value());
  EXPECT_FALSE(info.usage.total_tokens.has_value());
  EXPECT_FALSE(info.usage.cached_tokens.has_value());
  EXPECT_EQ(info.usage.invalid, "prompt_tokens,completion_tokens,total_tokens,cached_tokens");

  // The bounds themselves are counts; a float without a fraction is one too (Pydantic's view);
  // null says nothing.
  info = ParseResponse(Operation::kChat,
                       R"({"usage":{"prompt_tokens":0,"completion_tokens":9007199254740992,
                           "total_tokens":7.0,"prompt_tokens_details":{"cached_tokens":null}}})",
                       CaptureOptions{});
  EXPECT_EQ(info.usage.input_tokens, 0);
  EXPECT_EQ(info.usage.output_tokens, kMaxTokenCount);
  EXPECT_EQ(info.usage.total_tokens, 7);
  EXPECT_EQ(info.usage.cached_tokens, 0);
  EXPECT_EQ(info.usage.invalid, "");
}

}  // namespace
}  // namespace infertel::openai
