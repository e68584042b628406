// The agent's request log lines and the live switches that govern them and the content
// events, driven through a real Gateway in front of a scripted upstream with a ConfigStore
// whose snapshot the test republishes (what the console does at run time).

#include <gtest/gtest.h>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <boost/asio.hpp>
#include <boost/beast.hpp>

#include <condition_variable>
#include <mutex>
#include <sstream>
#include <thread>

#include "common/engine_ids.h"
#include "core/semconv.h"
#include "engines/sglang/sglang_keys.h"
#include "engines/vllm/vllm_keys.h"
#include "exchange_recorder.h"
#include "gateway/content_events.h"
#include "gateway/gateway.h"
#include "gateway/request_log.h"
#include "http/simple_server.h"

namespace infertel::gateway {

using openai::Exchange;
using openai::ExchangeListener;
using openai::Outcome;

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;
using config::Key;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(RequestLogFormat, LinesCarryIdsModelTokensAndTimings) {
  openai::Exchange ex;
  ex.op = openai::Operation::kChat;
  ex.upstream_name = "llama";
  ex.request_id = "rid-1";
  ex.request.parsed = true;
  ex.request.model = "m";
  ex.request.stream = true;
  ex.request.max_tokens = 8;
  ex.start = Stopwatch::Start();
  ex.streamed = true;
  ex.first_token_mono_ns = ex.start.mono_start_ns + 120'000'000;
  ex.end_mono_ns = ex.start.mono_start_ns + 1'500'000'000;
  ex.http_status = 200;
  ex.response.id = "chatcmpl-9";
  ex.response.finish_reasons = {"stop"};
  ex.response.usage.input_tokens = 5;
  ex.response.usage.output_tokens = 7;

  EXPECT_EQ(FormatRequestLogLine(RequestLogEvent::kReceived, ex),
            "Received request rid-1: operation=chat model=m stream=true max_tokens=8");
  EXPECT_EQ(FormatRequestLogLine(RequestLogEvent::kDispatched, ex),
            "Dispatched request rid-1 to vllm upstream llama");
  EXPECT_EQ(FormatRequestLogLine(RequestLogEvent::kFinished, ex),
            "Finished request rid-1: status=200 model=m response_id=chatcmpl-9 "
            "finish_reasons=stop input_tokens=5 output_tokens=7 ttft=0.120s e2e=1.500s");

  ex.outcome = openai::Outcome::kClientAborted;
  ex.error_type = "client_disconnected";
  EXPECT_EQ(FormatRequestLogLine(RequestLogEvent::kFinished, ex).rfind("Aborted request rid-1:", 0),
            0u);
  ex.outcome = openai::Outcome::kUpstreamUnavailable;
  ex.error_type = "BadGateway";
  const std::string failed = FormatRequestLogLine(RequestLogEvent::kFinished, ex);
  EXPECT_EQ(failed.rfind("Failed request rid-1:", 0), 0u) << failed;
  EXPECT_NE(failed.find(" error.type=BadGateway"), std::string::npos) << failed;

  ex.log_trace_context = true;
  ex.trace_id = NewTraceId();
  ex.span_id = NewSpanId();
  EXPECT_EQ(FormatRequestLogLine(RequestLogEvent::kDispatched, ex),
            "[trace_id=" + ToHex(ex.trace_id) + " span_id=" + ToHex(ex.span_id) +
                "] Dispatched request rid-1 to vllm upstream llama");
}

TEST(RequestLogFormat, ClientTextCannotForgeLines) {
  openai::Exchange ex;
  ex.op = openai::Operation::kChat;
  ex.request_id = "a\nFinished request x";
  ex.request.model = std::string(1000, 'm');
  const std::string line = FormatRequestLogLine(RequestLogEvent::kReceived, ex);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_NE(line.find("a_Finished_request_x"), std::string::npos);
  EXPECT_LT(line.size(), 400u);
}

class LineCollectingSink : public pipeline::LogSink {
 public:
  void Submit(LogsRequest&& req) noexcept override {
    std::lock_guard lock(mu);
    requests.push_back(std::move(req));
  }
  std::size_t size() {
    std::lock_guard lock(mu);
    return requests.size();
  }
  std::mutex mu;
  std::vector<LogsRequest> requests;
};

constexpr char kLoggedChatResponse[] =
    R"({"id":"chatcmpl-abc","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"total_tokens":7,"completion_tokens":2}})";
constexpr char kChatBody[] = R"({"model":"m","messages":[{"role":"user","content":"hi"}]})";

