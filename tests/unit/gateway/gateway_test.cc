// In-process tests of the gateway: a real Gateway in front of a scripted upstream, driven by
// a plain Beast client. They pin the proxy mechanics; the e2e tests pin the whole product.

#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <boost/beast.hpp>

#include <condition_variable>
#include <mutex>
#include <thread>
#include <tuple>

#include "common/engine_ids.h"
#include "core/semconv.h"
#include "exchange_recorder.h"
#include "gateway/entry_span.h"
#include "gateway/gateway.h"
#include "http/simple_server.h"

namespace infertel::gateway {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;

struct Captured {
  std::mutex mu;
  std::vector<http::StringRequest> requests;
};

class GatewayTest : public ::testing::Test {
 protected:
  void StartGateway(std::uint16_t upstream_port) {
    GatewayOptions opts;
    UpstreamConfig uc;
    uc.url = *http::ParseUrl("http://127.0.0.1:" + std::to_string(upstream_port));
    uc.listen = {"127.0.0.1", 0};
    opts.upstreams.push_back(uc);
    opts.threads = 1;
    opts.max_request_body = 1024;
    auto settings = config::Resolve(nullptr).settings;
    gateway_ = std::make_unique<Gateway>(opts, std::make_shared<config::ConfigStore>(settings));
    gateway_->AddListener(&recorder_);
    std::string error;
    ASSERT_TRUE(gateway_->Start(&error)) << error;
    port_ = gateway_->Ports().at(0);
  }

  // Starts an upstream answering every request with `respond`, recording the requests.
  void StartUpstream(std::function<http::StringResponse(const http::StringRequest&)> respond) {
    std::string error;
    upstream_ = http::SimpleServer::Start(
        {"127.0.0.1", 0},
        [this, respond](const http::StringRequest& req) {
          {
            std::lock_guard lock(captured_.mu);
            captured_.requests.push_back(req);
          }
          return respond(req);
        },
        &error);
    ASSERT_TRUE(upstream_) << error;
  }

  bhttp::response<bhttp::string_body> Post(
      const std::string& target, const std::string& body,
      std::vector<std::pair<std::string, std::string>> headers = {}) {
    asio::io_context io;
    beast::tcp_stream s(io);
    s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port_));
    bhttp::request<bhttp::string_body> req{bhttp::verb::post, target, 11};
    req.set(bhttp::field::host, "test");
    req.set(bhttp::field::content_type, "application/json");
    for (auto& [k, v] : headers) req.set(k, v);
    req.body() = body;
    req.prepare_payload();
    bhttp::write(s, req);
    beast::flat_buffer buf;
    bhttp::response<bhttp::string_body> res;
    bhttp::read(s, buf, res);
    return res;
  }

  ExchangeRecorder recorder_;
  Captured captured_;
  std::unique_ptr<http::SimpleServer> upstream_;
  std::unique_ptr<Gateway> gateway_;
  std::uint16_t port_ = 0;
};

constexpr char kChatResponse[] =
    R"({"id":"chatcmpl-abc","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"logprobs":null,"finish_reason":"stop","stop_reason":null}],"usage":{"prompt_tokens":5,"total_tokens":7,"completion_tokens":2}})";

