#pragma once
// The simulator's HTTP/1.1 server: accepts connections on its own io_context threads and runs
// one coroutine per connection (keep-alive), calling a surface-specific handler per request.
// Kept inside sim/ so the simulator shares nothing with the agent's data path.

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace infertel::sim {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

using HttpRequest = http::request<http::string_body>;

// One client connection, as seen by a handler. All methods must be called from the
// connection's coroutine (its strand), except the function returned by Waker().
class HttpConnection {
 public:
  HttpConnection(beast::tcp_stream stream);
  ~HttpConnection();

  // Writes a complete response. Returns false if the write failed (peer gone).
  net::awaitable<bool> Reply(http::status status, std::string_view content_type, std::string body,
                             bool keep_alive);
  // Chunked streaming: header, then one chunk per call (flushed), then the last chunk.
  net::awaitable<bool> BeginStream(http::status status, std::string_view content_type,
                                   bool keep_alive);
  net::awaitable<bool> WriteChunk(std::string_view data);
  net::awaitable<bool> EndStream();

  // A function that wakes Wait(); callable from any thread, any number of times, also
  // after the connection is gone (then it does nothing useful, harmlessly).
  std::function<void()> Waker();
  // Suspends until Waker() was called (or was called since the last Wait()) or the
  // disconnect watch fired.
  net::awaitable<void> Wait();

  // Keeps a read pending while a response is being produced, so that a peer closing the
  // connection is noticed at once (like vLLM's disconnect listener). Bytes that arrive
  // meanwhile (a pipelined request) are kept for the next request.
  void StartDisconnectWatch();
  // Ends the watch; must be awaited before the next request is read or a reply is written
  // after the handler is done.
  net::awaitable<void> StopDisconnectWatch();
  bool peer_closed() const { return peer_closed_; }

  beast::tcp_stream& stream() { return stream_; }
  beast::flat_buffer& buffer() { return buffer_; }

 private:
  struct WakeState;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::shared_ptr<WakeState> wake_;
  bool watching_ = false;
  bool watch_done_ = true;
  bool peer_closed_ = false;
  std::unique_ptr<http::response_serializer<http::empty_body>> stream_serializer_;
  std::unique_ptr<http::response<http::empty_body>> stream_header_;
};

// Returns whether to keep the connection open.
using HttpHandler = std::function<net::awaitable<bool>(HttpConnection&, HttpRequest&)>;

class HttpServer {
 public:
  // Binds host:port (port 0: chosen by the OS) and starts `threads` io threads. Returns null
  // and sets *error on failure.
  static std::unique_ptr<HttpServer> Start(const std::string& host, std::uint16_t port, int threads,
                                           HttpHandler handler, std::string* error);
  ~HttpServer();
  std::uint16_t port() const { return port_; }
  // Stops accepting and stops the io threads; idempotent. Open connections are dropped.
  void Stop();
  // Closes the listener only: requests being handled go on (a draining shutdown).
  void StopAccepting();
  // Requests being handled now.
  std::size_t InFlight() const { return in_flight_.load(); }

 private:
  HttpServer() = default;
  net::awaitable<void> AcceptLoop();
  net::awaitable<void> Session(net::ip::tcp::socket socket);

  net::io_context ioc_;
  // The accept loop and the listener's close run on this strand: with several threads on
  // ioc_, a close posted to ioc_ itself could run while another thread re-armed the accept
  // on the same descriptor (a use after free in the reactor, seen as a rare crash at Stop).
  net::strand<net::io_context::executor_type> accept_strand_{net::make_strand(ioc_)};
  std::unique_ptr<net::ip::tcp::acceptor> acceptor_;
  HttpHandler handler_;
  std::vector<std::thread> threads_;
  std::uint16_t port_ = 0;
  bool stopped_ = false;
  std::atomic<std::size_t> in_flight_{0};
};

}  // namespace infertel::sim
