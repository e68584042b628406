#include <gtest/gtest.h>
#include <simdjson.h>

#include <string>

#include "common/json_reading.h"
#include "openai/openai.h"

namespace infertel::openai {
namespace {

using testing::ParseJson;
using testing::Str;

TEST(OpenAiRequest, OperationForPath) {
  EXPECT_EQ(OperationForPath("POST", "/v1/chat/completions"), Operation::kChat);
  EXPECT_EQ(OperationForPath("POST", "/v1/chat/completions?x=1"), Operation::kChat);
  EXPECT_EQ(OperationForPath("GET", "/v1/chat/completions"), Operation::kNone);
  EXPECT_EQ(OperationForPath("POST", "/v1/completions"), Operation::kTextCompletion);
  EXPECT_EQ(OperationForPath("POST", "/v1/embeddings"), Operation::kEmbeddings);
  for (const char* p : {"/v1/rerank", "/rerank", "/v2/rerank", "/v1/score", "/score"}) {
    EXPECT_EQ(OperationForPath("POST", p), Operation::kRerank) << p;
  }
  EXPECT_EQ(OperationForPath("POST", "/v1/models"), Operation::kNone);
  EXPECT_EQ(OperationForPath("POST", "/v1/chat/completionsX"), Operation::kNone);
  EXPECT_EQ(OperationName(Operation::kTextCompletion), "text_completion");
  EXPECT_EQ(OperationName(Operation::kRerank), "rerank");
  EXPECT_EQ(SpanKindFor(Operation::kChat), "LLM");
  EXPECT_EQ(SpanKindFor(Operation::kEmbeddings), "EMBEDDING");
  EXPECT_EQ(SpanKindFor(Operation::kRerank), "RERANKER");
}

TEST(OpenAiRequest, ChatFieldsAndMessages) {
  const std::string body = R"({
    "model": "llama", "n": 2, "temperature": 0.5, "top_p": 1, "top_k": 40,
    "max_completion_tokens": 64, "stream": true, "user": "u-1", "api_key": "sk-secret",
    "stream_options": {"include_usage": false, "continuous_usage_stats": true},
    "logprobs": true, "tools": [{"type":"function","function":{"name":"f"}}],
    "request_id": "req-9",
    "messages": [
      {"role": "system", "content": "Be brief."},
      {"role": "user", "name": "bob", "content": [
        {"type": "text", "text": "What is in\nthis image?"},
        {"type": "image_url", "image_url": {"url": "https://u:p@example.com/a.png?sig=SECRET"}},
        {"type": "input_audio", "input_audio": {"data": "AAEC", "format": "wav"}}]},
      {"role": "assistant", "content": null, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "look", "arguments": "{\"x\":1}"}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "a cat"}
    ]})";
  CaptureOptions capture;
  RequestInfo info = ParseRequest(Operation::kChat, body, capture);
  ASSERT_TRUE(info.parsed) << info.parse_error;
  EXPECT_TRUE(info.parse_error.empty()) << info.parse_error;
  EXPECT_EQ(info.model, "llama");
  EXPECT_EQ(info.n, 2);
  EXPECT_DOUBLE_EQ(info.temperature.value(), 0.5);
  EXPECT_DOUBLE_EQ(info.top_p.value(), 1.0);
  EXPECT_EQ(info.top_k, 40);
  EXPECT_EQ(info.max_tokens, 64);
  EXPECT_TRUE(info.stream);
  EXPECT_EQ(info.user, "u-1");
  EXPECT_TRUE(info.has_stream_options);
  EXPECT_FALSE(info.include_usage);
  EXPECT_TRUE(info.continuous_usage_stats);
  EXPECT_TRUE(info.logprobs);
  EXPECT_TRUE(info.has_tools);
  EXPECT_EQ(info.request_id, "req-9");
  EXPECT_EQ(info.input_messages_json.find("sk-secret"), std::string::npos);
  EXPECT_EQ(info.input_messages_json.find("image_url"), std::string::npos);  // multimodal off
  EXPECT_EQ(info.input_messages_json.find("AAEC"), std::string::npos);

  simdjson::dom::parser parser;
  auto msgs = ParseJson(parser, info.input_messages_json);
  ASSERT_EQ(msgs.get_array().size(), 4u);
  EXPECT_EQ(Str(msgs.at(0)["role"]), "system");
  EXPECT_EQ(Str(msgs.at(0)["parts"].at(0)["content"]), "Be brief.");
  EXPECT_EQ(Str(msgs.at(1)["name"]), "bob");
  // Multimodal off: image and audio are placeholders that say only which modality was there.
  ASSERT_EQ(msgs.at(1)["parts"].get_array().size(), 3u);
  EXPECT_EQ(Str(msgs.at(1)["parts"].at(0)["content"]), "What is in\nthis image?");
  EXPECT_EQ(Str(msgs.at(1)["parts"].at(1)["type"]), "media");
  EXPECT_EQ(Str(msgs.at(1)["parts"].at(1)["modality"]), "image");
  EXPECT_EQ(Str(msgs.at(1)["parts"].at(2)["type"]), "media");
  EXPECT_EQ(Str(msgs.at(1)["parts"].at(2)["modality"]), "audio");
  EXPECT_EQ(info.input_messages_json.find("example.com"), std::string::npos);
  EXPECT_EQ(info.input_messages_json.find("audio/wav"), std::string::npos);
  EXPECT_EQ(Str(msgs.at(2)["parts"].at(0)["type"]), "tool_call");
  EXPECT_EQ(Str(msgs.at(2)["parts"].at(0)["id"]), "call_1");
  EXPECT_EQ(Str(msgs.at(2)["parts"].at(0)["name"]), "look");
  EXPECT_EQ(Str(msgs.at(2)["parts"].at(0)["arguments"]), "{\"x\":1}");
  EXPECT_EQ(Str(msgs.at(3)["role"]), "tool");
  EXPECT_EQ(Str(msgs.at(3)["parts"].at(0)["type"]), "tool_call_response");
  EXPECT_EQ(Str(msgs.at(3)["parts"].at(0)["id"]), "call_1");
  EXPECT_EQ(Str(msgs.at(3)["parts"].at(0)["response"]), "a cat");

  // With multimodal capture: references, never the data, never credentials in URLs.
  capture.capture_multimodal = true;
  info = ParseRequest(Operation::kChat, body, capture);
  auto mm = ParseJson(parser, info.input_messages_json);
  auto parts = mm.at(1)["parts"];
  ASSERT_EQ(parts.get_array().size(), 3u);
  EXPECT_EQ(Str(parts.at(1)["type"]), "uri");
  EXPECT_EQ(Str(parts.at(1)["modality"]), "image");
  EXPECT_EQ(Str(parts.at(1)["uri"]), "https://example.com/a.png");
  EXPECT_EQ(Str(parts.at(2)["type"]), "blob");
  EXPECT_EQ(Str(parts.at(2)["modality"]), "audio");
  EXPECT_EQ(Str(parts.at(2)["mime_type"]), "audio/wav");
  int64_t size = 0;
  ASSERT_EQ(parts.at(2)["size_bytes"].get_int64().get(size), simdjson::SUCCESS);
  EXPECT_EQ(size, 3);  // "AAEC" decodes to 00 01 02
  // SHA-256 of bytes 00 01 02.
  EXPECT_EQ(Str(parts.at(2)["hash"]),
            "sha256:ae4b3280e56e2faf83f414a6e3dabe9d5fbe18976544c05fed121accb85b53fc");
  EXPECT_EQ(info.input_messages_json.find("SECRET"), std::string::npos);
  EXPECT_EQ(info.input_messages_json.find("u:p@"), std::string::npos);
}

