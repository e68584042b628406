#include "sim/sim_server.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <chrono>
#include <thread>

namespace infertel::sim {
namespace {

namespace net = boost::asio;
namespace bhttp = boost::beast::http;
using net::ip::tcp;

struct Response {
  int status = 0;
  std::string content_type;
  std::string body;
};

class SimServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SimOptions o;
    o.model = "demo-model";
    o.engine_config.speed = 20.0;
    o.engine_config.seed = 7;
    std::string error;
    server_ = SimServer::Start(o, &error);
    ASSERT_TRUE(server_) << error;
  }

  bhttp::request<bhttp::string_body> MakeRequest(bhttp::verb verb, const std::string& target,
                                                 const std::string& body) {
    bhttp::request<bhttp::string_body> req{verb, target, 11};
    req.set(bhttp::field::host, "127.0.0.1");
    if (!body.empty()) {
      req.set(bhttp::field::content_type, "application/json");
      req.body() = body;
    }
    req.prepare_payload();
    return req;
  }

  Response Do(bhttp::verb verb, const std::string& target, const std::string& body = "",
              const std::string& request_id = "") {
    net::io_context ioc;
    tcp::socket sock(ioc);
    sock.connect({net::ip::make_address("127.0.0.1"), server_->port()});
    auto req = MakeRequest(verb, target, body);
    if (!request_id.empty()) req.set("X-Request-Id", request_id);
    bhttp::write(sock, req);
    boost::beast::flat_buffer buf;
    bhttp::response<bhttp::string_body> res;
    bhttp::read(sock, buf, res);
    return {static_cast<int>(res.result_int()), std::string(res[bhttp::field::content_type]),
            res.body()};
  }
  Response Post(const std::string& target, const std::string& body,
                const std::string& request_id = "") {
    return Do(bhttp::verb::post, target, body, request_id);
  }

  // SSE events ("data: " payloads) of a streamed body.
  static std::vector<std::string> Events(const std::string& body) {
    std::vector<std::string> out;
    std::size_t pos = 0;
    while (pos < body.size()) {
      std::size_t end = body.find("\n\n", pos);
      EXPECT_NE(end, std::string::npos) << "unterminated event";
      if (end == std::string::npos) break;
      std::string ev = body.substr(pos, end - pos);
      EXPECT_EQ(ev.rfind("data: ", 0), 0u) << ev;
      out.push_back(ev.substr(6));
      pos = end + 2;
    }
    return out;
  }

  std::uint64_t StatsField(const char* key) {
    Response r = Do(bhttp::verb::get, "/_sim/stats");
    simdjson::dom::parser p;
    return p.parse(r.body)[key].get_uint64().value();
  }

  simdjson::dom::parser parser_;
  std::unique_ptr<SimServer> server_;
};

