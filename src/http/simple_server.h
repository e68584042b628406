#pragma once
// A small HTTP/1.1 server for request/response endpoints that need no streaming: the admin
// address (/healthz, /metrics, /api/config) and test peers. One io_context on its own
// thread(s); keep-alive; bodies and headers bounded (ServerLimits). A request past a bound is
// answered (413, 414 or 431), counted, and its connection closed once the client has had
// time to read the answer; so is one whose framing breaks RFC 9112's rules (http/framing.h:
// 400 or 501) or, when asked, whose body has a Content-Encoding (415). Idle and slow
// connections are bounded by time and number (http/connection_guard.h).

#include <boost/asio/io_context.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/stats.h"
#include "http/connection_guard.h"
#include "http/framing.h"
#include "http/url.h"

namespace infertel::http {

struct ServerLimits {
  std::size_t body_bytes = 1u << 20;    // 413 past it (from Content-Length when there is one)
  std::size_t header_bytes = 8u << 10;  // request line and fields: 414 or 431 past it
  ConnectionLimits connections{.max_connections = 64};
  // 415 for a body with a Content-Encoding other than identity: for servers whose handlers
  // do not inflate (the admin address); off for test peers that read gzip bodies themselves.
  bool refuse_content_encoding = false;
};

// Requests refused before they reached the handler.
struct ServerStats {
  std::atomic<std::uint64_t> body_too_large{0};    // 413
  std::atomic<std::uint64_t> target_too_long{0};   // 414: the request line alone is too long
  std::atomic<std::uint64_t> header_too_large{0};  // 431
  std::atomic<std::uint64_t> content_encoding{0};  // 415: a body with a Content-Encoding
  FramingStats framing;                            // 400 or 501 (http/framing.h)
  ConnectionStats connections;                     // closed by the connection guard
  // `prefix`_refused_requests{reason="body_too_large"|"target_too_long"|"header_too_large"|
  // "unsupported_content_encoding"|framing reasons}, `prefix`_refused_connections{reason} and
  // `prefix`_open_connections.
  void Register(StatsRegistry* registry, std::string_view prefix) const;
};

using StringRequest = boost::beast::http::request<boost::beast::http::string_body>;
using StringResponse = boost::beast::http::response<boost::beast::http::string_body>;

// Runs on a server thread; must not block for long. Thread-safe if threads > 1.
using Handler = std::function<StringResponse(const StringRequest&)>;

class SimpleServer {
 public:
  // Binds and starts serving; nullptr and *error on failure (e.g. address in use).
  static std::unique_ptr<SimpleServer> Start(const HostPort& address, Handler handler,
                                             std::string* error, int threads = 1,
                                             ServerLimits limits = {});
  ~SimpleServer();
  SimpleServer(const SimpleServer&) = delete;
  SimpleServer& operator=(const SimpleServer&) = delete;

  std::uint16_t port() const { return port_; }
  const std::string& host() const { return host_; }
  const ServerStats& stats() const { return *stats_; }
  void Stop();

 private:
  SimpleServer() = default;
  boost::asio::io_context io_;
  std::vector<std::thread> threads_;
  std::uint16_t port_ = 0;
  std::string host_;
  std::shared_ptr<ServerStats> stats_ = std::make_shared<ServerStats>();
  bool stopped_ = false;
};

// Builds a response with a body and content type.
StringResponse MakeResponse(unsigned status, std::string body,
                            std::string_view content_type = "text/plain; charset=utf-8",
                            unsigned version = 11);
// An OpenAI-style JSON error body: {"error":{"message":..,"type":..,"code":status}}.
std::string JsonErrorBody(unsigned status, std::string_view type, std::string_view message);

}  // namespace infertel::http