class LiveSwitchTest : public ::testing::Test {
 protected:
  void Start(EngineId engine, bool upstream_up = true) {
    std::string error;
    std::uint16_t upstream_port = 0;
    if (upstream_up) {
      upstream_ = http::SimpleServer::Start(
          {"127.0.0.1", 0},
          [](const http::StringRequest&) {
            return http::MakeResponse(200, kLoggedChatResponse, "application/json");
          },
          &error);
      ASSERT_TRUE(upstream_) << error;
      upstream_port = upstream_->port();
    } else {
      // A port nothing listens on: bound by the OS, then closed.
      asio::io_context io;
      tcp::acceptor a(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
      upstream_port = a.local_endpoint().port();
    }

    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log_text_);
    sink->set_pattern("%l %v");
    request_log_ = std::make_unique<RequestLog>(std::make_shared<spdlog::logger>("test", sink));
    events_ = std::make_unique<ContentEventEmitter>(&log_sink_, Resource{});

    GatewayOptions opts;
    UpstreamConfig uc;
    uc.engine = engine;
    uc.url = *http::ParseUrl("http://127.0.0.1:" + std::to_string(upstream_port));
    uc.listen = {"127.0.0.1", 0};
    opts.upstreams.push_back(uc);
    opts.threads = 1;
    store_ = std::make_shared<config::ConfigStore>(config::Resolve(nullptr).settings);
    gateway_ = std::make_unique<Gateway>(opts, store_);
    gateway_->AddListener(request_log_.get());
    gateway_->AddListener(events_.get());
    gateway_->AddListener(&recorder_);
    ASSERT_TRUE(gateway_->Start(&error)) << error;
    port_ = gateway_->Ports().at(0);
  }

  void TearDown() override {
    if (gateway_) gateway_->Stop();
  }

  // A console change: a new snapshot with `key` set.
  void Set(Key key, config::Value value) {
    config::Settings next = *store_->Current();
    next.Mutable(key) = {std::move(value), config::Source::kConsole};
    store_->Publish(std::move(next));
  }

  unsigned Post() {
    asio::io_context io;
    beast::tcp_stream s(io);
    s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port_));
    bhttp::request<bhttp::string_body> req{bhttp::verb::post, "/v1/chat/completions", 11};
    req.set(bhttp::field::host, "test");
    req.set(bhttp::field::content_type, "application/json");
    req.body() = kChatBody;
    req.prepare_payload();
    bhttp::write(s, req);
    beast::flat_buffer buf;
    bhttp::response<bhttp::string_body> res;
    bhttp::read(s, buf, res);
    return res.result_int();
  }

  std::string LogText() {
    // The sink's lock orders this read after the worker's writes (the recorder ran after them).
    return log_text_.str();
  }

  std::ostringstream log_text_;
  LineCollectingSink log_sink_;
  ExchangeRecorder recorder_;
  std::unique_ptr<RequestLog> request_log_;
  std::unique_ptr<ContentEventEmitter> events_;
  std::unique_ptr<http::SimpleServer> upstream_;
  std::shared_ptr<config::ConfigStore> store_;
  std::unique_ptr<Gateway> gateway_;
  std::uint16_t port_ = 0;
};

TEST_F(LiveSwitchTest, RequestLogFollowsTheVllmKeyLive) {
  Start(VllmEngineId());
  ASSERT_EQ(Post(), 200u);
  Exchange first = recorder_.WaitOne(0);
  EXPECT_FALSE(first.log_requests);  // unset: the engine's own default (off)
  EXPECT_EQ(LogText(), "");

  Set(engines::vllm::keys().log_requests, true);
  ASSERT_EQ(Post(), 200u);
  openai::Exchange ex = recorder_.WaitOne(1);
  auto lines = Lines(LogText());
  ASSERT_EQ(lines.size(), 3u) << LogText();
  // The request id the engine saw carries the trace id: <trace id>-<random>.
  EXPECT_EQ(ex.request_id.rfind(ToHex(ex.trace_id) + "-", 0), 0u) << ex.request_id;
  EXPECT_EQ(lines[0],
            "info Received request " + ex.request_id + ": operation=chat model=m stream=false");
  EXPECT_EQ(lines[1], "info Dispatched request " + ex.request_id + " to vllm upstream default");
  EXPECT_EQ(lines[2].rfind("info Finished request " + ex.request_id +
                               ": status=200 model=m response_id=chatcmpl-abc finish_reasons=stop "
                               "input_tokens=5 output_tokens=2 e2e=",
                           0),
            0u)
      << lines[2];

  Set(engines::vllm::keys().log_trace_context, true);
  ASSERT_EQ(Post(), 200u);
  ex = recorder_.WaitOne(2);
  lines = Lines(LogText());
  ASSERT_EQ(lines.size(), 6u) << LogText();
  const std::string prefix =
      "info [trace_id=" + ToHex(ex.trace_id) + " span_id=" + ToHex(ex.span_id) + "] ";
  for (std::size_t i = 3; i < 6; ++i) EXPECT_EQ(lines[i].rfind(prefix, 0), 0u) << lines[i];

  Set(engines::vllm::keys().log_requests, false);
  ASSERT_EQ(Post(), 200u);
  recorder_.WaitOne(3);
  EXPECT_EQ(Lines(LogText()).size(), 6u);
  Set(engines::sglang::keys().log_requests, true);  // another engine's key changes nothing here
  ASSERT_EQ(Post(), 200u);
  recorder_.WaitOne(4);
  EXPECT_EQ(Lines(LogText()).size(), 6u);
}