TEST_F(SimServerTest, ChatNonStreamingShape) {
  Response r = Post(
      "/v1/chat/completions",
      R"({"model":"demo-model","messages":[{"role":"user","content":"Hello there"}],"max_tokens":12})");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_EQ(r.body.rfind(R"({"id":"chatcmpl-)", 0), 0u) << r.body;
  EXPECT_NE(r.body.find(R"("object":"chat.completion","created":)"), std::string::npos);
  auto doc = parser_.parse(r.body).value();
  EXPECT_EQ(std::string_view(doc["id"]).size(), std::string("chatcmpl-").size() + 16);
  EXPECT_EQ(std::string_view(doc["model"]), "demo-model");
  auto choice = doc["choices"].at(0);
  EXPECT_EQ(int64_t(choice["index"]), 0);
  EXPECT_EQ(std::string_view(choice["message"]["role"]), "assistant");
  EXPECT_FALSE(std::string_view(choice["message"]["content"]).empty());
  std::string_view finish = choice["finish_reason"];
  EXPECT_TRUE(finish == "stop" || finish == "length");
  EXPECT_TRUE(choice["stop_reason"].is_null());
  auto usage = doc["usage"];
  int64_t prompt = usage["prompt_tokens"], completion = usage["completion_tokens"];
  EXPECT_GT(prompt, 0);
  EXPECT_GT(completion, 0);
  EXPECT_LE(completion, 12);
  EXPECT_EQ(int64_t(usage["total_tokens"]), prompt + completion);
  EXPECT_TRUE(usage["prompt_tokens_details"].is_null());
}

TEST_F(SimServerTest, StreamWithIncludeUsageEndsWithUsageChunkThenDone) {
  Response r = Post(
      "/v1/chat/completions",
      R"({"messages":[{"role":"user","content":"Hi"}],"stream":true,"stream_options":{"include_usage":true},"max_tokens":5,"ignore_eos":true})");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "text/event-stream; charset=utf-8");
  auto events = Events(r.body);
  ASSERT_GE(events.size(), 4u);
  EXPECT_EQ(events.back(), "[DONE]");
  auto usage_chunk = parser_.parse(events[events.size() - 2]).value();
  EXPECT_EQ(simdjson::dom::array(usage_chunk["choices"]).size(), 0u);
  EXPECT_EQ(int64_t(usage_chunk["usage"]["completion_tokens"]), 5);
  auto first = parser_.parse(events[0]).value();
  EXPECT_EQ(std::string_view(first["object"]), "chat.completion.chunk");
  EXPECT_EQ(std::string_view(first["choices"].at(0)["delta"]["role"]), "assistant");
  // Content chunks carry no usage; the last content chunk has the finish reason.
  std::string content;
  for (std::size_t i = 1; i + 2 < events.size(); ++i) {
    auto ev = parser_.parse(events[i]).value();
    EXPECT_EQ(ev["usage"].error(), simdjson::NO_SUCH_FIELD);
    content += std::string(std::string_view(ev["choices"].at(0)["delta"]["content"]));
  }
  auto last = parser_.parse(events[events.size() - 3]).value();
  EXPECT_EQ(std::string_view(last["choices"].at(0)["finish_reason"]), "length");
  EXPECT_FALSE(content.empty());
}

TEST_F(SimServerTest, ContinuousUsageIsCumulativePerChoice) {
  Response r = Post(
      "/v1/completions",
      R"({"prompt":"Once upon","stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true},"max_tokens":4,"ignore_eos":true})");
  ASSERT_EQ(r.status, 200);
  auto events = Events(r.body);
  int64_t expected = 1;
  for (std::size_t i = 0; i + 2 < events.size(); ++i) {
    auto ev = parser_.parse(events[i]).value();
    EXPECT_EQ(std::string_view(ev["object"]), "text_completion");
    EXPECT_EQ(int64_t(ev["usage"]["completion_tokens"]), expected++);
  }
  EXPECT_EQ(expected, 5);
}

TEST_F(SimServerTest, RequestIdHeaderBecomesResponseId) {
  Response chat = Post("/v1/chat/completions",
                       R"({"messages":[{"role":"user","content":"x"}],"max_tokens":2})", "abc123");
  EXPECT_EQ(std::string_view(parser_.parse(chat.body)["id"]), "chatcmpl-abc123");
  Response cmpl = Post("/v1/completions", R"({"prompt":"x","max_tokens":2})", "abc123");
  EXPECT_EQ(std::string_view(parser_.parse(cmpl.body)["id"]), "cmpl-abc123");
  Response body_id = Post("/v1/completions", R"({"prompt":"x","max_tokens":2,"request_id":"b7"})");
  EXPECT_EQ(std::string_view(parser_.parse(body_id.body)["id"]), "cmpl-b7");
}

TEST_F(SimServerTest, StreamOptionsWithoutStreamIs400InVllmShape) {
  Response r = Post(
      "/v1/chat/completions",
      R"({"messages":[{"role":"user","content":"x"}],"stream_options":{"include_usage":true}})");
  EXPECT_EQ(r.status, 400);
  auto err = parser_.parse(r.body)["error"];
  EXPECT_NE(std::string_view(err["message"]).find("stream=True"), std::string_view::npos);
  EXPECT_EQ(int64_t(err["code"]), 400);
  EXPECT_FALSE(std::string_view(err["type"]).empty());
  EXPECT_EQ(StatsField("requests_received"), 0u);
}

