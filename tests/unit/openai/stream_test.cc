#include <gtest/gtest.h>
#include <simdjson.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "openai/openai.h"

namespace infertel::openai {
namespace {

using Verdict = StreamObserver::Verdict;

// The `data:` payloads of an SSE fixture, in order (one event per `data:` line).
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

struct Replay {
  std::vector<Verdict> verdicts;
  std::vector<std::string> rewritten;
};

Replay Feed(StreamObserver* obs, const std::vector<std::string>& events) {
  Replay r;
  for (const auto& ev : events) {
    std::string out;
    r.verdicts.push_back(obs->OnData(ev, &out));
    r.rewritten.push_back(out);
  }
  return r;
}

// Parses the output messages JSON and returns the message array.
simdjson::dom::array Messages(simdjson::dom::parser& parser, const std::string& json) {
  simdjson::dom::element root;
  EXPECT_EQ(parser.parse(json).get(root), simdjson::SUCCESS) << json;
  simdjson::dom::array arr;
  EXPECT_EQ(root.get_array().get(arr), simdjson::SUCCESS) << json;
  return arr;
}

std::string Str(simdjson::dom::element e, const char* key) {
  std::string_view s;
  if (e[key].get_string().get(s)) return "<absent>";
  return std::string(s);
}

TEST(OpenAiStream, VllmToolCallFixture) {
  auto events = FixtureEvents("vllm-sse-chat-toolcall.txt");
  ASSERT_EQ(events.size(), 7u);
  StreamObserver obs(Operation::kChat, {});
  Replay r = Feed(&obs, events);
  for (Verdict v : r.verdicts) EXPECT_EQ(v, Verdict::kForward);
  EXPECT_TRUE(obs.saw_done());
  // Role chunk (content "") and the final content "" chunk do not count; the tool-call
  // name chunk and three argument pieces do.
  EXPECT_EQ(obs.delta_count(), 4);

  ResponseInfo info = obs.Finish();
  EXPECT_EQ(info.id, "chatcmpl-d0c68c86be0641129cffa5053c0c217e");
  EXPECT_EQ(info.model, "");
  EXPECT_EQ(info.finish_reasons, std::vector<std::string>{"tool_calls"});
  ASSERT_EQ(info.tool_calls.size(), 1u);
  ASSERT_EQ(info.tool_calls[0].size(), 1u);
  EXPECT_EQ(info.tool_calls[0][0].id, "chatcmpl-tool-ca99dda515524c6abe47d1ea22813507");
  EXPECT_EQ(info.tool_calls[0][0].name, "run_command");
  EXPECT_EQ(info.tool_calls[0][0].arguments, "{\"command\": \"ls\"}");
  EXPECT_FALSE(info.usage.input_tokens.has_value());

  simdjson::dom::parser parser;
  auto msgs = Messages(parser, info.output_messages_json);
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(Str(msgs.at(0), "role"), "assistant");
  EXPECT_EQ(Str(msgs.at(0), "finish_reason"), "tool_call");
  simdjson::dom::array parts;
  ASSERT_EQ(msgs.at(0)["parts"].get_array().get(parts), simdjson::SUCCESS);
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(Str(parts.at(0), "type"), "tool_call");
  EXPECT_EQ(Str(parts.at(0), "name"), "run_command");
  EXPECT_EQ(Str(parts.at(0), "id"), "chatcmpl-tool-ca99dda515524c6abe47d1ea22813507");
  EXPECT_EQ(Str(parts.at(0), "arguments"), "{\"command\": \"ls\"}");
}

TEST(OpenAiStream, VllmTruncatedFixtureHasNoFinish) {
  auto events = FixtureEvents("vllm-sse-chat-v0.5-issue6083-TRUNCATED.txt");
  ASSERT_EQ(events.size(), 6u);
  StreamObserver obs(Operation::kChat, {});
  Feed(&obs, events);
  EXPECT_FALSE(obs.saw_done());
  EXPECT_EQ(obs.delta_count(), 5);  // the first chunk is role-only
  ResponseInfo info = obs.Finish();
  EXPECT_EQ(info.id, "cmpl-840312ff78664572bb504e606140b952");
  EXPECT_EQ(info.model, "Qwen-v");
  // Cut short: no reason is made up (it was [""]); the choice is counted unfinished.
  EXPECT_TRUE(info.finish_reasons.empty());
  EXPECT_EQ(info.unfinished_choices, 1u);
  simdjson::dom::parser parser;
  auto msgs = Messages(parser, info.output_messages_json);
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(Str(msgs.at(0), "finish_reason"), "error");
  EXPECT_EQ(Str(msgs.at(0)["parts"].at(0), "type"), "text");
  EXPECT_EQ(Str(msgs.at(0)["parts"].at(0), "content"), "我是阿里云开发的一款");
}

TEST(OpenAiStream, SglangReasoningUsageFixture) {
  auto events = FixtureEvents("sglang-sse-chat-reasoning-usage.txt");
  ASSERT_EQ(events.size(), 12u);
  StreamObserver::Options opt;
  opt.drop_injected_usage = true;
  StreamObserver obs(Operation::kChat, opt);
  Replay r = Feed(&obs, events);
  for (std::size_t i = 0; i < events.size(); ++i) {
    // Only the usage chunk (choices: []) is the gateway's own.
    EXPECT_EQ(r.verdicts[i], i == 10 ? Verdict::kDrop : Verdict::kForward) << i;
  }
  EXPECT_TRUE(obs.saw_done());
  EXPECT_EQ(obs.delta_count(), 8);  // 7 reasoning pieces + 1 content piece
  ResponseInfo info = obs.Finish();
  EXPECT_EQ(info.id, "b2718869cf124b6a81ac2aaddf1f62be");
  EXPECT_EQ(info.model, "Qwen/Qwen3.8-Flash-Next");
  EXPECT_EQ(info.finish_reasons, std::vector<std::string>{"stop"});
  EXPECT_EQ(info.usage.input_tokens, 57);
  EXPECT_EQ(info.usage.output_tokens, 28);
  EXPECT_EQ(info.usage.total_tokens, 85);
  EXPECT_FALSE(info.usage.cached_tokens.has_value());  // prompt_tokens_details: null

  simdjson::dom::parser parser;
  auto msgs = Messages(parser, info.output_messages_json);
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(Str(msgs.at(0), "finish_reason"), "stop");
  simdjson::dom::array parts;
  ASSERT_EQ(msgs.at(0)["parts"].get_array().get(parts), simdjson::SUCCESS);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(Str(parts.at(0), "type"), "reasoning");
  EXPECT_EQ(Str(parts.at(0), "content"),
            "We need to respond to user: \"Reply with exactly: OK\". Need final exactly OK. "
            "Ensure no extra.\n");
  EXPECT_EQ(Str(parts.at(1), "type"), "text");
  EXPECT_EQ(Str(parts.at(1), "content"), "\n\nOK");
}

TEST(OpenAiStream, SglangParallelToolCallsFixture) {
  auto events = FixtureEvents("sglang-sse-chat-toolcall-parallel.txt");
  ASSERT_EQ(events.size(), 21u);
  StreamObserver::Options opt;
  opt.drop_injected_usage = true;  // "usage": null frames are the engine's, not ours
  StreamObserver obs(Operation::kChat, opt);
  Replay r = Feed(&obs, events);
  for (Verdict v : r.verdicts) EXPECT_EQ(v, Verdict::kForward);
  EXPECT_EQ(obs.delta_count(), 18);  // 9 reasoning + 3 content + 6 tool-call frames
  ResponseInfo info = obs.Finish();
  EXPECT_EQ(info.id, "669d24a3423f4012bece9b51f2028500");
  EXPECT_EQ(info.finish_reasons, std::vector<std::string>{"tool_calls"});
  EXPECT_FALSE(info.usage.total_tokens.has_value());
  ASSERT_EQ(info.tool_calls.size(), 1u);
  ASSERT_EQ(info.tool_calls[0].size(), 2u);
  EXPECT_EQ(info.tool_calls[0][0].id, "call_361011ce08d84cc6971c6d8a");
  EXPECT_EQ(info.tool_calls[0][0].name, "get_weather");
  EXPECT_EQ(info.tool_calls[0][0].arguments, "{\"city\": \"Paris\"}");
  EXPECT_EQ(info.tool_calls[0][1].id, "call_3aaf5236eecc4614aba70f6b");
  EXPECT_EQ(info.tool_calls[0][1].name, "get_weather");
  EXPECT_EQ(info.tool_calls[0][1].arguments, "{\"city\": \"Tokyo\"}");

  simdjson::dom::parser parser;
  auto msgs = Messages(parser, info.output_messages_json);
  ASSERT_EQ(msgs.size(), 1u);
  simdjson::dom::array parts;
  ASSERT_EQ(msgs.at(0)["parts"].get_array().get(parts), simdjson::SUCCESS);
  ASSERT_EQ(parts.size(), 4u);
  EXPECT_EQ(Str(parts.at(0), "type"), "reasoning");
  EXPECT_EQ(Str(parts.at(1), "type"), "text");
  EXPECT_EQ(Str(parts.at(1), "content"), "I'll get the weather for both cities.\n\n");
  EXPECT_EQ(Str(parts.at(2), "type"), "tool_call");
  EXPECT_EQ(Str(parts.at(3), "arguments"), "{\"city\": \"Tokyo\"}");
  EXPECT_EQ(Str(msgs.at(0), "finish_reason"), "tool_call");
}

TEST(OpenAiStream, CompletionChunksAndMultipleChoices) {
  StreamObserver obs(Operation::kTextCompletion, {});
  std::string out;
  obs.OnData(
      R"({"id":"cmpl-1","model":"m","choices":[{"index":1,"text":"B1","finish_reason":null}]})",
      &out);
  obs.OnData(
      R"({"id":"cmpl-1","model":"m","choices":[{"index":0,"text":"A1","finish_reason":null}]})",
      &out);
  obs.OnData(R"({"id":"cmpl-1","choices":[{"index":0,"text":"A2","finish_reason":"length"}]})",
             &out);
  obs.OnData(R"({"id":"cmpl-1","choices":[{"index":1,"text":"","finish_reason":"stop"}]})", &out);
  obs.OnData("[DONE]", &out);
  EXPECT_EQ(obs.delta_count(), 3);
  ResponseInfo info = obs.Finish();
  EXPECT_EQ(info.finish_reasons, (std::vector<std::string>{"length", "stop"}));
  simdjson::dom::parser parser;
  auto msgs = Messages(parser, info.output_messages_json);
  ASSERT_EQ(msgs.size(), 2u);
  EXPECT_EQ(Str(msgs.at(0)["parts"].at(0), "content"), "A1A2");
  EXPECT_EQ(Str(msgs.at(1)["parts"].at(0), "content"), "B1");
  EXPECT_EQ(Str(msgs.at(0), "finish_reason"), "length");
}

TEST(OpenAiStream, ContinuousUsageKeepsLastAndIsRemovedWhenInjected) {
  StreamObserver::Options opt;
  opt.drop_injected_usage = true;
  StreamObserver obs(Operation::kChat, opt);
  std::string out;
  const std::string c1 =
      R"({"id":"x","choices":[{"index":0,"delta":{"content":"a"}}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}})";
  EXPECT_EQ(obs.OnData(c1, &out), Verdict::kRewrite);
  EXPECT_EQ(out, R"({"id":"x","choices":[{"index":0,"delta":{"content":"a"}}]})");
  const std::string c2 =
      R"({"usage": {"prompt_tokens":5,"completion_tokens":2,"total_tokens":7} , "id":"x","choices":[{"index":0,"delta":{"content":"b"}}]})";
  EXPECT_EQ(obs.OnData(c2, &out), Verdict::kRewrite);
  EXPECT_EQ(out, R"({"id":"x","choices":[{"index":0,"delta":{"content":"b"}}]})");
  const std::string c3 =
      R"({"id":"x","usage":null,"choices":[{"index":0,"delta":{"content":"c"}}]})";
  EXPECT_EQ(obs.OnData(c3, &out), Verdict::kForward);
  const std::string last =
      R"({"id":"x","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8,"prompt_tokens_details":{"cached_tokens":4}}})";
  EXPECT_EQ(obs.OnData(last, &out), Verdict::kDrop);
  ResponseInfo info = obs.Finish();
  EXPECT_EQ(info.usage.output_tokens, 3);
  EXPECT_EQ(info.usage.total_tokens, 8);
  EXPECT_EQ(info.usage.cached_tokens, 4);

  // Without the option nothing is touched.
  StreamObserver plain(Operation::kChat, {});
  EXPECT_EQ(plain.OnData(c1, &out), Verdict::kForward);
  EXPECT_EQ(plain.OnData(last, &out), Verdict::kForward);
}

