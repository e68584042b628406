#include "http/simple_server.h"

#include "core/json.h"
#include "core/thread_name.h"

#include <boost/asio.hpp>
#include <boost/beast.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace infertel::http {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;

namespace {

asio::awaitable<void> Serve(tcp::socket socket, std::shared_ptr<Handler> handler) {
  beast::tcp_stream stream(std::move(socket));
  beast::flat_buffer buffer;
  boost::system::error_code ec;
  for (;;) {
    bhttp::request_parser<bhttp::string_body> parser;
    parser.body_limit(1 << 20);
    stream.expires_after(std::chrono::seconds(60));
    co_await bhttp::async_read(stream, buffer, parser,
                               asio::redirect_error(asio::use_awaitable, ec));
    if (ec) break;
    StringRequest req = parser.release();
    StringResponse res;
    try {
      res = (*handler)(req);
    } catch (const std::exception& e) {
      res = MakeResponse(500, JsonErrorBody(500, "InternalServerError", e.what()),
                         "application/json");
    }
    res.version(req.version());
    res.keep_alive(req.keep_alive());
    res.prepare_payload();
    co_await bhttp::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
    if (ec || !req.keep_alive()) break;
  }
  stream.socket().shutdown(tcp::socket::shutdown_send, ec);
}

asio::awaitable<void> Accept(tcp::acceptor acceptor, std::shared_ptr<Handler> handler) {
  for (;;) {
    boost::system::error_code ec;
    tcp::socket socket =
        co_await acceptor.async_accept(asio::redirect_error(asio::use_awaitable, ec));
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
    if (ec) continue;
    asio::co_spawn(acceptor.get_executor(), Serve(std::move(socket), handler), asio::detached);
  }
}

}  // namespace

std::unique_ptr<SimpleServer> SimpleServer::Start(const HostPort& address, Handler handler,
                                                  std::string* error, int threads) {
  std::unique_ptr<SimpleServer> s(new SimpleServer());
  boost::system::error_code ec;
  auto ip = asio::ip::make_address(address.host == "localhost" ? "127.0.0.1" : address.host, ec);
  if (ec) {
    *error = fmt::format("bad listen host '{}': {}", address.host, ec.message());
    return nullptr;
  }
  tcp::acceptor acceptor(s->io_);
  tcp::endpoint ep(ip, address.port);
  acceptor.open(ep.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(ep, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    *error = fmt::format("cannot listen on {}:{}: {}", address.host, address.port, ec.message());
    return nullptr;
  }
  s->port_ = acceptor.local_endpoint().port();
  s->host_ = address.host;
  asio::co_spawn(s->io_, Accept(std::move(acceptor), std::make_shared<Handler>(std::move(handler))),
                 asio::detached);
  for (int i = 0; i < std::max(1, threads); ++i)
    s->threads_.emplace_back([io = &s->io_] {
      NameThisThread("admin-http");
      io->run();
    });
  return s;
}

SimpleServer::~SimpleServer() { Stop(); }

void SimpleServer::Stop() {
  if (stopped_) return;
  stopped_ = true;
  io_.stop();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

StringResponse MakeResponse(unsigned status, std::string body, std::string_view content_type,
                            unsigned version) {
  StringResponse res{static_cast<bhttp::status>(status), version};
  res.set(bhttp::field::content_type, content_type);
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

std::string JsonErrorBody(unsigned status, std::string_view type, std::string_view message) {
  std::string out = R"({"error":{"message":)";
  AppendJsonString(&out, message);
  out += R"(,"type":)";
  AppendJsonString(&out, type);
  out += fmt::format(R"(,"param":null,"code":{}}}}})", status);
  return out;
}

}  // namespace infertel::http
