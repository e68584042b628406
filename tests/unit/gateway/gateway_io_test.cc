// The gateway's I/O mechanics against a raw, scripted engine socket: deadlines (response and
// body timeouts), a client leaving while the engine thinks, pipelined requests, bodies read
// whole or relayed, and an engine that cuts a body short.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <boost/asio.hpp>
#include <boost/beast.hpp>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <thread>

#include "common/http_wire.h"
#include "exchange_recorder.h"
#include "gateway/deadlines.h"
#include "gateway/gateway.h"
#include "metrics/request_metrics.h"

namespace infertel::gateway {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

// An engine that runs `script` on each accepted connection, in its own thread, with
// blocking I/O.
class RawEngine {
 public:
  explicit RawEngine(std::function<void(tcp::socket&)> script)
      : acceptor_(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)),
        script_(std::move(script)) {
    thread_ = std::thread([this] {
      for (;;) {
        tcp::socket s(io_);
        boost::system::error_code ec;
        acceptor_.accept(s, ec);
        if (ec || stop_) return;
        std::lock_guard lock(mu_);
        fds_.push_back(s.native_handle());
        conns_.emplace_back([this, sock = std::move(s)]() mutable { script_(sock); });
      }
    });
  }
  ~RawEngine() {
    stop_ = true;
    boost::system::error_code ec;
    // Wake the blocking accept with a connection of our own.
    tcp::socket poke(io_);
    poke.connect(acceptor_.local_endpoint(), ec);
    thread_.join();
    // Scripts blocked on a connection the gateway keeps open (pooled) wake up with EOF.
    for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    for (auto& t : conns_) t.join();
  }
  std::uint16_t port() const { return acceptor_.local_endpoint().port(); }

 private:
  asio::io_context io_;
  tcp::acceptor acceptor_;
  std::function<void(tcp::socket&)> script_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mu_;
  std::vector<int> fds_;
  std::vector<std::thread> conns_;
};

// Reads one request (header and Content-Length body) from a blocking socket.
bool ReadRequest(tcp::socket& s, beast::flat_buffer& buf) {
  bhttp::request<bhttp::string_body> req;
  boost::system::error_code ec;
  bhttp::read(s, buf, req, ec);
  return !ec;
}

void WriteAll(tcp::socket& s, std::string_view bytes) {
  boost::system::error_code ec;
  asio::write(s, asio::buffer(bytes.data(), bytes.size()), ec);
}

std::string Response(std::string_view body) {
  return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + std::string(body);
}

constexpr char kChat[] =
    R"({"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"total_tokens":5,"completion_tokens":2}})";
constexpr char kRequestBody[] = R"({"model":"m","messages":[{"role":"user","content":"x"}]})";

class GatewayIoTest : public ::testing::Test {
 protected:
  // `env`: environment variables of the key registry the gateway's settings start from, e.g.
  // the upstream timeouts.
  void StartGateway(std::uint16_t engine_port,
                    const std::function<void(GatewayOptions&)>& tune = {},
                    const std::map<std::string, std::string>& env = {}) {
    GatewayOptions opts;
    UpstreamConfig uc;
    uc.url = *http::ParseUrl("http://127.0.0.1:" + std::to_string(engine_port));
    uc.listen = {"127.0.0.1", 0};
    opts.upstreams.push_back(uc);
    opts.threads = 1;
    if (tune) tune(opts);
    store_ = std::make_shared<config::ConfigStore>(
        config::Resolve([&env](std::string_view name) -> std::optional<std::string> {
          auto it = env.find(std::string(name));
          if (it == env.end()) return std::nullopt;
          return it->second;
        }).settings);
    gateway_ = std::make_unique<Gateway>(opts, store_);
    gateway_->AddListener(&recorder_);
    std::string error;
    ASSERT_TRUE(gateway_->Start(&error)) << error;
    port_ = gateway_->Ports().at(0);
  }

  std::string RawRequest(std::string_view body = kRequestBody) const {
    return std::string("POST /v1/chat/completions HTTP/1.1\r\nHost: t\r\n") +
           "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\n\r\n" + std::string(body);
  }

  // Sends `request` on a new connection, reads nothing for 300 ms (the gateway's writes to
  // it back up), then reads the whole response: its body, and *ec.
  std::string ReadAfterAPause(const std::string& request, boost::system::error_code* ec) {
    asio::io_context io;
    tcp::socket s(io);
    s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port_));
    WriteAll(s, request);
    std::this_thread::sleep_for(300ms);
    beast::flat_buffer buf;
    bhttp::response_parser<bhttp::string_body> p;
    p.body_limit(64u << 20);
    bhttp::read(s, buf, p, *ec);
    return std::move(p.get().body());
  }

  bhttp::response<bhttp::string_body> Post(boost::system::error_code* read_error = nullptr,
                                           std::string_view body = kRequestBody) {
    asio::io_context io;
    tcp::socket s(io);
    s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port_));
    WriteAll(s, RawRequest(body));
    beast::flat_buffer buf;
    bhttp::response<bhttp::string_body> res;
    boost::system::error_code ec;
    bhttp::read(s, buf, res, ec);
    if (read_error) *read_error = ec;
    return res;
  }

  std::uint64_t Failures(UpstreamFailure f) const {
    return gateway_->stats().upstream_failures.count(f).load();
  }

  ExchangeRecorder recorder_;
  std::shared_ptr<config::ConfigStore> store_;
  std::unique_ptr<Gateway> gateway_;
  std::uint16_t port_ = 0;
};