// A bad count in an earlier usage chunk stays named though the last chunk's good counts win.
TEST(OpenAiStream, UsageThatIsNotTokenCountsIsDroppedAndStaysNamed) {
  StreamObserver obs(Operation::kChat, {});
  std::string out;
  EXPECT_EQ(
      obs.OnData(R"({"id":"x","choices":[],"usage":{"prompt_tokens":-5,"total_tokens":-1}})", &out),
      Verdict::kForward);
  ResponseInfo first = obs.Finish();
  EXPECT_FALSE(first.usage.input_tokens.has_value());
  EXPECT_EQ(first.usage.invalid, "prompt_tokens,total_tokens");
  obs.OnData(R"({"id":"x","choices":[],"usage":{"prompt_tokens":5,"total_tokens":6}})", &out);
  ResponseInfo info = obs.Finish();
  EXPECT_EQ(info.usage.input_tokens, 5);
  EXPECT_EQ(info.usage.total_tokens, 6);
  EXPECT_EQ(info.usage.invalid, "prompt_tokens,total_tokens");
}

// Without token detail (no logprobs), the event's content stands in for it: its pieces are
// counted, and kept when content capture is on.
TEST(OpenAiStream, ContentStandsInForTokenDetail) {
  StreamObserver::Options opt;
  opt.capture.max_length = 4;
  StreamObserver obs(Operation::kChat, opt);
  std::string out;
  obs.OnData(R"({"id":"x","choices":[{"index":0,"delta":{"content":"Hello"}},)"
             R"({"index":1,"delta":{"content":"Hi"}}]})",
             &out);
  EXPECT_TRUE(obs.last_tokens().texts.empty());
  EXPECT_EQ(obs.last_tokens().content, (std::vector<std::string>{"Hell", "Hi"}));
  EXPECT_EQ(obs.last_tokens().content_pieces, 2);
  obs.OnData(R"({"id":"x","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})", &out);
  EXPECT_TRUE(obs.last_tokens().content.empty());  // cleared per event
  EXPECT_EQ(obs.last_tokens().content_pieces, 0);

  opt.capture.capture_content = false;
  StreamObserver off(Operation::kChat, opt);
  off.OnData(R"({"id":"x","choices":[{"index":0,"delta":{"content":"Hello"}}]})", &out);
  EXPECT_TRUE(off.last_tokens().content.empty());
  EXPECT_EQ(off.last_tokens().content_pieces, 1);
}