TEST_F(GatewayTest, ForwardsBodyUnchangedAndPropagatesTraceContext) {
  StartUpstream([](const http::StringRequest&) {
    return http::MakeResponse(200, kChatResponse, "application/json");
  });
  StartGateway(upstream_->port());
  const std::string body =
      R"({"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":0.5})";
  auto res = Post("/v1/chat/completions", body,
                  {{"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
                   {"X-Request-Id", "client-id-1"}});
  EXPECT_EQ(res.result_int(), 200);
  EXPECT_EQ(res.body(), kChatResponse);  // byte for byte

  openai::Exchange ex = recorder_.WaitOne();
  std::lock_guard lock(captured_.mu);
  ASSERT_EQ(captured_.requests.size(), 1u);
  const auto& up = captured_.requests[0];
  EXPECT_EQ(up.body(), body);  // a non-stream request is not rewritten
  auto tp = TraceParent::Parse(up["traceparent"]);
  ASSERT_TRUE(tp);
  EXPECT_EQ(ToHex(tp->trace_id), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(tp->span_id, ex.span_id);  // the engine's parent is the entry span
  EXPECT_EQ(up["x-request-id"], "client-id-1");
  ASSERT_TRUE(ex.parent_span_id);
  EXPECT_EQ(ToHex(*ex.parent_span_id), "00f067aa0ba902b7");
  EXPECT_EQ(ex.outcome, openai::Outcome::kOk);
  EXPECT_EQ(ex.response.usage.output_tokens, 2);

  Span span;
  BuildEntrySpan(ex, &span);
  EXPECT_EQ(span.name(), "chat m");
  EXPECT_EQ(span.kind(), otlp_trace::Span::SPAN_KIND_INTERNAL);
  EXPECT_EQ(FindAttr(span.attributes(), semconv::kGenAiRequestTemperature)->double_value(), 0.5);
  EXPECT_EQ(FindAttr(span.attributes(), semconv::kGenAiSpanKind)->string_value(), "LLM");
  EXPECT_GE(span.end_time_unix_nano(), span.start_time_unix_nano());
}

TEST_F(GatewayTest, AddsRequestIdCarryingTheTraceIdWhenClientSentNone) {
  StartUpstream([](const http::StringRequest&) {
    return http::MakeResponse(200, kChatResponse, "application/json");
  });
  StartGateway(upstream_->port());
  Post("/v1/chat/completions", R"({"model":"m","messages":[]})");
  openai::Exchange ex = recorder_.WaitOne();
  std::lock_guard lock(captured_.mu);
  std::string rid(captured_.requests.at(0)["x-request-id"]);
  EXPECT_EQ(rid, ex.request_id);
  EXPECT_EQ(rid.rfind(ToHex(ex.trace_id), 0), 0u) << rid;
  // <32 hex digits of the trace id>-<16 random hex digits>
  ASSERT_EQ(rid.size(), 49u) << rid;
  EXPECT_EQ(rid[32], '-') << rid;
  EXPECT_EQ(rid.find_first_not_of("0123456789abcdef", 33), std::string::npos) << rid;
}

TEST_F(GatewayTest, StreamGetsUsageInjectedAndTheClientNeverSeesIt) {
  const std::string sse =
      "data: "
      "{\"id\":\"chatcmpl-s\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\","
      "\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":"
      "null,"
      "\"finish_reason\":null}]}\n\n"
      "data: "
      "{\"id\":\"chatcmpl-s\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\","
      "\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"logprobs\":null,\"finish_"
      "reason\":\"stop\"}]}\n\n";
  const std::string usage =
      "data: "
      "{\"id\":\"chatcmpl-s\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\","
      "\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"total_tokens\":4,\"completion_tokens\":1}}"
      "\n\n";
  StartUpstream([&](const http::StringRequest&) {
    return http::MakeResponse(200, sse + usage + "data: [DONE]\n\n", "text/event-stream");
  });
  StartGateway(upstream_->port());
  auto res = Post("/v1/chat/completions", R"({"model":"m","messages":[],"stream":true})");
  EXPECT_EQ(res.body(), sse + "data: [DONE]\n\n");
  openai::Exchange ex = recorder_.WaitOne();
  EXPECT_TRUE(ex.streamed);
  EXPECT_EQ(ex.response.usage.input_tokens, 3);
  EXPECT_EQ(ex.response.usage.output_tokens, 1);
  ASSERT_EQ(ex.response.finish_reasons.size(), 1u);
  EXPECT_EQ(ex.response.finish_reasons[0], "stop");
  EXPECT_NE(ex.first_token_mono_ns, 0u);
  std::lock_guard lock(captured_.mu);
  EXPECT_NE(captured_.requests.at(0).body().find("include_usage"), std::string::npos);
}

TEST_F(GatewayTest, BodyOverLimitGets413AndNothingReachesTheEngine) {
  StartUpstream(
      [](const http::StringRequest&) { return http::MakeResponse(200, "{}", "application/json"); });
  StartGateway(upstream_->port());
  auto res = Post("/v1/chat/completions", std::string(2048, 'x'));
  EXPECT_EQ(res.result_int(), 413);
  EXPECT_NE(res.body().find("\"error\""), std::string::npos);
  std::lock_guard lock(captured_.mu);
  EXPECT_TRUE(captured_.requests.empty());
}

TEST_F(GatewayTest, UpstreamDownGives502JsonAndAnErrorExchange) {
  // Reserve a port and close it so nothing listens there.
  asio::io_context io;
  tcp::acceptor a(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  std::uint16_t dead = a.local_endpoint().port();
  a.close();
  StartGateway(dead);
  auto res = Post("/v1/chat/completions", R"({"model":"m","messages":[]})");
  EXPECT_EQ(res.result_int(), 502);
  EXPECT_EQ(res[bhttp::field::content_type], "application/json");
  openai::Exchange ex = recorder_.WaitOne();
  EXPECT_EQ(ex.outcome, openai::Outcome::kUpstreamUnavailable);
  Span span;
  BuildEntrySpan(ex, &span);
  EXPECT_EQ(span.status().code(), otlp_trace::Status::STATUS_CODE_ERROR);
  ASSERT_NE(FindAttr(span.attributes(), semconv::kErrorType), nullptr);
}

TEST_F(GatewayTest, UnparsableBodyIsForwardedUnchangedAndSaysWhy) {
  StartUpstream([](const http::StringRequest&) {
    return http::MakeResponse(
        400, R"({"error":{"message":"bad json","type":"BadRequestError","param":null,"code":400}})",
        "application/json");
  });
  StartGateway(upstream_->port());
  auto res = Post("/v1/chat/completions", "{not json");
  EXPECT_EQ(res.result_int(), 400);
  openai::Exchange ex = recorder_.WaitOne();
  EXPECT_FALSE(ex.request.parsed);
  EXPECT_EQ(ex.outcome, openai::Outcome::kEngineError);
  EXPECT_EQ(ex.error_type, "BadRequestError");
  std::lock_guard lock(captured_.mu);
  EXPECT_EQ(captured_.requests.at(0).body(), "{not json");
  Span span;
  BuildEntrySpan(ex, &span);
  EXPECT_NE(FindAttr(span.attributes(), semconv::kInfertelParseError), nullptr);
}

TEST_F(GatewayTest, NonOpenAiPathsAreForwardedWithoutAnExchange) {
  StartUpstream([](const http::StringRequest& req) {
    return http::MakeResponse(200, std::string("path=") + std::string(req.target()), "text/plain");
  });
  StartGateway(upstream_->port());
  asio::io_context io;
  beast::tcp_stream s(io);
  s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port_));
  for (int i = 0; i < 3; ++i) {  // keep-alive: several requests on one connection
    bhttp::request<bhttp::string_body> req{bhttp::verb::get, "/v1/models?x=1", 11};
    req.set(bhttp::field::host, "t");
    bhttp::write(s, req);
    beast::flat_buffer buf;
    bhttp::response<bhttp::string_body> res;
    bhttp::read(s, buf, res);
    EXPECT_EQ(res.body(), "path=/v1/models?x=1");
  }
  EXPECT_EQ(gateway_->stats().observed.load(), 0u);
  EXPECT_EQ(gateway_->stats().requests.load(), 3u);
}

}  // namespace
}  // namespace infertel::gateway