TEST_F(SimServerTest, BadInputsGetVllmStatusCodes) {
  EXPECT_EQ(Post("/v1/chat/completions", "{not json").status, 400);
  EXPECT_EQ(Post("/v1/chat/completions", R"({"model":"demo-model"})").status, 400);
  EXPECT_EQ(Post("/v1/completions", R"({"model":"demo-model"})").status, 400);
  Response unknown = Post("/v1/chat/completions",
                          R"({"model":"other","messages":[{"role":"user","content":"x"}]})");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(std::string_view(parser_.parse(unknown.body)["error"]["message"]),
            "The model `other` does not exist.");
  Response wrong_method = Do(bhttp::verb::get, "/v1/chat/completions");
  EXPECT_EQ(wrong_method.status, 405);
  Response nowhere = Do(bhttp::verb::get, "/nowhere");
  EXPECT_EQ(nowhere.status, 404);
  EXPECT_EQ(nowhere.body, R"({"detail":"Not Found"})");
}

TEST_F(SimServerTest, OperationalEndpoints) {
  Response health = Do(bhttp::verb::get, "/health");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body, "");
  EXPECT_EQ(Do(bhttp::verb::get, "/version").body, R"({"version":"0.11.0"})");
  Response models = Do(bhttp::verb::get, "/v1/models");
  auto m = parser_.parse(models.body)["data"].at(0);
  EXPECT_EQ(std::string_view(m["id"]), "demo-model");
  EXPECT_EQ(std::string_view(m["owned_by"]), "vllm");
  EXPECT_EQ(int64_t(m["max_model_len"]), 8192);
}

TEST_F(SimServerTest, ToolsGiveToolCalls) {
  const std::string tools =
      R"("tools":[{"type":"function","function":{"name":"run_command","parameters":{"type":"object","properties":{"command":{"type":"string"}}}}}])";
  Response r = Post(
      "/v1/chat/completions",
      R"({"messages":[{"role":"user","content":"list files"}],"max_tokens":50,)" + tools + "}");
  ASSERT_EQ(r.status, 200) << r.body;
  auto choice = parser_.parse(r.body)["choices"].at(0);
  EXPECT_EQ(std::string_view(choice["finish_reason"]), "tool_calls");
  auto call = choice["message"]["tool_calls"].at(0);
  std::string_view id = call["id"];
  EXPECT_EQ(id.rfind("chatcmpl-tool-", 0), 0u);
  EXPECT_EQ(id.size(), 14u + 32u);
  EXPECT_EQ(std::string_view(call["function"]["name"]), "run_command");
  simdjson::dom::parser args_parser;
  auto args = args_parser.parse(std::string(std::string_view(call["function"]["arguments"])));
  EXPECT_EQ(args["command"].error(), simdjson::SUCCESS);

  Response s = Post(
      "/v1/chat/completions",
      R"({"messages":[{"role":"user","content":"list files"}],"max_tokens":50,"stream":true,)" +
          tools + "}");
  auto events = Events(s.body);
  ASSERT_GE(events.size(), 4u);
  auto header = parser_.parse(events[1])["choices"].at(0)["delta"]["tool_calls"].at(0);
  EXPECT_EQ(std::string_view(header["type"]), "function");
  EXPECT_EQ(std::string_view(header["function"]["name"]), "run_command");
  EXPECT_EQ(header["function"]["arguments"].error(), simdjson::NO_SUCH_FIELD);
  auto final_choice = parser_.parse(events[events.size() - 2])["choices"].at(0);
  EXPECT_EQ(std::string_view(final_choice["finish_reason"]), "tool_calls");
}

TEST_F(SimServerTest, NGivesSeveralChoices) {
  Response r = Post(
      "/v1/chat/completions",
      R"({"messages":[{"role":"user","content":"two please"}],"n":2,"max_tokens":6,"ignore_eos":true})");
  auto doc = parser_.parse(r.body).value();
  simdjson::dom::array choices = doc["choices"];
  ASSERT_EQ(choices.size(), 2u);
  EXPECT_EQ(int64_t(choices.at(0)["index"]), 0);
  EXPECT_EQ(int64_t(choices.at(1)["index"]), 1);
  EXPECT_EQ(int64_t(doc["usage"]["completion_tokens"]), 12);
}