TEST(DeadlinesTest, SweepCancelsOnlyExpiredSockets) {
  asio::io_context io;
  tcp::acceptor acc(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  WorkerSocket a(io), b(io);
  tcp::socket peer_a(io), peer_b(io);
  a.connect(acc.local_endpoint());
  acc.accept(peer_a);
  b.connect(acc.local_endpoint());
  acc.accept(peer_b);
  Deadlines reg;
  boost::system::error_code ea, eb;
  bool a_done = false, b_done = false;
  {
    Deadline da(&reg, &a);
    Deadline db(&reg, &b);
    EXPECT_EQ(reg.size(), 2u);
    da.After(0ms);
    db.After(1h);
    char x, y;
    a.async_read_some(asio::buffer(&x, 1), [&](auto ec, std::size_t) {
      ea = ec;
      a_done = true;
    });
    b.async_read_some(asio::buffer(&y, 1), [&](auto ec, std::size_t) {
      eb = ec;
      b_done = true;
    });
    std::this_thread::sleep_for(2ms);
    EXPECT_EQ(reg.Sweep(), 1u);
    io.run_for(50ms);
    EXPECT_TRUE(a_done);
    EXPECT_EQ(ea, asio::error::operation_aborted);
    EXPECT_TRUE(da.fired());
    EXPECT_FALSE(b_done);
    EXPECT_FALSE(db.fired());
    da.Never();
    EXPECT_FALSE(da.fired());
    EXPECT_EQ(reg.Sweep(), 0u);  // a passed deadline fires once
  }
  EXPECT_EQ(reg.size(), 0u);
  a.close();
  b.close();
}

// Reads until the gateway closes the connection; true when it did (EOF or reset), within the
// socket's blocking read.
bool WaitForClose(tcp::socket& s) {
  char c;
  boost::system::error_code ec;
  while (!ec) s.read_some(asio::buffer(&c, 1), ec);
  return true;
}

constexpr char kFirstByteEnv[] = "INFERTEL_UPSTREAM_FIRST_BYTE_TIMEOUT_MS";
constexpr char kIdleEnv[] = "INFERTEL_UPSTREAM_IDLE_TIMEOUT_MS";
constexpr char kConnectEnv[] = "INFERTEL_UPSTREAM_CONNECT_TIMEOUT_MS";

TEST_F(GatewayIoTest, EngineThatNeverAnswersGets504AfterTheFirstByteTimeout) {
  std::atomic<bool> closed{false};
  RawEngine engine([&](tcp::socket& s) {
    beast::flat_buffer buf;
    ReadRequest(s, buf);
    closed = WaitForClose(s);  // never answers; the gateway gives up and closes
  });
  StartGateway(engine.port(), {}, {{kFirstByteEnv, "300"}});
  auto t0 = std::chrono::steady_clock::now();
  auto res = Post();
  auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(res.result_int(), 504);
  EXPECT_EQ(res[bhttp::field::content_type], "application/json");
  EXPECT_NE(res.body().find(R"({"error":{"message":)"), std::string::npos) << res.body();
  EXPECT_NE(res.body().find(R"("type":"GatewayTimeout","param":null,"code":504}})"),
            std::string::npos)
      << res.body();
  EXPECT_NE(res.body().find("first-byte timeout"), std::string::npos) << res.body();
  EXPECT_GE(waited, 250ms);
  EXPECT_LT(waited, 1500ms);
  openai::Exchange ex = recorder_.WaitOne();
  EXPECT_EQ(ex.outcome, openai::Outcome::kUpstreamTimeout);
  EXPECT_EQ(ex.error_type, "timeout");
  EXPECT_EQ(ex.http_status, 504u);
  EXPECT_EQ(Failures(UpstreamFailure::kFirstByteTimeout), 1u);
  EXPECT_EQ(gateway_->stats().upstream_errors.load(), 1u);
}

TEST_F(GatewayIoTest, TheFirstByteTimeoutIsReadLiveFromTheSettings) {
  RawEngine engine([&](tcp::socket& s) {
    beast::flat_buffer buf;
    ReadRequest(s, buf);
    WaitForClose(s);
  });
  StartGateway(engine.port(), {}, {{kFirstByteEnv, "60000"}});
  config::Settings next = *store_->Current();
  next.Mutable(config::Key::kUpstreamFirstByteTimeoutMs) = {std::int64_t{300},
                                                            config::Source::kConsole};
  store_->Publish(next);
  auto t0 = std::chrono::steady_clock::now();
  auto res = Post();
  EXPECT_EQ(res.result_int(), 504);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1500ms);
}

TEST_F(GatewayIoTest, BodyThatStallsGetsAClean504NotACutBody) {
  RawEngine engine([](tcp::socket& s) {
    beast::flat_buffer buf;
    ReadRequest(s, buf);
    WriteAll(s, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n");
    WriteAll(s, "{\"id\":");  // and then nothing
    WaitForClose(s);
  });
  StartGateway(engine.port(), {}, {{kIdleEnv, "300"}});
  auto res = Post();
  EXPECT_EQ(res.result_int(), 504);
  EXPECT_EQ(res[bhttp::field::content_type], "application/json");
  EXPECT_NE(res.body().find("idle timeout"), std::string::npos) << res.body();
  openai::Exchange ex = recorder_.WaitOne();
  EXPECT_EQ(ex.outcome, openai::Outcome::kUpstreamTimeout);
  EXPECT_EQ(ex.error_type, "timeout");
  EXPECT_EQ(Failures(UpstreamFailure::kIdleTimeout), 1u);
}

TEST_F(GatewayIoTest, EngineClosingMidBodyGets502) {
  RawEngine engine([](tcp::socket& s) {
    beast::flat_buffer buf;
    ReadRequest(s, buf);
    WriteAll(s, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n");
    WriteAll(s, "{\"id\":");
    s.close();
  });
  StartGateway(engine.port());
  auto res = Post();
  EXPECT_EQ(res.result_int(), 502);
  EXPECT_NE(res.body().find(R"("type":"BadGateway","param":null,"code":502}})"), std::string::npos)
      << res.body();
  openai::Exchange ex = recorder_.WaitOne();
  EXPECT_EQ(ex.outcome, openai::Outcome::kUpstreamUnavailable);
  EXPECT_EQ(ex.error_type, "upstream_closed");
  EXPECT_EQ(Failures(UpstreamFailure::kClosed), 1u);
}

constexpr char kStreamRequest[] =
    R"({"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]})";