namespace infertel::gateway {
namespace {

TEST(GatewayWorkersTest, OnePerAllowedCpuAtMostTwoUnlessAsked) {
  EXPECT_EQ(GatewayWorkers(0, 1), 1);
  EXPECT_EQ(GatewayWorkers(0, 2), 2);
  EXPECT_EQ(GatewayWorkers(0, 64), kMaxDefaultWorkers);
  EXPECT_EQ(GatewayWorkers(0, 0), 1);
  EXPECT_EQ(GatewayWorkers(3, 1), 3);
  EXPECT_EQ(GatewayWorkers(1, 8), 1);
}

// Several upstreams: each listener forwards to its own engine and tags exchanges with it.
TEST(GatewayMultiTest, EachListenerForwardsToItsOwnUpstream) {
  std::string error;
  auto a = http::SimpleServer::Start(
      {"127.0.0.1", 0},
      [](const http::StringRequest&) { return http::MakeResponse(200, "from-a"); }, &error);
  auto b = http::SimpleServer::Start(
      {"127.0.0.1", 0},
      [](const http::StringRequest&) { return http::MakeResponse(200, "from-b"); }, &error);
  ASSERT_TRUE(a && b) << error;
  GatewayOptions opts;
  opts.threads = 2;
  for (auto [name, port, engine] :
       {std::tuple{"a", a->port(), VllmEngineId()}, std::tuple{"b", b->port(), SglangEngineId()}}) {
    UpstreamConfig uc;
    uc.name = name;
    uc.engine = engine;
    uc.url = *http::ParseUrl("http://127.0.0.1:" + std::to_string(port));
    uc.listen = {"127.0.0.1", 0};
    opts.upstreams.push_back(uc);
  }
  ExchangeRecorder rec;
  Gateway gw(opts, std::make_shared<config::ConfigStore>(config::Resolve(nullptr).settings));
  gw.AddListener(&rec);
  ASSERT_TRUE(gw.Start(&error)) << error;
  auto ports = gw.Ports();
  ASSERT_EQ(ports.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    asio::io_context io;
    beast::tcp_stream s(io);
    s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), ports[i]));
    bhttp::request<bhttp::string_body> req{bhttp::verb::post, "/v1/embeddings", 11};
    req.set(bhttp::field::host, "t");
    req.body() = R"({"model":"e","input":"x"})";
    req.prepare_payload();
    bhttp::write(s, req);
    beast::flat_buffer buf;
    bhttp::response<bhttp::string_body> res;
    bhttp::read(s, buf, res);
    EXPECT_EQ(res.body(), i == 0 ? "from-a" : "from-b");
    openai::Exchange ex = rec.WaitOne(i);
    EXPECT_EQ(ex.upstream_name, i == 0 ? "a" : "b");
    EXPECT_EQ(ex.engine, i == 0 ? VllmEngineId() : SglangEngineId());
    EXPECT_EQ(ex.op, openai::Operation::kEmbeddings);
  }
}

}  // namespace
}  // namespace infertel::gateway