TEST(OpenAiStream, StripInjectedLogprobsKeepsOtherBytes) {
  StreamObserver::Options opt;
  opt.strip_injected_logprobs = true;
  StreamObserver obs(Operation::kChat, opt);
  std::string out;
  const std::string chunk =
      R"({"id":"x","choices":[{"index":0,"delta":{"content":"Hi"},"logprobs":{"content":[{"token":"Hi","logprob":-0.25,"bytes":[72,105],"top_logprobs":[]}]},"finish_reason":null,"token_ids":[9906]}]})";
  ASSERT_EQ(obs.OnData(chunk, &out), Verdict::kRewrite);
  EXPECT_EQ(
      out,
      R"({"id":"x","choices":[{"index":0,"delta":{"content":"Hi"},"logprobs":null,"finish_reason":null,"token_ids":[9906]}]})");
  ASSERT_EQ(obs.last_tokens().texts, std::vector<std::string>{"Hi"});
  ASSERT_EQ(obs.last_tokens().logprobs.size(), 1u);
  EXPECT_DOUBLE_EQ(obs.last_tokens().logprobs[0], -0.25);
  EXPECT_EQ(obs.last_tokens().ids, std::vector<std::int64_t>{9906});
  // Already null: unchanged.
  EXPECT_EQ(obs.OnData(R"({"id":"x","choices":[{"index":0,"delta":{},"logprobs":null}]})", &out),
            Verdict::kForward);
  EXPECT_TRUE(obs.last_tokens().texts.empty());  // cleared per event

  // Completions shape.
  StreamObserver comp(Operation::kTextCompletion, opt);
  const std::string cchunk =
      R"({"id":"c","choices":[{"index":0,"text":" a","logprobs":{"text_offset":[0],"token_logprobs":[-1.5],"tokens":[" a"],"top_logprobs":[{" a":-1.5}]},"finish_reason":null}]})";
  ASSERT_EQ(comp.OnData(cchunk, &out), Verdict::kRewrite);
  EXPECT_EQ(
      out,
      R"({"id":"c","choices":[{"index":0,"text":" a","logprobs":null,"finish_reason":null}]})");
  EXPECT_EQ(comp.last_tokens().texts, std::vector<std::string>{" a"});
  EXPECT_DOUBLE_EQ(comp.last_tokens().logprobs.at(0), -1.5);

  // Both rewrites in one event.
  StreamObserver::Options both;
  both.strip_injected_logprobs = true;
  both.drop_injected_usage = true;
  StreamObserver b(Operation::kChat, both);
  ASSERT_EQ(
      b.OnData(
          R"({"usage":{"total_tokens":1},"choices":[{"index":0,"delta":{"content":"x"},"logprobs":{"content":[]}}]})",
          &out),
      Verdict::kRewrite);
  EXPECT_EQ(out, R"({"choices":[{"index":0,"delta":{"content":"x"},"logprobs":null}]})");
}