constexpr char kSseHeader[] =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";

// One SSE event as one chunk of a chunked body.
std::string SseChunk(std::string_view event) {
  return fmt::format("{:x}\r\n{}\r\n", event.size(), event);
}

constexpr char kDeltaEvent[] =
    R"(data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]})"
    "\n\n";

// The last delta of a complete stream: it gives the choice's finish_reason.
constexpr char kFinalEvent[] =
    R"(data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"!"},"finish_reason":"stop"}]})"
    "\n\n";

TEST_F(GatewayIoTest, StreamCutByTheEngineEndsWithAnSseErrorEventAndDone) {
  RawEngine engine([](tcp::socket& s) {
    beast::flat_buffer buf;
    ReadRequest(s, buf);
    WriteAll(s, kSseHeader);
    WriteAll(s, SseChunk(kDeltaEvent));
    WriteAll(s, SseChunk("data: {\"id\":\"c1\",\"obj"));  // an event cut in its middle
    s.close();                                            // the engine died
  });
  StartGateway(engine.port());
  boost::system::error_code read_error;
  auto res = Post(&read_error, kStreamRequest);
  EXPECT_FALSE(read_error) << read_error.message();  // a complete chunked body, not a cut one
  EXPECT_EQ(res.result_int(), 200);
  const std::string& body = res.body();
  EXPECT_EQ(body.find(kDeltaEvent), 0u) << body;
  EXPECT_EQ(body.find(R"(data: {"id":"c1")", 1), std::string::npos)
      << "the cut event is dropped: " << body;
  const std::string tail = body.substr(std::string_view(kDeltaEvent).size());
  EXPECT_EQ(tail.rfind("\ndata: {\"error\":{\"message\":", 0), 0u) << tail;
  EXPECT_NE(tail.find(R"("type":"BadGateway","param":null,"code":502}})"), std::string::npos)
      << tail;
  EXPECT_TRUE(tail.ends_with("}}\n\ndata: [DONE]\n\n")) << tail;
  openai::Exchange ex = recorder_.WaitOne();
  EXPECT_EQ(ex.outcome, openai::Outcome::kUpstreamUnavailable);
  EXPECT_EQ(ex.error_type, "upstream_closed");
  EXPECT_EQ(ex.http_status, 200u);
  EXPECT_EQ(ex.stream_deltas, 1);
  EXPECT_EQ(Failures(UpstreamFailure::kClosed), 1u);
  EXPECT_EQ(gateway_->stats().client_aborts.load(), 0u);
}

// The openai SDKs stop reading at [DONE] and close the connection, before the chunked body's
// last chunk. The stream was complete for them: the exchange is not an aborted one, even when
// the gateway sees the close while it still waits for the engine's last chunk (here the engine
// sends it only after the client has gone; a race once, which the e2e tests lost now and then).
TEST_F(GatewayIoTest, AClientThatClosesRightAfterDoneHasNotAborted) {
  std::atomic<bool> client_closed{false};
  RawEngine engine([&](tcp::socket& s) {
    beast::flat_buffer buf;
    ReadRequest(s, buf);
    WriteAll(s, kSseHeader);
    WriteAll(s, SseChunk(kDeltaEvent));
    WriteAll(s, SseChunk(kFinalEvent));
    WriteAll(s, SseChunk("data: [DONE]\n\n"));
    for (int i = 0; i < 200 && !client_closed; ++i) std::this_thread::sleep_for(5ms);
    std::this_thread::sleep_for(50ms);  // the gateway sees the close first
    WriteAll(s, "0\r\n\r\n");
    WaitForClose(s);
  });
  StartGateway(engine.port());
  {
    asio::io_context io;
    tcp::socket s(io);
    s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port_));
    WriteAll(s, RawRequest(kStreamRequest));
    std::string got;
    char chunk[4096];
    boost::system::error_code ec;
    while (!ec && got.find("data: [DONE]") == std::string::npos)
      got.append(chunk, s.read_some(asio::buffer(chunk), ec));
    ASSERT_FALSE(ec) << ec.message();
    s.close();
    client_closed = true;
  }
  openai::Exchange ex = recorder_.WaitOne();
  EXPECT_EQ(ex.outcome, openai::Outcome::kOk) << ex.error_type;
  EXPECT_EQ(ex.stream_deltas, 2);
  EXPECT_EQ(ex.response.finish_reasons, std::vector<std::string>{"stop"});
  EXPECT_EQ(gateway_->stats().client_aborts.load(), 0u);
}