TEST_F(LiveSwitchTest, SglangUpstreamFollowsTheSglangKey) {
  Start(SglangEngineId());
  Set(engines::vllm::keys().log_requests, true);
  ASSERT_EQ(Post(), 200u);
  recorder_.WaitOne(0);
  EXPECT_EQ(LogText(), "");
  Set(engines::sglang::keys().log_requests, true);
  Set(engines::vllm::keys().log_trace_context,
      true);  // SGLang has none of its own: the vLLM key applies
  ASSERT_EQ(Post(), 200u);
  openai::Exchange ex = recorder_.WaitOne(1);
  auto lines = Lines(LogText());
  ASSERT_EQ(lines.size(), 3u) << LogText();
  EXPECT_NE(lines[1].find("to sglang upstream default"), std::string::npos) << lines[1];
  EXPECT_NE(lines[0].find("[trace_id=" + ToHex(ex.trace_id)), std::string::npos) << lines[0];
}

TEST_F(LiveSwitchTest, FailedRequestIsAWarning) {
  Start(VllmEngineId(), /*upstream_up=*/false);
  Set(engines::vllm::keys().log_requests, true);
  ASSERT_EQ(Post(), 502u);
  openai::Exchange ex = recorder_.WaitOne(0);
  auto lines = Lines(LogText());
  ASSERT_EQ(lines.size(), 2u) << LogText();  // received, then failed: never dispatched
  EXPECT_EQ(lines[1].rfind("warning Failed request " + ex.request_id + ": status=502", 0), 0u)
      << lines[1];
  EXPECT_NE(lines[1].find("error.type=upstream_connection_error"), std::string::npos) << lines[1];
}

TEST_F(LiveSwitchTest, CaptureStrategyAndCaptureSwitchApplyLive) {
  Start(VllmEngineId());
  ASSERT_EQ(Post(), 200u);
  openai::Exchange ex = recorder_.WaitOne(0);
  EXPECT_TRUE(ex.content_on_span);
  EXPECT_FALSE(ex.content_on_event);
  EXPECT_EQ(log_sink_.size(), 0u);

  Set(Key::kMessageContentCaptureStrategy, std::string("event"));
  ASSERT_EQ(Post(), 200u);
  ex = recorder_.WaitOne(1);
  EXPECT_FALSE(ex.content_on_span);
  EXPECT_TRUE(ex.content_on_event);
  ASSERT_EQ(log_sink_.size(), 1u);
  {
    std::lock_guard lock(log_sink_.mu);
    const auto& r = log_sink_.requests[0].resource_logs(0).scope_logs(0).log_records(0);
    EXPECT_EQ(r.trace_id(), std::string(AsBytes(ex.trace_id)));
    EXPECT_EQ(r.span_id(), std::string(AsBytes(ex.span_id)));
    ASSERT_NE(FindAttr(r.attributes(), semconv::kGenAiInputMessages), nullptr);
    EXPECT_TRUE(FindAttr(r.attributes(), semconv::kGenAiInputMessages)->has_array_value());
  }

  Set(Key::kMessageContentCaptureStrategy, std::string("span_and_event"));
  ASSERT_EQ(Post(), 200u);
  ex = recorder_.WaitOne(2);
  EXPECT_TRUE(ex.content_on_span);
  EXPECT_TRUE(ex.content_on_event);
  EXPECT_EQ(log_sink_.size(), 2u);

  Set(Key::kCaptureMessageContent, false);  // capture off: no content anywhere, no event
  ASSERT_EQ(Post(), 200u);
  ex = recorder_.WaitOne(3);
  EXPECT_FALSE(ex.capture_content);
  EXPECT_TRUE(ex.request.input_messages_json.empty());
  EXPECT_TRUE(ex.response.output_messages_json.empty());
  EXPECT_EQ(log_sink_.size(), 2u);
}

}  // namespace
}  // namespace infertel::gateway