TEST(OpenAiStream, ToolCallsWithoutIndexAndErrorEvent) {
  StreamObserver obs(Operation::kChat, {});
  std::string out;
  obs.OnData(
      R"({"choices":[{"index":0,"delta":{"tool_calls":[{"id":"a","function":{"name":"f","arguments":"{"}}]}}]})",
      &out);
  obs.OnData(R"({"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"}"}}]}}]})",
             &out);
  obs.OnData(
      R"({"choices":[{"index":0,"delta":{"tool_calls":[{"id":"b","function":{"name":"g","arguments":"[]"}}]}}]})",
      &out);
  obs.OnData(R"({"error":{"message":"boom","type":"InternalServerError","code":500}})", &out);
  ResponseInfo info = obs.Finish();
  ASSERT_EQ(info.tool_calls.at(0).size(), 2u);
  EXPECT_EQ(info.tool_calls[0][0].arguments, "{}");
  EXPECT_EQ(info.tool_calls[0][1].name, "g");
  EXPECT_EQ(info.error_type, "InternalServerError");
  EXPECT_EQ(info.error_message, "boom");
}

TEST(OpenAiStream, GarbageEventsNeverCrash) {
  StreamObserver::Options opt;
  opt.drop_injected_usage = true;
  opt.strip_injected_logprobs = true;
  StreamObserver obs(Operation::kChat, opt);
  const std::vector<std::string> garbage = {
      "",
      "{",
      "[DONE",
      "null",
      "[]",
      R"({"choices":"no"})",
      R"({"choices":[1,"a",null,{"index":-1},{"index":1e300},{"index":99999999}]})",
      R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":1000000,"function":{"name":"x"}}]}}]})",
      R"({"choices":[{"index":0,"delta":{"content":5,"tool_calls":{"a":1}}}],"usage":"lots"})",
      R"({"usage":{"prompt_tokens":"5","completion_tokens":1e400}})",
      "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\xff\xfe\"}}]}",
      std::string(5000, '[') + std::string(5000, ']'),
  };
  std::string out;
  for (const auto& g : garbage) {
    const Verdict v = obs.OnData(g, &out);
    EXPECT_NE(v, Verdict::kDrop) << g.substr(0, 80);
  }
  ResponseInfo info = obs.Finish();
  EXPECT_FALSE(info.parse_error.empty());
  ASSERT_FALSE(info.tool_calls.empty());
  EXPECT_TRUE(info.tool_calls[0].empty());  // tool-call index 1000000 ignored
  if (!info.output_messages_json.empty()) {
    simdjson::dom::parser parser;
    simdjson::dom::element root;
    EXPECT_EQ(parser.parse(info.output_messages_json).get(root), simdjson::SUCCESS);
  }
}