// Inter-token figures are summed as the deltas arrive: a stream of 100,001 deltas whose last
// comes after a pause gives the exact decode time and time per output token (they were once
// taken from the first 4,096 deltas' times).
TEST_F(GatewayIoTest, TimePerOutputTokenOfAHundredThousandTokenStreamIsExact) {
  constexpr int kDeltas = 100'001;
  RawEngine engine([](tcp::socket& s) {
    beast::flat_buffer buf;
    ReadRequest(s, buf);
    WriteAll(s, kSseHeader);
    std::string batch;
    for (int i = 0; i < 1000; ++i) batch += kDeltaEvent;
    for (int sent = 0; sent + 1000 < kDeltas; sent += 1000) WriteAll(s, SseChunk(batch));
    std::this_thread::sleep_for(300ms);  // the last token comes late, and ends the choice
    std::string last = kDeltaEvent;
    last.replace(last.find("\"finish_reason\":null"), 20, "\"finish_reason\":\"length\"");
    WriteAll(s, SseChunk(last));
    WriteAll(s, SseChunk(R"(data: {"id":"c1","object":"chat.completion.chunk","created":1,)"
                         R"("model":"m","choices":[],"usage":{"prompt_tokens":3,)"
                         R"("completion_tokens":100001,"total_tokens":100004}})"
                         "\n\n"));
    WriteAll(s, SseChunk("data: [DONE]\n\n"));
    WriteAll(s, "0\r\n\r\n");
    WaitForClose(s);
  });
  StartGateway(engine.port());
  boost::system::error_code ec;  // 15 MB of events: read with a body limit that takes them
  const std::string body = ReadAfterAPause(RawRequest(kStreamRequest), &ec);
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_TRUE(body.ends_with("data: [DONE]\n\n"));
  openai::Exchange ex = recorder_.WaitOne();
  EXPECT_EQ(ex.outcome, openai::Outcome::kOk);
  EXPECT_EQ(ex.stream_deltas, kDeltas);
  EXPECT_EQ(ex.delta_times.gaps, kDeltas - 1);
  const std::uint64_t decode_ns = ex.delta_times.last_mono_ns - ex.first_token_mono_ns;
  EXPECT_GE(decode_ns, 300'000'000u);
  // The longest gap is the pause, less what the gateway's reads of the backlog before it took
  // (the client's pause backs the stream up): not measured exactly here.
  EXPECT_GT(ex.delta_times.gap_max_ns, 0u);
  EXPECT_LE(ex.delta_times.gap_max_ns, decode_ns);
  const auto pts = metrics::MeasureExchange(ex).Points();
  double tpot = -1;
  for (const auto& p : pts)
    if (p.id == metrics::MetricId::kTimePerOutputToken) tpot = p.value;
  EXPECT_DOUBLE_EQ(tpot, static_cast<double>(decode_ns) / 1e9 / (kDeltas - 1));
}

// A stream whose chunks all say "finish_reason": null was cut short: no empty reason is
// made up, and the exchange is an error, as its output message says.
TEST_F(GatewayIoTest, StreamEndingWithoutAFinishReasonIsAnError) {
  RawEngine engine([](tcp::socket& s) {
    beast::flat_buffer buf;
    ReadRequest(s, buf);
    WriteAll(s, kSseHeader);
    WriteAll(s, SseChunk(kDeltaEvent));
    WriteAll(s, SseChunk(kDeltaEvent));
    WriteAll(s, SseChunk("data: [DONE]\n\n"));
    WriteAll(s, "0\r\n\r\n");
    WaitForClose(s);
  });
  StartGateway(engine.port());
  auto res = Post(nullptr, kStreamRequest);
  EXPECT_EQ(res.result_int(), 200);
  EXPECT_TRUE(res.body().ends_with("data: [DONE]\n\n")) << "relayed as it came";
  openai::Exchange ex = recorder_.WaitOne();
  EXPECT_EQ(ex.outcome, openai::Outcome::kEngineError);
  EXPECT_EQ(ex.error_type, "stream_unfinished");
  EXPECT_TRUE(ex.response.finish_reasons.empty());
  EXPECT_EQ(ex.response.unfinished_choices, 1u);
  EXPECT_NE(ex.response.output_messages_json.find(R"("finish_reason":"error")"), std::string::npos)
      << ex.response.output_messages_json;
  EXPECT_EQ(gateway_->stats().invalid_answers.count(InvalidAnswer::kUnfinishedStream).load(), 1u);
}

TEST_F(GatewayIoTest, StreamThatStallsEndsWithAnSseErrorEventAfterTheIdleTimeout) {
  RawEngine engine([](tcp::socket& s) {
    beast::flat_buffer buf;
    ReadRequest(s, buf);
    WriteAll(s, kSseHeader);
    WriteAll(s, SseChunk(kDeltaEvent));
    WaitForClose(s);
  });
  StartGateway(engine.port(), {}, {{kIdleEnv, "300"}});
  boost::system::error_code read_error;
  auto res = Post(&read_error, kStreamRequest);
  EXPECT_FALSE(read_error) << read_error.message();
  EXPECT_NE(res.body().find(R"("type":"GatewayTimeout","param":null,"code":504}})"),
            std::string::npos)
      << res.body();
  EXPECT_NE(res.body().find("idle timeout"), std::string::npos) << res.body();
  EXPECT_TRUE(res.body().ends_with("data: [DONE]\n\n")) << res.body();
  openai::Exchange ex = recorder_.WaitOne();
  EXPECT_EQ(ex.outcome, openai::Outcome::kUpstreamTimeout);
  EXPECT_EQ(ex.error_type, "timeout");
  EXPECT_EQ(Failures(UpstreamFailure::kIdleTimeout), 1u);
}