TEST(OpenAiRequest, DataUrlImageIsAReference) {
  CaptureOptions capture;
  capture.capture_multimodal = true;
  const std::string body =
      R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,aGVsbG8="}}]}]})";
  RequestInfo info = ParseRequest(Operation::kChat, body, capture);
  simdjson::dom::parser parser;
  auto part = ParseJson(parser, info.input_messages_json).at(0)["parts"].at(0);
  EXPECT_EQ(Str(part["type"]), "blob");
  EXPECT_EQ(Str(part["mime_type"]), "image/png");
  int64_t size = 0;
  ASSERT_EQ(part["size_bytes"].get_int64().get(size), simdjson::SUCCESS);
  EXPECT_EQ(size, 5);  // "hello"
  EXPECT_EQ(Str(part["hash"]),
            "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
  EXPECT_EQ(info.input_messages_json.find("aGVsbG8"), std::string::npos);
}

TEST(OpenAiRequest, MediaThatIsNotAUrlIsNeverRecordedRaw) {
  CaptureOptions capture;
  capture.capture_multimodal = true;
  simdjson::dom::parser parser;
  // Some clients put bare base64 in the url field; it contains '/' and must not become a uri.
  const std::string bare =
      R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"iVBORw0K/GgoAAAA+NSUhEUg"}}]}]})";
  RequestInfo info = ParseRequest(Operation::kChat, bare, capture);
  auto part = ParseJson(parser, info.input_messages_json).at(0)["parts"].at(0);
  EXPECT_EQ(Str(part["type"]), "blob");
  EXPECT_EQ(Str(part["modality"]), "image");
  EXPECT_EQ(info.input_messages_json.find("iVBORw0K"), std::string::npos);
  EXPECT_EQ(info.input_messages_json.find("GgoAAAA"), std::string::npos);

  // A percent-encoded (non-base64) data URL is hashed over its decoded bytes: "a b".
  const std::string pct =
      R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:text/plain,a%20b"}}]}]})";
  info = ParseRequest(Operation::kChat, pct, capture);
  part = ParseJson(parser, info.input_messages_json).at(0)["parts"].at(0);
  EXPECT_EQ(Str(part["mime_type"]), "text/plain");
  int64_t size = 0;
  ASSERT_EQ(part["size_bytes"].get_int64().get(size), simdjson::SUCCESS);
  EXPECT_EQ(size, 3);
  EXPECT_EQ(Str(part["hash"]),
            "sha256:c8687a08aa5d6ed2044328fa6a697ab8e96dc34291e8c2034ae8c38e6fcc6d65");

  // Other URL schemes are references too, stripped of credentials and query.
  const std::string gs =
      R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":"s3://k:s@bucket/x.png?X-Amz-Signature=abc"}]}]})";
  info = ParseRequest(Operation::kChat, gs, capture);
  part = ParseJson(parser, info.input_messages_json).at(0)["parts"].at(0);
  EXPECT_EQ(Str(part["type"]), "uri");
  EXPECT_EQ(Str(part["uri"]), "s3://bucket/x.png");
}

