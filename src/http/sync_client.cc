#include "http/sync_client.h"

#include "http/body_room.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <cctype>
#include <optional>

namespace infertel::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;

const std::string* SyncResponse::Header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (k == name) return &v;
  return nullptr;
}

// The operations are asynchronous on a private io_context, run to completion here: that is
// what lets beast::tcp_stream enforce a timeout on each phase.
struct SyncClient::Impl {
  SyncTimeouts timeouts;
  asio::io_context io;
  std::optional<beast::tcp_stream> stream;
  std::string connected_to;  // host:port of the open connection
  beast::flat_buffer buffer;
  SyncError last_error = SyncError::kNone;

  bool Failed(SyncError kind, std::string message, std::string* error) {
    last_error = kind;
    *error = std::move(message);
    return false;
  }

  bool Connect(const Url& url, std::string* error) {
    stream.emplace(io);
    tcp::resolver resolver(io);
    beast::error_code ec;
    tcp::resolver::results_type results;
    resolver.async_resolve(url.host, std::to_string(url.port),
                           [&](beast::error_code e, tcp::resolver::results_type r) {
                             ec = e;
                             results = std::move(r);
                           });
    io.restart();
    io.run_for(timeouts.connect);
    if (!io.stopped()) {
      resolver.cancel();
      io.run();
      return Failed(SyncError::kTimeout, "resolve timed out", error);
    }
    if (ec) return Failed(SyncError::kResolve, "resolve " + url.host + ": " + ec.message(), error);
    stream->expires_after(timeouts.connect);
    stream->async_connect(results, [&](beast::error_code e, const tcp::endpoint&) { ec = e; });
    io.restart();
    io.run();
    if (ec) {
      stream.reset();
      return Failed(ec == beast::error::timeout ? SyncError::kTimeout : SyncError::kConnect,
                    "connect " + url.HostPort() + ": " + ec.message(), error);
    }
    connected_to = url.HostPort();
    buffer.clear();
    return true;
  }

  void Close() {
    if (stream) {
      beast::error_code ignored;
      stream->socket().shutdown(tcp::socket::shutdown_both, ignored);
      stream->close();
    }
    stream.reset();
    connected_to.clear();
  }

  // One attempt on the current connection. `stale` is set when the failure looks like the
  // peer closed an idle keep-alive connection (worth one reconnect).
  bool Exchange(bhttp::request<bhttp::string_body>& req, SyncResponse* out, std::string* error,
                std::size_t max_body, bool* stale) {
    beast::error_code ec;
    stream->expires_after(timeouts.write);
    bhttp::async_write(*stream, req, [&](beast::error_code e, std::size_t) { ec = e; });
    io.restart();
    io.run();
    if (ec) {
      *stale = ec != beast::error::timeout;
      return Failed(ec == beast::error::timeout ? SyncError::kTimeout : SyncError::kWrite,
                    "write: " + ec.message(), error);
    }
    bhttp::response_parser<bhttp::string_body> parser;
    parser.body_limit(max_body);
    stream->expires_after(timeouts.read);
    // Header first, then the body with room for it: a scrape of an engine's /metrics is tens
    // to hundreds of KB (http/body_room.h).
    bhttp::async_read_header(*stream, buffer, parser,
                             [&](beast::error_code e, std::size_t) { ec = e; });
    io.restart();
    io.run();
    if (!ec && !parser.is_done()) {
      MakeRoomForBody(buffer, parser);
      bhttp::async_read(*stream, buffer, parser, [&](beast::error_code e, std::size_t) { ec = e; });
      io.restart();
      io.run();
      ReleaseBodyRoom(buffer, 0);
    }
    if (ec) {
      *stale = (ec == bhttp::error::end_of_stream || ec == asio::error::connection_reset ||
                ec == asio::error::eof) &&
               !parser.got_some();
      const SyncError kind = ec == bhttp::error::body_limit ? SyncError::kBodyTooLarge
                             : ec == beast::error::timeout  ? SyncError::kTimeout
                                                            : SyncError::kRead;
      return Failed(kind, "read: " + ec.message(), error);
    }
    auto res = parser.release();
    out->status = static_cast<int>(res.result_int());
    out->body = std::move(res.body());
    out->headers.clear();
    for (const auto& f : res) {
      std::string name(f.name_string());
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      out->headers.emplace_back(std::move(name), std::string(f.value()));
    }
    if (!res.keep_alive()) Close();
    return true;
  }
};

SyncClient::SyncClient(SyncTimeouts timeouts) : impl_(std::make_unique<Impl>()) {
  impl_->timeouts = timeouts;
}
SyncClient::~SyncClient() { impl_->Close(); }
void SyncClient::Close() { impl_->Close(); }
SyncError SyncClient::last_error() const { return impl_->last_error; }

bool SyncClient::Send(std::string_view method, const Url& url,
                      const std::vector<std::pair<std::string, std::string>>& headers,
                      std::string_view content_type, std::string body, SyncResponse* out,
                      std::string* error, std::size_t max_body) {
  impl_->last_error = SyncError::kNone;
  if (url.scheme != "http")
    return impl_->Failed(SyncError::kUnsupportedScheme,
                         "unsupported scheme " + url.scheme + " (only http)", error);
  bhttp::request<bhttp::string_body> req;
  req.method_string(method);
  req.target(url.path.empty() ? "/" : url.path);
  req.version(11);
  req.set(bhttp::field::host, url.HostPort());
  req.keep_alive(true);
  for (const auto& [k, v] : headers) req.set(k, v);
  if (!body.empty() || method == "POST" || method == "PUT") {
    if (!content_type.empty()) req.set(bhttp::field::content_type, content_type);
    req.body() = std::move(body);
    req.prepare_payload();
  }
  for (int attempt = 0; attempt < 2; ++attempt) {
    const bool reused = impl_->stream.has_value() && impl_->connected_to == url.HostPort();
    if (!reused) {
      impl_->Close();
      if (!impl_->Connect(url, error)) return false;
    }
    bool stale = false;
    if (impl_->Exchange(req, out, error, max_body, &stale)) return true;
    impl_->Close();
    // Only a reused connection that the peer had closed is retried, once.
    if (!(reused && stale)) return false;
  }
  return false;
}

}  // namespace infertel::http