TEST_F(GatewayIoTest, StreamSilentAfterItsHeaderIsUnderTheFirstByteTimeout) {
  RawEngine engine([](tcp::socket& s) {
    beast::flat_buffer buf;
    ReadRequest(s, buf);
    WriteAll(s, kSseHeader);  // as vLLM: the header at once, the first event after the queue
    WaitForClose(s);
  });
  // An idle timeout shorter than the wait must not cut a request waiting in the queue.
  StartGateway(engine.port(), {}, {{kFirstByteEnv, "600"}, {kIdleEnv, "100"}});
  auto t0 = std::chrono::steady_clock::now();
  auto res = Post(nullptr, kStreamRequest);
  auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(waited, 550ms);
  EXPECT_NE(res.body().find("first-byte timeout"), std::string::npos) << res.body();
  EXPECT_TRUE(res.body().ends_with("data: [DONE]\n\n")) << res.body();
  openai::Exchange ex = recorder_.WaitOne();
  EXPECT_EQ(ex.outcome, openai::Outcome::kUpstreamTimeout);
  EXPECT_EQ(Failures(UpstreamFailure::kFirstByteTimeout), 1u);
  EXPECT_EQ(Failures(UpstreamFailure::kIdleTimeout), 0u);
}

TEST_F(GatewayIoTest, StreamWhoseFirstEventWaitsLongerThanTheIdleTimeoutIsRelayed) {
  RawEngine engine([](tcp::socket& s) {
    beast::flat_buffer buf;
    ReadRequest(s, buf);
    WriteAll(s, kSseHeader);
    std::this_thread::sleep_for(500ms);  // the queue: longer than the idle timeout
    WriteAll(s, SseChunk(kDeltaEvent));
    WriteAll(s, SseChunk(kFinalEvent));
    WriteAll(s, SseChunk("data: [DONE]\n\n"));
    WriteAll(s, "0\r\n\r\n");
    WaitForClose(s);
  });
  StartGateway(engine.port(), {}, {{kFirstByteEnv, "5000"}, {kIdleEnv, "200"}});
  auto res = Post(nullptr, kStreamRequest);
  EXPECT_EQ(res.result_int(), 200);
  EXPECT_EQ(res.body().find("error"), std::string::npos) << res.body();
  EXPECT_TRUE(res.body().ends_with("data: [DONE]\n\n")) << res.body();
  EXPECT_EQ(recorder_.WaitOne().outcome, openai::Outcome::kOk);
}

TEST_F(GatewayIoTest, ClosedPortGets502AsAConnectionError) {
  std::uint16_t port;
  {
    asio::io_context io;
    tcp::acceptor a(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    port = a.local_endpoint().port();
  }
  StartGateway(port);
  auto res = Post();
  EXPECT_EQ(res.result_int(), 502);
  openai::Exchange ex = recorder_.WaitOne();
  EXPECT_EQ(ex.outcome, openai::Outcome::kUpstreamUnavailable);
  EXPECT_EQ(ex.error_type, "upstream_connection_error");
  EXPECT_EQ(Failures(UpstreamFailure::kConnectError), 1u);
}

// A listening socket that never accepts, its accept queue filled: further SYNs are dropped,
// so a connection attempt hangs as toward a host that does not answer.
class FullBacklog {
 public:
  FullBacklog() : acceptor_(io_) {
    acceptor_.open(tcp::v4());
    acceptor_.bind(tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    acceptor_.listen(0);
    // Connect until one attempt does not complete within 200 ms.
    for (int i = 0; i < 16 && !full_; ++i) {
      fillers_.emplace_back(io_);
      auto& s = fillers_.back();
      auto done = std::make_shared<bool>(false);
      s.async_connect(acceptor_.local_endpoint(),
                      [done](const boost::system::error_code&) { *done = true; });
      io_.run_for(200ms);
      io_.restart();
      full_ = !*done;
    }
  }
  bool full() const { return full_; }
  std::uint16_t port() const { return acceptor_.local_endpoint().port(); }

 private:
  asio::io_context io_;
  tcp::acceptor acceptor_;
  std::list<tcp::socket> fillers_;
  bool full_ = false;
};

TEST_F(GatewayIoTest, EngineThatDoesNotAnswerTheConnectionGets504AfterTheConnectTimeout) {
  FullBacklog blackhole;
  ASSERT_TRUE(blackhole.full()) << "could not fill the accept queue";
  StartGateway(blackhole.port(), {}, {{kConnectEnv, "300"}});
  auto t0 = std::chrono::steady_clock::now();
  auto res = Post();
  auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(res.result_int(), 504);
  EXPECT_NE(res.body().find("connect timeout"), std::string::npos) << res.body();
  EXPECT_GE(waited, 250ms);
  EXPECT_LT(waited, 1500ms);
  openai::Exchange ex = recorder_.WaitOne();
  EXPECT_EQ(ex.outcome, openai::Outcome::kUpstreamTimeout);
  EXPECT_EQ(ex.error_type, "timeout");
  EXPECT_EQ(Failures(UpstreamFailure::kConnectTimeout), 1u);
}

TEST_F(GatewayIoTest, ClientLeavingWhileTheEngineThinksClosesTheEngineConnection) {
  std::atomic<bool> engine_saw_close{false};
  std::atomic<long> close_after_ms{-1};
  RawEngine engine([&](tcp::socket& s) {
    beast::flat_buffer buf;
    if (!ReadRequest(s, buf)) return;
    auto t0 = std::chrono::steady_clock::now();
    char c;
    boost::system::error_code ec;
    s.read_some(asio::buffer(&c, 1), ec);  // blocks until the gateway closes
    if (ec) {
      engine_saw_close = true;
      close_after_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::steady_clock::now() - t0)
                           .count();
    }
  });
  StartGateway(engine.port());
  {
    asio::io_context io;
    tcp::socket s(io);
    s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port_));
    WriteAll(s, RawRequest());
    std::this_thread::sleep_for(200ms);
  }  // the client closes
  openai::Exchange ex = recorder_.WaitOne();
  EXPECT_EQ(ex.outcome, openai::Outcome::kClientAborted);
  EXPECT_EQ(ex.http_status, 499u);
  for (int i = 0; i < 100 && !engine_saw_close; ++i) std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(engine_saw_close);
  EXPECT_LT(close_after_ms.load(), 1500);
}