TEST(OpenAiRequest, MediaPlaceholderWhenMultimodalOff) {
  CaptureOptions capture;  // capture_multimodal defaults to off
  const std::string body =
      R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,aGVsbG8="}},{"type":"video_url","video_url":{"url":"https://v.example/a.mp4"}}]}]})";
  RequestInfo info = ParseRequest(Operation::kChat, body, capture);
  simdjson::dom::parser parser;
  auto parts = ParseJson(parser, info.input_messages_json).at(0)["parts"];
  ASSERT_EQ(parts.get_array().size(), 2u);
  EXPECT_EQ(Str(parts.at(0)["type"]), "media");
  EXPECT_EQ(Str(parts.at(0)["modality"]), "image");
  EXPECT_EQ(Str(parts.at(1)["modality"]), "video");
  for (const char* leak : {"aGVsbG8", "image/png", "v.example", "size_bytes", "hash"}) {
    EXPECT_EQ(info.input_messages_json.find(leak), std::string::npos) << leak;
  }
}

TEST(OpenAiRequest, CompletionsEmbeddingsRerank) {
  CaptureOptions capture;
  simdjson::dom::parser parser;

  RequestInfo c = ParseRequest(
      Operation::kTextCompletion,
      R"({"model":"m","prompt":["one","two"],"logprobs":0,"max_tokens":7,"rid":"r1","sampling_params":{"stream_interval":4}})",
      capture);
  EXPECT_TRUE(c.logprobs);  // an integer, even 0
  EXPECT_EQ(c.max_tokens, 7);
  EXPECT_EQ(c.request_id, "r1");
  EXPECT_EQ(c.stream_interval, 4);
  auto cm = ParseJson(parser, c.input_messages_json);
  ASSERT_EQ(cm.get_array().size(), 1u);
  EXPECT_EQ(Str(cm.at(0)["role"]), "user");
  EXPECT_EQ(Str(cm.at(0)["parts"].at(1)["content"]), "two");

  RequestInfo tok =
      ParseRequest(Operation::kTextCompletion,
                   R"({"prompt":[[1,2,3]],"logprobs":null,"stream_interval":2})", capture);
  EXPECT_TRUE(tok.parsed);
  EXPECT_FALSE(tok.logprobs);
  EXPECT_EQ(tok.stream_interval, 2);
  EXPECT_TRUE(tok.input_messages_json.empty());  // token ids are not content

  RequestInfo e =
      ParseRequest(Operation::kEmbeddings, R"({"model":"e","input":["a","b",[1,2]]})", capture);
  auto em = ParseJson(parser, e.input_messages_json);
  ASSERT_EQ(em.get_array().size(), 2u);
  EXPECT_EQ(Str(em.at(1)["parts"].at(0)["content"]), "b");

  RequestInfo r =
      ParseRequest(Operation::kRerank,
                   R"({"model":"r","query":"q?","documents":["d1",{"text":"d2"}]})", capture);
  auto rm = ParseJson(parser, r.input_messages_json);
  ASSERT_EQ(rm.get_array().size(), 1u);
  ASSERT_EQ(rm.at(0)["parts"].get_array().size(), 3u);
  EXPECT_EQ(Str(rm.at(0)["parts"].at(0)["content"]), "q?");
  EXPECT_EQ(Str(rm.at(0)["parts"].at(2)["content"]), "d2");

  RequestInfo s = ParseRequest(Operation::kRerank, R"({"text_1":"a","text_2":["b","c"]})", capture);
  EXPECT_EQ(ParseJson(parser, s.input_messages_json).at(0)["parts"].get_array().size(), 3u);

  capture.capture_content = false;
  EXPECT_TRUE(
      ParseRequest(Operation::kRerank, R"({"query":"q"})", capture).input_messages_json.empty());
}

