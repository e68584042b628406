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
#include <mutex>
#include <thread>

#include "common/http_wire.h"
#include "exchange_recorder.h"
#include "gateway/deadlines.h"
#include "gateway/gateway.h"

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
  void StartGateway(std::uint16_t engine_port,
                    const std::function<void(GatewayOptions&)>& tune = {}) {
    GatewayOptions opts;
    UpstreamConfig uc;
    uc.url = *http::ParseUrl("http://127.0.0.1:" + std::to_string(engine_port));
    uc.listen = {"127.0.0.1", 0};
    opts.upstreams.push_back(uc);
    opts.threads = 1;
    if (tune) tune(opts);
    gateway_ = std::make_unique<Gateway>(
        opts, std::make_shared<config::ConfigStore>(config::Resolve(nullptr).settings));
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

  bhttp::response<bhttp::string_body> Post(boost::system::error_code* read_error = nullptr) {
    asio::io_context io;
    tcp::socket s(io);
    s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port_));
    WriteAll(s, RawRequest());
    beast::flat_buffer buf;
    bhttp::response<bhttp::string_body> res;
    boost::system::error_code ec;
    bhttp::read(s, buf, res, ec);
    if (read_error) *read_error = ec;
    return res;
  }

  ExchangeRecorder recorder_;
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

TEST_F(GatewayIoTest, EngineThatNeverAnswersGets504AfterTheResponseTimeout) {
  RawEngine engine([](tcp::socket& s) {
    beast::flat_buffer buf;
    ReadRequest(s, buf);
    std::this_thread::sleep_for(2s);  // never answers in time
  });
  StartGateway(engine.port(), [](GatewayOptions& o) { o.response_timeout = 300ms; });
  auto t0 = std::chrono::steady_clock::now();
  auto res = Post();
  auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(res.result_int(), 504);
  EXPECT_NE(res.body().find("GatewayTimeout"), std::string::npos);
  EXPECT_GE(waited, 250ms);
  EXPECT_LT(waited, 1500ms);
  Exchange ex = recorder_.WaitOne();
  EXPECT_EQ(ex.outcome, Outcome::kUpstreamTimeout);
}

TEST_F(GatewayIoTest, BodyThatStallsGetsAClean504NotACutBody) {
  RawEngine engine([](tcp::socket& s) {
    beast::flat_buffer buf;
    ReadRequest(s, buf);
    WriteAll(s, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n");
    WriteAll(s, "{\"id\":");  // and then nothing
    std::this_thread::sleep_for(2s);
  });
  StartGateway(engine.port(), [](GatewayOptions& o) { o.stream_idle_timeout = 300ms; });
  auto res = Post();
  EXPECT_EQ(res.result_int(), 504);
  EXPECT_EQ(res[bhttp::field::content_type], "application/json");
  Exchange ex = recorder_.WaitOne();
  EXPECT_EQ(ex.outcome, Outcome::kUpstreamTimeout);
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
  Exchange ex = recorder_.WaitOne();
  EXPECT_EQ(ex.outcome, Outcome::kUpstreamUnavailable);
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
  Exchange ex = recorder_.WaitOne();
  EXPECT_EQ(ex.outcome, Outcome::kClientAborted);
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
  EXPECT_EQ(recorder_.WaitOne(0).outcome, Outcome::kOk);
  EXPECT_EQ(recorder_.WaitOne(1).outcome, Outcome::kOk);
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
  for (int i = 0; i < 3; ++i) EXPECT_EQ(recorder_.WaitOne(i).outcome, Outcome::kOk);
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
  EXPECT_EQ(recorder_.WaitOne(0).outcome, Outcome::kOk);
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
    Exchange ex = recorder_.WaitOne(i);
    EXPECT_EQ(ex.outcome, Outcome::kOk) << "response " << i;
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
  EXPECT_EQ(recorder_.WaitOne(0).outcome, Outcome::kOk);
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
        "\"model\":\"m\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"e{:05d}{}\"}}}}]}}"
        "\n\n",
        i, pad);
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
  EXPECT_EQ(recorder_.WaitOne(0).outcome, Outcome::kOk);
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