TEST_F(GatewayIoTest, PipelinedRequestsAreAnsweredInOrder) {
  RawEngine engine([](tcp::socket& s) {
    beast::flat_buffer buf;
    int n = 0;
    while (ReadRequest(s, buf)) {
      ++n;
      std::this_thread::sleep_for(50ms);  // the second request waits in the client socket
      std::string body = kChat;
      body.replace(body.find("chatcmpl-1"), 10, "chatcmpl-" + std::to_string(n));
      WriteAll(s, Response(body));
    }
  });
  StartGateway(engine.port());
  asio::io_context io;
  tcp::socket s(io);
  s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port_));
  WriteAll(s, RawRequest() + RawRequest());  // both in one write
  beast::flat_buffer buf;
  for (int i = 1; i <= 2; ++i) {
    bhttp::response<bhttp::string_body> res;
    boost::system::error_code ec;
    bhttp::read(s, buf, res, ec);
    ASSERT_FALSE(ec) << ec.message();
    EXPECT_EQ(res.result_int(), 200);
    EXPECT_NE(res.body().find("chatcmpl-" + std::to_string(i)), std::string::npos);
  }
  EXPECT_EQ(recorder_.WaitOne(0).outcome, openai::Outcome::kOk);
  EXPECT_EQ(recorder_.WaitOne(1).outcome, openai::Outcome::kOk);
}

TEST_F(GatewayIoTest, LongPromptsPipelinedReachTheEngineWholeAndInOrder) {
  // A 600 KB prompt, a small request and a chunked 300 KB prompt in one client write: the
  // gateway reads each body with room made for it after its header (http/body_room.h) and
  // keeps what it read ahead for the next request.
  std::mutex mu;
  std::vector<std::string> seen;  // the bodies the engine got, in order
  RawEngine engine([&](tcp::socket& s) {
    beast::flat_buffer buf;
    for (;;) {
      bhttp::request_parser<bhttp::string_body> p;
      p.body_limit(8u << 20);
      boost::system::error_code ec;
      bhttp::read(s, buf, p, ec);
      if (ec) return;
      {
        std::lock_guard lock(mu);
        seen.push_back(p.get().body());
      }
      WriteAll(s, Response(kChat));
    }
  });
  StartGateway(engine.port(), [](GatewayOptions& o) { o.max_request_body = 4u << 20; });
  auto prompt = [](std::size_t n, char c) {
    return R"({"model":"m","messages":[{"role":"user","content":")" + std::string(n, c) + R"("}]})";
  };
  const std::string bodies[] = {prompt(600'000, 'a'), kRequestBody, prompt(300'000, 'c')};
  std::string wire;
  for (int i = 0; i < 3; ++i)
    wire += testing::PostBytes("/v1/chat/completions", "application/json", bodies[i], i == 2);
  asio::io_context io;
  tcp::socket s(io);
  s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port_));
  std::thread writer([&] { WriteAll(s, wire); });
  beast::flat_buffer buf;
  boost::system::error_code ec;
  for (int i = 0; i < 3 && !ec; ++i) {
    bhttp::response<bhttp::string_body> res;
    bhttp::read(s, buf, res, ec);
    EXPECT_FALSE(ec) << "response " << i << ": " << ec.message();
    if (!ec) EXPECT_EQ(res.result_int(), 200) << "request " << i;
  }
  if (ec) s.shutdown(tcp::socket::shutdown_both, ec);  // unblocks the writer
  writer.join();
  std::lock_guard lock(mu);
  ASSERT_EQ(seen.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(seen[i] == bodies[i]) << "body " << i << " differs";
  for (int i = 0; i < 3; ++i) EXPECT_EQ(recorder_.WaitOne(i).outcome, openai::Outcome::kOk);
}