TEST(OpenAiRequest, TruncationAtMultiByteBoundary) {
  // "é" is 2 bytes, "😀" 4 bytes.
  EXPECT_EQ(TruncateUtf8("héllo", 2), "hé");
  EXPECT_EQ(TruncateUtf8("h😀x", 2), "h😀");
  EXPECT_EQ(TruncateUtf8("h😀x", 1), "h");
  EXPECT_EQ(TruncateUtf8("abc", 3), "abc");
  EXPECT_EQ(TruncateUtf8("abc", 0), "");
  EXPECT_EQ(TruncateUtf8("", 5), "");

  CaptureOptions capture;
  capture.max_length = 3;
  RequestInfo info = ParseRequest(
      Operation::kChat, R"({"messages":[{"role":"user","content":"日本語です"}]})", capture);
  simdjson::dom::parser parser;
  EXPECT_EQ(Str(ParseJson(parser, info.input_messages_json).at(0)["parts"].at(0)["content"]),
            "日本語");
}

TEST(OpenAiRequest, EscapingProducesValidJson) {
  CaptureOptions capture;
  const std::string body =
      "{\"messages\":[{\"role\":\"user\",\"content\":\"q\\\"uote\\\\ \\u0001 \\t tab\"}]}";
  RequestInfo info = ParseRequest(Operation::kChat, body, capture);
  simdjson::dom::parser parser;
  EXPECT_EQ(Str(ParseJson(parser, info.input_messages_json).at(0)["parts"].at(0)["content"]),
            "q\"uote\\ \x01 \t tab");
}