TEST_F(SimServerTest, StopStringSetsStopReason) {
  Response probe =
      Post("/v1/completions", R"({"prompt":"a b c","max_tokens":10,"ignore_eos":true,"seed":3})");
  std::string full(std::string_view(parser_.parse(probe.body)["choices"].at(0)["text"]));
  auto sp = full.find(' ', 1);
  ASSERT_NE(sp, std::string::npos);
  std::string stop = full.substr(sp, full.find(' ', sp + 1) - sp);
  Response r = Post("/v1/completions",
                    R"({"prompt":"a b c","max_tokens":10,"ignore_eos":true,"seed":3,"stop":[")" +
                        stop + R"("]})");
  auto choice = parser_.parse(r.body)["choices"].at(0);
  EXPECT_EQ(std::string_view(choice["finish_reason"]), "stop");
  EXPECT_EQ(std::string_view(choice["stop_reason"]), stop);
  EXPECT_EQ(std::string_view(choice["text"]), full.substr(0, full.find(stop)));
}

TEST_F(SimServerTest, Embeddings) {
  Response r = Post("/v1/embeddings", R"({"model":"demo-model","input":["hello world","bye"]})");
  ASSERT_EQ(r.status, 200);
  auto doc = parser_.parse(r.body).value();
  EXPECT_EQ(std::string_view(doc["id"]).rfind("embd-", 0), 0u);
  EXPECT_EQ(std::string_view(doc["object"]), "list");
  simdjson::dom::array data = doc["data"];
  ASSERT_EQ(data.size(), 2u);
  EXPECT_EQ(std::string_view(data.at(1)["object"]), "embedding");
  EXPECT_EQ(simdjson::dom::array(data.at(0)["embedding"]).size(), 384u);
  EXPECT_EQ(int64_t(doc["usage"]["prompt_tokens"]), 3);
}

TEST_F(SimServerTest, Rerank) {
  for (const char* path : {"/v1/rerank", "/rerank", "/v2/rerank"}) {
    Response r = Post(
        path,
        R"({"query":"fast cache","documents":["slow disk","fast cache memory","cats"],"top_n":2})");
    ASSERT_EQ(r.status, 200) << path;
    auto doc = parser_.parse(r.body).value();
    EXPECT_EQ(std::string_view(doc["id"]).rfind("score-", 0), 0u);
    simdjson::dom::array results = doc["results"];
    ASSERT_EQ(results.size(), 2u);
    EXPECT_EQ(int64_t(results.at(0)["index"]), 1);
    EXPECT_EQ(std::string_view(results.at(0)["document"]["text"]), "fast cache memory");
    EXPECT_GE(double(results.at(0)["relevance_score"]), double(results.at(1)["relevance_score"]));
  }
  Response score = Post("/v1/score", R"({"text_1":"a","text_2":["a","b"]})");
  EXPECT_EQ(simdjson::dom::array(parser_.parse(score.body)["data"]).size(), 2u);
}