TEST_F(GatewayIoTest, ExpectContinueIsAnsweredAtOnceAndNotPassedOn) {
  // curl sends `Expect: 100-continue` for bodies over 1 MiB and waits about a second for the
  // 100 before sending the body anyway. The gateway answers it at once; the engine gets the
  // whole request without the expectation.
  std::mutex mu;
  std::vector<std::string> expects;  // the Expect header each engine request carried
  RawEngine engine([&](tcp::socket& s) {
    beast::flat_buffer buf;
    for (;;) {
      bhttp::request<bhttp::string_body> req;
      boost::system::error_code ec;
      bhttp::read(s, buf, req, ec);
      if (ec) return;
      {
        std::lock_guard lock(mu);
        expects.emplace_back(req[bhttp::field::expect]);
      }
      WriteAll(s, Response(kChat));
    }
  });
  StartGateway(engine.port(), [](GatewayOptions& o) { o.max_request_body = 4096; });
  asio::io_context io;
  beast::tcp_stream s(io);
  s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port_));
  const std::string header = std::string("POST /v1/chat/completions HTTP/1.1\r\nHost: t\r\n") +
                             "Content-Type: application/json\r\nExpect: 100-continue\r\n" +
                             "Content-Length: " + std::to_string(std::strlen(kRequestBody)) +
                             "\r\n\r\n";
  WriteAll(s.socket(), header);
  beast::flat_buffer buf;
  {
    bhttp::response<bhttp::empty_body> cont;
    boost::system::error_code ec;
    s.expires_after(500ms);  // well before curl's one second
    bhttp::read(s, buf, cont, ec);
    ASSERT_FALSE(ec) << "no 100 Continue: " << ec.message();
    EXPECT_EQ(cont.result_int(), 100);
  }
  WriteAll(s.socket(), kRequestBody);
  bhttp::response<bhttp::string_body> res;
  s.expires_after(5s);
  bhttp::read(s, buf, res);
  EXPECT_EQ(res.result_int(), 200);
  EXPECT_EQ(res.body(), kChat);
  EXPECT_EQ(recorder_.WaitOne(0).outcome, openai::Outcome::kOk);
  // A body over the limit is refused from its header: 413, no 100, nothing sent on.
  WriteAll(s.socket(), std::string("POST /v1/chat/completions HTTP/1.1\r\nHost: t\r\n") +
                           "Expect: 100-continue\r\nContent-Length: 100000\r\n\r\n");
  bhttp::response<bhttp::string_body> big;
  s.expires_after(5s);
  bhttp::read(s, buf, big);
  EXPECT_EQ(big.result_int(), 413);
  std::lock_guard lock(mu);
  ASSERT_EQ(expects.size(), 1u);
  EXPECT_EQ(expects[0], "");
}

TEST_F(GatewayIoTest, SmallAndLargeBodiesArriveByteForByteAndAreParsed) {
  // 1 KiB and 200 KiB (read whole, the second with room made for it; one write each), 1 MiB
  // (relayed in 64 KiB pieces), then 1 KiB again on the same engine connection, whose buffer
  // gave the room back. Each in several engine writes with pauses, so the gateway sees them
  // arrive in parts.
  const std::vector<std::size_t> pads = {1024, 200 * 1024, 1024 * 1024, 1024};
  auto padded = [](std::size_t pad) {
    std::string body = kChat;
    body.insert(body.size() - 1, ",\"pad\":\"" + std::string(pad, 'p') + "\"");
    return body;
  };
  std::atomic<int> engine_connections{0};
  RawEngine engine([&](tcp::socket& s) {
    ++engine_connections;
    beast::flat_buffer buf;
    std::size_t n = 0;
    while (ReadRequest(s, buf) && n < pads.size()) {
      std::string all = Response(padded(pads[n++]));
      std::size_t third = all.size() / 3;
      WriteAll(s, std::string_view(all).substr(0, third));
      std::this_thread::sleep_for(20ms);
      WriteAll(s, std::string_view(all).substr(third, third));
      std::this_thread::sleep_for(20ms);
      WriteAll(s, std::string_view(all).substr(2 * third));
    }
  });
  StartGateway(engine.port());
  asio::io_context io;
  tcp::socket s(io);
  s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port_));
  beast::flat_buffer buf;
  for (std::size_t pad : pads) {
    WriteAll(s, RawRequest());
    bhttp::response_parser<bhttp::string_body> p;
    p.body_limit(8u << 20);
    boost::system::error_code ec;
    bhttp::read(s, buf, p, ec);
    ASSERT_FALSE(ec) << ec.message();
    const std::string& body = p.get().body();
    EXPECT_TRUE(body == padded(pad))
        << "answer with " << pad << " bytes of padding, got " << body.size() << " bytes";
    EXPECT_EQ(p.get()[bhttp::field::content_length], std::to_string(body.size()));
  }
  for (std::size_t i = 0; i < pads.size(); ++i) {
    openai::Exchange ex = recorder_.WaitOne(i);
    EXPECT_EQ(ex.outcome, openai::Outcome::kOk) << "response " << i;
    EXPECT_EQ(ex.response.usage.output_tokens, 2) << "response " << i;
  }
  EXPECT_EQ(engine_connections.load(), 1);  // all four on one pooled engine connection
}

