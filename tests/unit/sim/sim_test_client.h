#pragma once
// Small blocking HTTP helpers for the simulator's tests (loopback only).

#include <simdjson.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace infertel::sim::testing {

namespace net = boost::asio;
namespace bhttp = boost::beast::http;
using net::ip::tcp;

struct SimResponse {
  int status = 0;
  std::string content_type;
  std::string body;
};

inline bhttp::request<bhttp::string_body> MakeSimRequest(
    bhttp::verb verb, const std::string& target, const std::string& body,
    const std::vector<std::pair<std::string, std::string>>& headers = {}) {
  bhttp::request<bhttp::string_body> req{verb, target, 11};
  req.set(bhttp::field::host, "127.0.0.1");
  for (const auto& [k, v] : headers) req.set(k, v);
  if (!body.empty()) {
    req.set(bhttp::field::content_type, "application/json");
    req.body() = body;
  }
  req.prepare_payload();
  return req;
}

inline SimResponse SimDo(std::uint16_t port, bhttp::verb verb, const std::string& target,
                         const std::string& body = "",
                         const std::vector<std::pair<std::string, std::string>>& headers = {}) {
  net::io_context ioc;
  tcp::socket sock(ioc);
  sock.connect({net::ip::make_address("127.0.0.1"), port});
  bhttp::write(sock, MakeSimRequest(verb, target, body, headers));
  boost::beast::flat_buffer buf;
  bhttp::response<bhttp::string_body> res;
  bhttp::read(sock, buf, res);
  return {static_cast<int>(res.result_int()), std::string(res[bhttp::field::content_type]),
          res.body()};
}

inline SimResponse SimPost(std::uint16_t port, const std::string& target, const std::string& body,
                           const std::vector<std::pair<std::string, std::string>>& headers = {}) {
  return SimDo(port, bhttp::verb::post, target, body, headers);
}

inline SimResponse SimGet(std::uint16_t port, const std::string& target) {
  return SimDo(port, bhttp::verb::get, target);
}

// Starts a streamed request, waits until the first bytes arrive, then closes the
// connection: a client disconnect (an abort in vLLM's terms).
inline void SimStreamThenDisconnect(std::uint16_t port, const std::string& body,
                                    const std::function<void()>& before_close = nullptr) {
  net::io_context ioc;
  tcp::socket sock(ioc);
  sock.connect({net::ip::make_address("127.0.0.1"), port});
  bhttp::write(sock, MakeSimRequest(bhttp::verb::post, "/v1/chat/completions", body));
  char buf[256];
  sock.read_some(net::buffer(buf));
  if (before_close) before_close();
  sock.close();
}

// Polls `pred` every few milliseconds until it holds or `timeout` passes.
inline bool WaitFor(const std::function<bool()>& pred,
                    std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return pred();
}

// An environment made of a map, for SimOptions::env.
inline std::function<std::optional<std::string>(std::string_view)> MapEnv(
    std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

}  // namespace infertel::sim::testing