TEST_F(SimServerTest, ClientDisconnectAbortsRequest) {
  auto wait_for_aborted = [&](std::uint64_t n) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (StatsField("aborted") < n && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return StatsField("aborted");
  };
  const std::string long_body =
      R"({"messages":[{"role":"user","content":"go on"}],"max_tokens":8000,"ignore_eos":true)";
  {
    // Streaming: close after the first bytes arrive.
    net::io_context ioc;
    tcp::socket sock(ioc);
    sock.connect({net::ip::make_address("127.0.0.1"), server_->port()});
    bhttp::write(sock, MakeRequest(bhttp::verb::post, "/v1/chat/completions",
                                   long_body + R"(,"stream":true})"));
    char buf[256];
    sock.read_some(net::buffer(buf));
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (StatsField("running") == 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(StatsField("running"), 1u);
    sock.close();
  }
  EXPECT_EQ(wait_for_aborted(1), 1u);
  {
    // Non-streaming: nothing is written until the end, so the read watch must notice.
    net::io_context ioc;
    tcp::socket sock(ioc);
    sock.connect({net::ip::make_address("127.0.0.1"), server_->port()});
    bhttp::write(sock, MakeRequest(bhttp::verb::post, "/v1/chat/completions", long_body + "}"));
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (StatsField("running") == 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    sock.close();
  }
  EXPECT_EQ(wait_for_aborted(2), 2u);
  EXPECT_EQ(StatsField("running"), 0u);
  EXPECT_EQ(StatsField("kv_blocks_used"), 0u);
}

TEST_F(SimServerTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  net::io_context ioc;
  tcp::socket sock(ioc);
  sock.connect({net::ip::make_address("127.0.0.1"), server_->port()});
  boost::beast::flat_buffer buf;
  for (int i = 0; i < 3; ++i) {
    bhttp::write(sock, MakeRequest(bhttp::verb::post, "/v1/completions",
                                   R"({"prompt":"x","max_tokens":2,"stream":true})"));
    bhttp::response<bhttp::string_body> res;
    bhttp::read(sock, buf, res);
    EXPECT_EQ(res.result_int(), 200u);
    EXPECT_EQ(Events(res.body()).back(), "[DONE]");
  }
}

class SimServerOptionsTest : public SimServerTest {
 protected:
  void SetUp() override {}
  void StartWith(SimOptions o) {
    std::string error;
    server_ = SimServer::Start(o, &error);
    ASSERT_TRUE(server_) << error;
  }
};

TEST_F(SimServerOptionsTest, CachedTokensReportedOnlyWithFlagAndWhenPositive) {
  SimOptions o;
  o.enable_prompt_tokens_details = true;
  o.engine_config.speed = 20.0;
  StartWith(o);
  std::string words;
  for (int i = 0; i < 80; ++i) words += " word" + std::to_string(i);
  const std::string body =
      R"({"messages":[{"role":"user","content":")" + words + R"("}],"max_tokens":2})";
  Response first = Post("/v1/chat/completions", body);
  EXPECT_TRUE(parser_.parse(first.body)["usage"]["prompt_tokens_details"].is_null());
  Response second = Post("/v1/chat/completions", body);
  auto usage = parser_.parse(second.body)["usage"];
  int64_t cached = usage["prompt_tokens_details"]["cached_tokens"];
  EXPECT_GT(cached, 0);
  EXPECT_LT(cached, int64_t(usage["prompt_tokens"]));
  EXPECT_EQ(cached % 16, 0);
}

TEST_F(SimServerOptionsTest, V0SurfaceUsesOldErrorShapeAndVersion) {
  SimOptions o;
  o.engine_version = "v0";
  StartWith(o);
  EXPECT_EQ(Do(bhttp::verb::get, "/version").body, R"({"version":"0.7.3"})");
  Response r = Post("/v1/completions", R"({"model":"nope","prompt":"x"})");
  EXPECT_EQ(r.status, 404);
  auto doc = parser_.parse(r.body).value();
  EXPECT_EQ(std::string_view(doc["object"]), "error");
  EXPECT_EQ(int64_t(doc["code"]), 404);
}

TEST_F(SimServerOptionsTest, ContextLengthFitsSmallKvCache) {
  SimOptions o;
  o.engine_config.num_kv_blocks = 8;
  o.engine_config.block_size = 16;
  StartWith(o);
  auto m = parser_.parse(Do(bhttp::verb::get, "/v1/models").body)["data"].at(0);
  EXPECT_EQ(int64_t(m["max_model_len"]), 128);
  Response r = Post("/v1/completions", R"({"prompt":"x","max_tokens":500})");
  EXPECT_EQ(r.status, 400);
}

TEST(SimServerStartTest, RejectsUnsimulatedEngine) {
  SimOptions o;
  o.engine = "tgi";
  std::string error;
  EXPECT_EQ(SimServer::Start(o, &error), nullptr);
  EXPECT_NE(error.find("tgi"), std::string::npos);
}

}  // namespace
}  // namespace infertel::sim