// A client that does not read for a while: the relayed pieces are written at once only as far
// as the client's socket takes them, and the rest waits for room (WriteNow, then WriteRest). 16 MiB
// is more than the loopback socket buffers on both sides hold, so writes are cut short; the client
// must still get every byte in order.
TEST_F(GatewayIoTest, AClientThatPausesGetsALongBodyWholeAndInOrder) {
  std::string body = kChat;
  std::string pad(16u << 20, 'p');
  for (std::size_t i = 0; i < pad.size(); i += 4099) pad[i] = static_cast<char>('a' + i % 26);
  body.insert(body.size() - 1, ",\"pad\":\"" + pad + "\"");
  RawEngine engine([&](tcp::socket& s) {
    beast::flat_buffer buf;
    if (ReadRequest(s, buf)) WriteAll(s, Response(body));
  });
  StartGateway(engine.port());
  boost::system::error_code ec;
  const std::string got = ReadAfterAPause(RawRequest(), &ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(got.size(), body.size());
  EXPECT_TRUE(got == body);
  const openai::Exchange ex = recorder_.WaitOne(0);
  EXPECT_EQ(ex.outcome, openai::Outcome::kOk);
  EXPECT_LE(ex.client_wait_ns, ex.end_mono_ns - ex.start.mono_start_ns);
}

// The same for a stream: 16,000 events of about 1 KiB, each its own chunk, relayed through the
// SSE path (whose pieces are written as chunks) to a client that pauses first. Every event
// arrives once and in order.
TEST_F(GatewayIoTest, AClientThatPausesGetsEveryStreamedEventInOrder) {
  constexpr int kEvents = 16000;
  const std::string pad(1000, 'q');
  auto event = [&](int i) {
    return fmt::format(
        "data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,"
        "\"model\":\"m\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"e{:05d}{}\"}},"
        "\"finish_reason\":{}}}]}}\n\n",
        i, pad, i + 1 == kEvents ? "\"stop\"" : "null");
  };
  RawEngine engine([&](tcp::socket& s) {
    beast::flat_buffer buf;
    if (!ReadRequest(s, buf)) return;
    std::string out =
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (int i = 0; i <= kEvents; ++i) {
      std::string e = i < kEvents ? event(i) : std::string("data: [DONE]\n\n");
      out += fmt::format("{:x}\r\n{}\r\n", e.size(), e);
    }
    out += "0\r\n\r\n";
    WriteAll(s, out);
  });
  StartGateway(engine.port());
  boost::system::error_code ec;
  const std::string got = ReadAfterAPause(
      RawRequest(R"({"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]})"), &ec);
  ASSERT_FALSE(ec) << ec.message();
  std::size_t at = 0;
  for (int i = 0; i < kEvents; ++i) {
    const std::size_t next = got.find(fmt::format("\"e{:05d}{}\"", i, pad), at);
    ASSERT_NE(next, std::string::npos) << "event " << i << " missing or out of order";
    at = next + 1;
  }
  int copies = 0;  // every event once: as many pads as events
  for (std::size_t k = got.find(pad); k != std::string::npos; k = got.find(pad, k + pad.size()))
    ++copies;
  EXPECT_EQ(copies, kEvents);
  EXPECT_NE(got.find("data: [DONE]"), std::string::npos);
  const openai::Exchange ex = recorder_.WaitOne(0);
  EXPECT_EQ(ex.outcome, openai::Outcome::kOk);
  EXPECT_LE(ex.client_wait_ns, ex.end_mono_ns - ex.start.mono_start_ns);
}

// A client that stops reading holds the response (the latency cause `client`): once the
// engine's writes stall, every buffer on the way is full and the gateway awaits the client; the
// time until the client reads again is the client's, and the exchange says so. (Waiting for the
// stall, not for a fixed pause, keeps a loaded machine from reading the whole body into the
// buffers only after the client has resumed.)
TEST_F(GatewayIoTest, TheTimeTheGatewayWaitsOnAStalledClientIsMeasured) {
  std::string body = kChat;
  body.insert(body.size() - 1, ",\"pad\":\"" + std::string(32u << 20, 'p') + "\"");
  std::atomic<std::size_t> written{0};
  RawEngine engine([&](tcp::socket& s) {
    beast::flat_buffer buf;
    if (!ReadRequest(s, buf)) return;
    const std::string all = Response(body);
    for (std::size_t at = 0; at < all.size(); at += 64 * 1024) {
      boost::system::error_code ec;
      asio::write(
          s, asio::buffer(all.data() + at, std::min<std::size_t>(64 * 1024, all.size() - at)), ec);
      if (ec) return;
      written += 64 * 1024;
    }
  });
  StartGateway(engine.port());
  asio::io_context io;
  tcp::socket c(io);
  c.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port_));
  WriteAll(c, RawRequest());
  std::size_t seen = 0;
  for (int still = 0; still < 10;) {  // 100 ms without progress: stalled
    std::this_thread::sleep_for(10ms);
    const std::size_t now = written.load();
    still = now == seen && now > 0 ? still + 1 : 0;
    seen = now;
  }
  ASSERT_LT(seen, body.size()) << "the engine's writes never stalled";
  std::this_thread::sleep_for(200ms);
  beast::flat_buffer buf;
  bhttp::response_parser<bhttp::string_body> p;
  p.body_limit(128u << 20);
  boost::system::error_code ec;
  bhttp::read(c, buf, p, ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(p.get().body().size(), body.size());
  const openai::Exchange ex = recorder_.WaitOne(0);
  EXPECT_GE(ex.client_wait_ns, 250'000'000u);  // the stall seen, and the 200 ms after it
  EXPECT_LE(ex.client_wait_ns, ex.end_mono_ns - ex.start.mono_start_ns);
}

// A client that reads at once costs the gateway no wait on it.
TEST_F(GatewayIoTest, AClientThatReadsAtOnceIsNoWait) {
  RawEngine engine([&](tcp::socket& s) {
    beast::flat_buffer buf;
    if (ReadRequest(s, buf)) WriteAll(s, Response(kChat));
  });
  StartGateway(engine.port());
  EXPECT_EQ(Post().result_int(), 200);
  EXPECT_LT(recorder_.WaitOne(0).client_wait_ns, 50'000'000u);
}

}  // namespace
}  // namespace infertel::gateway

namespace infertel::gateway {
namespace {

TEST(GatewayStartTest, RefusesToListenWhereItsEngineIs) {
  // A free port, used as both the engine's address and the gateway's: the gateway would
  // forward every request to itself.
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor a(
      io, boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  const std::uint16_t port = a.local_endpoint().port();
  a.close();
  GatewayOptions opts;
  UpstreamConfig uc;
  uc.url = *http::ParseUrl("http://127.0.0.1:" + std::to_string(port));
  uc.listen = {"127.0.0.1", port};
  opts.upstreams.push_back(uc);
  opts.threads = 1;
  Gateway gw(opts, std::make_shared<config::ConfigStore>(config::Resolve(nullptr).settings));
  std::string error;
  EXPECT_FALSE(gw.Start(&error));
  EXPECT_NE(error.find("engine's own address"), std::string::npos) << error;
}

}  // namespace
}  // namespace infertel::gateway
