#pragma once
// A small HTTP/1.1 server for request/response endpoints that need no streaming: the admin
// address (/healthz, /metrics, /api/config) and test peers. One io_context on its own
// thread(s); keep-alive; bodies up to 1 MiB.

#include <boost/asio/io_context.hpp>
#include <boost/beast/http.hpp>

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "http/url.h"

namespace infertel::http {

using StringRequest = boost::beast::http::request<boost::beast::http::string_body>;
using StringResponse = boost::beast::http::response<boost::beast::http::string_body>;

// Runs on a server thread; must not block for long. Thread-safe if threads > 1.
using Handler = std::function<StringResponse(const StringRequest&)>;

class SimpleServer {
 public:
  // Binds and starts serving; nullptr and *error on failure (e.g. address in use).
  static std::unique_ptr<SimpleServer> Start(const HostPort& address, Handler handler,
                                             std::string* error, int threads = 1);
  ~SimpleServer();
  SimpleServer(const SimpleServer&) = delete;
  SimpleServer& operator=(const SimpleServer&) = delete;

  std::uint16_t port() const { return port_; }
  const std::string& host() const { return host_; }
  void Stop();

 private:
  SimpleServer() = default;
  boost::asio::io_context io_;
  std::vector<std::thread> threads_;
  std::uint16_t port_ = 0;
  std::string host_;
  bool stopped_ = false;
};

// Builds a response with a body and content type.
StringResponse MakeResponse(unsigned status, std::string body,
                            std::string_view content_type = "text/plain; charset=utf-8",
                            unsigned version = 11);
// An OpenAI-style JSON error body: {"error":{"message":..,"type":..,"code":status}}.
std::string JsonErrorBody(unsigned status, std::string_view type, std::string_view message);

}  // namespace infertel::http