TEST(OpenAiRequest, MalformedCorpusNeverCrashes) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const std::string deep_obj = "{\"a\":" + std::string(5000, '[') + std::string(5000, ']') + "}";
  const std::vector<std::string> corpus = {
      "",
      " ",
      "{",
      R"({"model": "x")",
      R"({"model": "x",})",
      "[]",
      "42",
      "\"str\"",
      "null",
      deep,
      deep_obj,
      "{\"model\":\"\xff\xfe\"}",       // invalid UTF-8
      "{\"model\":\"a\xed\xa0\x80\"}",  // encoded surrogate
      R"({"n":1e999})",                 // out of range number
      R"({"n":123456789012345678901234567890})",
      std::string("{\"model\":\"a\0b\"}", 14),
  };
  for (const auto& body : corpus) {
    for (Operation op : {Operation::kChat, Operation::kTextCompletion, Operation::kEmbeddings,
                         Operation::kRerank}) {
      RequestInfo info = ParseRequest(op, body, CaptureOptions{});
      EXPECT_FALSE(info.parsed) << body.substr(0, 60);
      EXPECT_FALSE(info.parse_error.empty());
      EXPECT_FALSE(info.model.has_value());
      EXPECT_FALSE(RewriteRequest(info, body, {true, true}).has_value());
    }
  }
}

TEST(OpenAiRequest, WrongTypesAreIgnoredWithAReason) {
  const std::vector<std::string> corpus = {
      R"({"model":5,"n":"2","temperature":"hot","top_k":1.5,"max_tokens":[],"stream":"yes",
          "user":{},"stream_options":"x","logprobs":"y","tools":{},"request_id":7,
          "messages":"hi"})",
      R"({"messages":[1,null,"x",{"role":5},{"role":"user","content":{"a":1}},
          {"role":"user","content":[1,{"type":7},{"type":"text","text":null},
           {"type":"image_url","image_url":5}]},
          {"role":"assistant","tool_calls":[1,{"function":"x"},{"function":{"name":null}}]},
          {"role":"tool","content":[{"text":5}]}]})",
      R"({"prompt":{"a":1},"input":5,"query":[1,2],"documents":"d"})",
      R"({"n":9223372036854775807,"top_k":-9223372036854775808,"temperature":1e308,
          "max_tokens":18446744073709551615})",
  };
  simdjson::dom::parser parser;
  for (const auto& body : corpus) {
    for (Operation op : {Operation::kChat, Operation::kTextCompletion, Operation::kEmbeddings,
                         Operation::kRerank}) {
      RequestInfo info = ParseRequest(op, body, CaptureOptions{});
      EXPECT_TRUE(info.parsed) << body;
      if (!info.input_messages_json.empty()) ParseJson(parser, info.input_messages_json);
    }
  }
  RequestInfo first = ParseRequest(Operation::kChat, corpus[0], CaptureOptions{});
  EXPECT_FALSE(first.model || first.n || first.temperature || first.top_k || first.max_tokens ||
               first.user || first.request_id);
  EXPECT_FALSE(first.stream || first.has_stream_options || first.logprobs || first.has_tools);
  EXPECT_EQ(first.parse_error, "ignored field 'model': not a string");

  RequestInfo big = ParseRequest(Operation::kChat, corpus[3], CaptureOptions{});
  EXPECT_EQ(big.n, INT64_MAX);
  EXPECT_EQ(big.top_k, INT64_MIN);
  EXPECT_FALSE(big.max_tokens.has_value());  // above int64
}

TEST(OpenAiRequest, LastDuplicateKeyWinsLikeTheEngine) {
  RequestInfo info = ParseRequest(Operation::kChat, R"({"model":"a","model":"b","stream":true,
      "stream_options":{"include_usage":true},"stream_options":{"include_usage":false}})",
                                  CaptureOptions{});
  EXPECT_EQ(info.model, "b");
  EXPECT_FALSE(info.include_usage);
}

// Reads the engine's view of a body: the last stream_options / logprobs member.
struct EngineView {
  bool has_stream_options = false;
  bool include_usage = false;
  std::optional<bool> continuous;
  std::string other;
  std::string logprobs;
};
EngineView Engine(simdjson::dom::parser& parser, const std::string& body) {
  EngineView v;
  simdjson::dom::object root;
  EXPECT_EQ(parser.parse(body).get_object().get(root), simdjson::SUCCESS) << body;
  for (auto field : root) {
    if (field.key == "stream_options") {
      v = EngineView{true, false, std::nullopt, "", v.logprobs};
      simdjson::dom::object so;
      EXPECT_EQ(field.value.get_object().get(so), simdjson::SUCCESS);
      for (auto f : so) {
        bool b = false;
        if (f.key == "include_usage" && !f.value.get_bool().get(b)) v.include_usage = b;
        if (f.key == "continuous_usage_stats" && !f.value.get_bool().get(b)) v.continuous = b;
        if (f.key == "other") v.other = simdjson::minify(f.value);
      }
    }
    if (field.key == "logprobs") v.logprobs = simdjson::minify(field.value);
  }
  return v;
}

