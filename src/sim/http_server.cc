#include "sim/http_server.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/chunk_encode.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <chrono>

namespace infertel::sim {

using boost::system::error_code;
using net::ip::tcp;

struct HttpConnection::WakeState {
  explicit WakeState(net::any_io_executor ex) : timer(ex) {}
  net::steady_timer timer;
  bool pending = false;  // touched only on the connection's strand
};

HttpConnection::HttpConnection(beast::tcp_stream stream)
    : stream_(std::move(stream)), wake_(std::make_shared<WakeState>(stream_.get_executor())) {}

HttpConnection::~HttpConnection() = default;

std::function<void()> HttpConnection::Waker() {
  std::weak_ptr<WakeState> weak = wake_;
  net::any_io_executor ex = stream_.get_executor();
  return [weak, ex] {
    net::post(ex, [weak] {
      if (auto w = weak.lock()) {
        w->pending = true;
        w->timer.cancel();
      }
    });
  };
}

net::awaitable<void> HttpConnection::Wait() {
  auto w = wake_;
  if (w->pending) {
    w->pending = false;
    co_return;
  }
  w->timer.expires_at(net::steady_timer::time_point::max());
  error_code ec;
  co_await w->timer.async_wait(net::redirect_error(net::use_awaitable, ec));
  w->pending = false;
}

void HttpConnection::StartDisconnectWatch() {
  if (watching_) return;
  watching_ = true;
  watch_done_ = false;
  auto mb = buffer_.prepare(4096);
  std::weak_ptr<WakeState> weak = wake_;
  stream_.socket().async_read_some(mb, [this, weak](error_code ec, std::size_t n) {
    auto w = weak.lock();
    if (!w) return;  // the connection is being destroyed
    watch_done_ = true;
    if (!ec) {
      buffer_.commit(n);
    } else if (ec != net::error::operation_aborted) {
      peer_closed_ = true;
    }
    w->pending = true;
    w->timer.cancel();
  });
}

net::awaitable<void> HttpConnection::StopDisconnectWatch() {
  if (!watching_) co_return;
  if (!watch_done_) {
    error_code ec;
    stream_.socket().cancel(ec);
    while (!watch_done_) co_await Wait();
  }
  watching_ = false;
}

net::awaitable<bool> HttpConnection::Reply(http::status status, std::string_view content_type,
                                           std::string body, bool keep_alive) {
  http::response<http::string_body> res{status, 11};
  res.set(http::field::server, "uvicorn");
  if (!content_type.empty()) res.set(http::field::content_type, content_type);
  res.keep_alive(keep_alive);
  res.body() = std::move(body);
  res.prepare_payload();
  error_code ec;
  co_await http::async_write(stream_, res, net::redirect_error(net::use_awaitable, ec));
  co_return !ec;
}

net::awaitable<bool> HttpConnection::BeginStream(http::status status, std::string_view content_type,
                                                 bool keep_alive) {
  stream_header_ = std::make_unique<http::response<http::empty_body>>(status, 11);
  stream_header_->set(http::field::server, "uvicorn");
  stream_header_->set(http::field::content_type, content_type);
  stream_header_->keep_alive(keep_alive);
  stream_header_->chunked(true);
  stream_serializer_ =
      std::make_unique<http::response_serializer<http::empty_body>>(*stream_header_);
  error_code ec;
  co_await http::async_write_header(stream_, *stream_serializer_,
                                    net::redirect_error(net::use_awaitable, ec));
  co_return !ec;
}

net::awaitable<bool> HttpConnection::WriteChunk(std::string_view data) {
  error_code ec;
  co_await net::async_write(stream_, http::make_chunk(net::buffer(data.data(), data.size())),
                            net::redirect_error(net::use_awaitable, ec));
  co_return !ec;
}

net::awaitable<bool> HttpConnection::EndStream() {
  error_code ec;
  co_await net::async_write(stream_, http::make_chunk_last(),
                            net::redirect_error(net::use_awaitable, ec));
  stream_serializer_.reset();
  stream_header_.reset();
  co_return !ec;
}

std::unique_ptr<HttpServer> HttpServer::Start(const std::string& host, std::uint16_t port,
                                              int threads, HttpHandler handler,
                                              std::string* error) {
  std::unique_ptr<HttpServer> s(new HttpServer());
  s->handler_ = std::move(handler);
  error_code ec;
  auto addr = net::ip::make_address(host == "localhost" ? "127.0.0.1" : host, ec);
  if (ec) {
    *error = "bad listen host '" + host + "': " + ec.message();
    return nullptr;
  }
  tcp::endpoint ep{addr, port};
  s->acceptor_ = std::make_unique<tcp::acceptor>(s->ioc_);
  s->acceptor_->open(ep.protocol(), ec);
  if (!ec) s->acceptor_->set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) s->acceptor_->bind(ep, ec);
  if (!ec) s->acceptor_->listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    *error = "cannot listen on " + host + ":" + std::to_string(port) + ": " + ec.message();
    return nullptr;
  }
  s->port_ = s->acceptor_->local_endpoint().port();
  net::co_spawn(s->accept_strand_, s->AcceptLoop(), net::detached);
  for (int i = 0; i < std::max(1, threads); ++i) {
    s->threads_.emplace_back([srv = s.get()] { srv->ioc_.run(); });
  }
  return s;
}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Stop() {
  if (stopped_) return;
  stopped_ = true;
  net::post(accept_strand_, [this] {
    error_code ec;
    acceptor_->close(ec);
  });
  ioc_.stop();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void HttpServer::StopAccepting() {
  net::post(accept_strand_, [this] {
    error_code ec;
    acceptor_->close(ec);
  });
}

net::awaitable<void> HttpServer::AcceptLoop() {
  for (;;) {
    error_code ec;
    tcp::socket socket = co_await acceptor_->async_accept(
        net::make_strand(ioc_), net::redirect_error(net::use_awaitable, ec));
    if (ec) {
      if (!acceptor_->is_open()) co_return;
      continue;
    }
    socket.set_option(tcp::no_delay(true), ec);
    auto ex = socket.get_executor();
    net::co_spawn(ex, Session(std::move(socket)), net::detached);
  }
}

net::awaitable<void> HttpServer::Session(tcp::socket socket) {
  HttpConnection conn{beast::tcp_stream(std::move(socket))};
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(64u << 20);
    error_code ec;
    conn.stream().expires_after(std::chrono::minutes(10));
    co_await http::async_read(conn.stream(), conn.buffer(), parser,
                              net::redirect_error(net::use_awaitable, ec));
    conn.stream().expires_never();
    if (ec) break;
    HttpRequest req = parser.release();
    in_flight_.fetch_add(1);
    bool keep = co_await handler_(conn, req);
    in_flight_.fetch_sub(1);
    co_await conn.StopDisconnectWatch();
    if (!keep || conn.peer_closed() || !req.keep_alive()) break;
  }
  error_code ec;
  conn.stream().socket().shutdown(tcp::socket::shutdown_send, ec);
}

}  // namespace infertel::sim