TEST(OpenAiStream, AccumulationIsBoundedByMaxLength) {
  StreamObserver::Options opt;
  opt.capture.max_length = 5;
  StreamObserver obs(Operation::kChat, opt);
  std::string out;
  for (int i = 0; i < 4; ++i) {
    obs.OnData(R"({"choices":[{"index":0,"delta":{"content":"äb"}}]})", &out);
  }
  EXPECT_EQ(obs.delta_count(), 4);
  ResponseInfo info = obs.Finish();
  simdjson::dom::parser parser;
  auto msgs = Messages(parser, info.output_messages_json);
  EXPECT_EQ(Str(msgs.at(0)["parts"].at(0), "content"), "äbäbä");
}

TEST(OpenAiStream, NoCaptureKeepsNamesNotContent) {
  StreamObserver::Options opt;
  opt.capture.capture_content = false;
  StreamObserver obs(Operation::kChat, opt);
  for (const auto& ev : FixtureEvents("vllm-sse-chat-toolcall.txt")) {
    std::string out;
    obs.OnData(ev, &out);
  }
  ResponseInfo info = obs.Finish();
  EXPECT_TRUE(info.output_messages_json.empty());
  ASSERT_EQ(info.tool_calls.at(0).size(), 1u);
  EXPECT_EQ(info.tool_calls[0][0].name, "run_command");
  EXPECT_TRUE(info.tool_calls[0][0].arguments.empty());
}

}  // namespace
}  // namespace infertel::openai