TEST(OpenAiRequest, RewriteAddsUsageAndLastStreamOptionsWins) {
  simdjson::dom::parser parser;
  RewriteOptions usage{true, false};

  const std::string plain = R"({"model":"m","stream":true,"messages":[]}  )";
  RequestInfo info = ParseRequest(Operation::kChat, plain, CaptureOptions{});
  auto out = RewriteRequest(info, plain, usage);
  ASSERT_TRUE(out);
  EXPECT_EQ(
      *out,
      R"({"model":"m","stream":true,"messages":[],"stream_options":{"include_usage":true}}  )");

  // The client's other options survive; continuous stats stay off for the client.
  const std::string with =
      R"({"stream":true,"stream_options":{"other":[1,{"a":"b"}],"continuous_usage_stats":true}})";
  info = ParseRequest(Operation::kChat, with, CaptureOptions{});
  out = RewriteRequest(info, with, usage);
  ASSERT_TRUE(out);
  EngineView v = Engine(parser, *out);
  EXPECT_TRUE(v.include_usage);
  EXPECT_EQ(v.continuous, false);
  EXPECT_EQ(v.other, R"([1,{"a":"b"}])");
  EXPECT_EQ(out->substr(0, with.size() - 1), with.substr(0, with.size() - 1));  // prefix kept

  const std::string explicit_false =
      R"({"stream":true,"stream_options":{"include_usage":false,"continuous_usage_stats":false}})";
  info = ParseRequest(Operation::kChat, explicit_false, CaptureOptions{});
  out = RewriteRequest(info, explicit_false, usage);
  ASSERT_TRUE(out);
  v = Engine(parser, *out);
  EXPECT_TRUE(v.include_usage);
  EXPECT_EQ(v.continuous, false);

  // Nothing to do: not streaming, already asked, embeddings, unparsed.
  for (const auto& [op, body] : std::vector<std::pair<Operation, std::string>>{
           {Operation::kChat, R"({"stream":false})"},
           {Operation::kChat, R"({"stream":true,"stream_options":{"include_usage":true}})"},
           {Operation::kEmbeddings, R"({"stream":true})"},
           {Operation::kChat, R"({"stream":true)"}}) {
    info = ParseRequest(op, body, CaptureOptions{});
    EXPECT_FALSE(RewriteRequest(info, body, usage).has_value()) << body;
  }

  const std::string empty = "{}";
  info = ParseRequest(Operation::kChat, empty, CaptureOptions{});
  info.stream = true;  // as if streaming; checks the empty-object splice
  out = RewriteRequest(info, empty, usage);
  ASSERT_TRUE(out);
  EXPECT_EQ(*out, R"({"stream_options":{"include_usage":true}})");
}

TEST(OpenAiRequest, RewriteForcesLogprobs) {
  simdjson::dom::parser parser;
  RewriteOptions lp{false, true};
  const std::string chat = R"({"logprobs":false,"messages":[]})";
  RequestInfo info = ParseRequest(Operation::kChat, chat, CaptureOptions{});
  auto out = RewriteRequest(info, chat, lp);
  ASSERT_TRUE(out);
  EXPECT_EQ(Engine(parser, *out).logprobs, "true");

  const std::string comp = R"({"prompt":"x","stream":true})";
  info = ParseRequest(Operation::kTextCompletion, comp, CaptureOptions{});
  out = RewriteRequest(info, comp, {true, true});
  ASSERT_TRUE(out);
  EngineView v = Engine(parser, *out);
  EXPECT_EQ(v.logprobs, "1");
  EXPECT_TRUE(v.include_usage);

  const std::string asked = R"({"prompt":"x","logprobs":2})";
  info = ParseRequest(Operation::kTextCompletion, asked, CaptureOptions{});
  EXPECT_FALSE(RewriteRequest(info, asked, lp).has_value());
}

}  // namespace
}  // namespace infertel::openai
