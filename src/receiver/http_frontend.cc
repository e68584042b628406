#include <fmt/format.h>
#include <boost/asio.hpp>
#include <boost/beast.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <limits>
#include <memory>
#include <optional>

#include "core/thread_name.h"
#include "http/body_room.h"
#include "http/connection_guard.h"
#include "http/framing.h"
#include "http/read_header.h"
#include "http/url.h"
#include "otlp/gzip.h"
#include "otlp/json.h"
#include "receiver/frontends.h"
#include "receiver/trace_decoder.h"

namespace infertel::receiver::internal {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;
using Response = bhttp::response<bhttp::string_body>;

enum class Encoding { kProtobuf, kJson };

constexpr std::string_view kProtobufType = "application/x-protobuf";
constexpr std::string_view kJsonType = "application/json";
// google.rpc.Code values used in error bodies.
constexpr int kInvalidArgument = 3;
constexpr int kResourceExhausted = 8;
constexpr int kUnimplemented = 12;
constexpr int kUnavailable = 14;

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// The media type without parameters, lower case.
std::string MediaType(std::string_view header) {
  std::string_view t = header.substr(0, header.find(';'));
  while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
  while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
  return Lower(t);
}

std::optional<Signal> SignalForPath(std::string_view target) {
  std::string_view path = target.substr(0, target.find('?'));
  if (path == "/v1/traces") return Signal::kTraces;
  if (path == "/v1/logs") return Signal::kLogs;
  if (path == "/v1/metrics") return Signal::kMetrics;
  return std::nullopt;
}

std::optional<Encoding> EncodingFor(std::string_view content_type) {
  const std::string t = MediaType(content_type);
  if (t == kProtobufType || t == "application/protobuf") return Encoding::kProtobuf;
  if (t == kJsonType) return Encoding::kJson;
  return std::nullopt;
}

Response Make(bhttp::status status, std::string_view content_type, std::string body) {
  Response res{status, 11};
  if (!content_type.empty()) res.set(bhttp::field::content_type, content_type);
  res.body() = std::move(body);
  return res;
}

// An OTLP/HTTP error: google.rpc.Status in the request's encoding.
Response StatusResponse(bhttp::status status, Encoding enc, int code, std::string_view message) {
  if (enc == Encoding::kJson) return Make(status, kJsonType, StatusJson(code, message));
  return Make(status, kProtobufType, StatusProto(code, message));
}

Response PlainError(bhttp::status status, std::string_view message) {
  return Make(status, "text/plain; charset=utf-8", std::string(message) + "\n");
}

// 503 with Retry-After: retryable for every OTLP/HTTP exporter (OTLP specification,
// "Retryable Response Codes").
Response Throttled(Encoding enc) {
  Response r =
      StatusResponse(bhttp::status::service_unavailable, enc, kUnavailable, kThrottledMessage);
  r.set(bhttp::field::retry_after, std::to_string(kRetryAfterSeconds));
  return r;
}

template <typename Request>
Response DecodeAndAccept(Signal signal, Encoding enc, std::string_view body, Ingestor* ingestor) {
  // Decoded onto an arena that travels with the items (pipeline/held.h).
  pipeline::Held<Request> held;
  std::string error;
  bool ok;
  LimitCounts limited;  // what the limits dropped while decoding
  if (enc == Encoding::kProtobuf) {
    ok = DecodeProtobuf(body, &held, &ingestor->span_limits(), &limited);
    if (!ok) error = fmt::format("cannot decode {} as protobuf", Request::descriptor()->name());
  } else {
    held = pipeline::Held<Request>::Make();
    otlp_json::DecodeBounds bounds{ingestor->span_limits().value_element_count};
    ok = otlp_json::Decode(body, held.request, &error, &bounds);
    limited.value_elements += bounds.skipped;
    if (!ok) error = fmt::format("cannot decode OTLP/JSON: {}", error);
  }
  if (!ok) {
    ingestor->CountMalformed(Transport::kHttp, signal);
    return StatusResponse(bhttp::status::bad_request, enc, kInvalidArgument, error);
  }
  const IngestResult result = ingestor->Accept(Transport::kHttp, std::move(held), limited);
  // No room for all of it after all (another request took the room since the look before the
  // body was read): nothing was taken; the sender retries after Retry-After.
  if (result.refused) return Throttled(enc);
  if (result.all_rejected())
    return StatusResponse(bhttp::status::bad_request, enc, kInvalidArgument, result.error_message);
  if (enc == Encoding::kJson)
    return Make(bhttp::status::ok, kJsonType, ResponseJson(signal, result));
  return Make(bhttp::status::ok, kProtobufType, ResponseProto(result));
}

// Checks what can be checked from the header alone; an error response, or nullopt to go on.
std::optional<Response> CheckHeader(const bhttp::request_parser<bhttp::string_body>& parser,
                                    std::size_t max_bytes, Ingestor* ingestor,
                                    std::optional<Signal>* signal, Encoding* enc, bool* gzip) {
  const auto& req = parser.get();
  *signal = SignalForPath(req.target());
  if (!*signal)
    return PlainError(bhttp::status::not_found,
                      "unknown path; use /v1/traces, /v1/logs or /v1/metrics");
  if (req.method() != bhttp::verb::post) {
    Response r = PlainError(bhttp::status::method_not_allowed, "use POST");
    r.set(bhttp::field::allow, "POST");
    return r;
  }
  auto e = EncodingFor(req[bhttp::field::content_type]);
  if (!e) {
    ingestor->CountMalformed(Transport::kHttp, **signal);
    return PlainError(bhttp::status::unsupported_media_type,
                      "Content-Type must be application/x-protobuf or application/json");
  }
  *enc = *e;
  const std::string coding = MediaType(req[bhttp::field::content_encoding]);
  if (coding == "gzip") {
    *gzip = true;
  } else if (!coding.empty() && coding != "identity") {
    ingestor->CountMalformed(Transport::kHttp, **signal);
    return StatusResponse(bhttp::status::unsupported_media_type, *enc, kUnimplemented,
                          fmt::format("unsupported Content-Encoding '{}'", coding));
  }
  if (parser.content_length() && *parser.content_length() > max_bytes) {
    ingestor->CountMalformed(Transport::kHttp, **signal);
    return StatusResponse(bhttp::status::payload_too_large, *enc, kResourceExhausted,
                          fmt::format("body larger than {} bytes", max_bytes));
  }
  return std::nullopt;
}

Response HandleBody(Signal signal, Encoding enc, bool gzip, std::string_view body,
                    std::size_t max_bytes, Ingestor* ingestor) {
  std::string inflated;
  if (gzip) {
    if (!otlp::GzipDecompress(body, &inflated, max_bytes)) {
      ingestor->CountMalformed(Transport::kHttp, signal);
      // GzipDecompress stops as soon as the output passes the bound, so a longer output means
      // the body was too large rather than corrupt.
      if (inflated.size() > max_bytes)
        return StatusResponse(bhttp::status::payload_too_large, enc, kResourceExhausted,
                              fmt::format("gzip body inflates beyond {} bytes", max_bytes));
      return StatusResponse(bhttp::status::bad_request, enc, kInvalidArgument,
                            "gzip body is corrupt");
    }
    body = inflated;
  }
  switch (signal) {
    case Signal::kTraces:
      return DecodeAndAccept<TracesRequest>(signal, enc, body, ingestor);
    case Signal::kLogs:
      return DecodeAndAccept<LogsRequest>(signal, enc, body, ingestor);
    case Signal::kMetrics:
      return DecodeAndAccept<MetricsRequest>(signal, enc, body, ingestor);
  }
  return PlainError(bhttp::status::internal_server_error, "unknown signal");
}

// Reads the body that `header` announced and throws it away; false if it could not be read
// whole (longer than the limit, or the connection failed). A body of known length is read
// into the connection's buffer and dropped from it, without the parser, which would copy it
// once more into a body; bytes past it (a pipelined next request) stay in the buffer. A
// chunked body goes through the parser and a small scratch buffer.
asio::awaitable<bool> DiscardBody(beast::tcp_stream& stream, beast::flat_buffer& buffer,
                                  bhttp::request_parser<bhttp::string_body>&& header,
                                  http::ConnectionSlot& slot) {
  if (const auto length = header.content_length()) {
    std::uint64_t left = *length;  // all of it: only the header was read, and within the limit
    http::MakeRoomForBody(buffer, header);
    boost::system::error_code ec;
    for (;;) {
      const std::size_t buffered =
          static_cast<std::size_t>(std::min<std::uint64_t>(left, buffer.size()));
      buffer.consume(buffered);
      left -= buffered;
      if (left == 0) break;
      const std::size_t want =
          static_cast<std::size_t>(std::min<std::uint64_t>(left, http::kBodyReadRoom));
      const std::size_t n = co_await stream.async_read_some(
          buffer.prepare(want), asio::redirect_error(asio::use_awaitable, ec));
      if (ec) break;
      buffer.commit(n);
    }
    http::ReleaseBodyRoom(buffer, 0);
    http::CountBodyTimeout(ec, slot);
    co_return !ec;
  }
  constexpr std::size_t kScratch = 16 * 1024;
  bhttp::request_parser<bhttp::buffer_body> discard(std::move(header));  // no body read yet
  auto scratch = std::make_unique<char[]>(kScratch);
  http::MakeRoomForBody(buffer, discard);
  boost::system::error_code ec;
  while (!ec && !discard.is_done()) {
    discard.get().body().data = scratch.get();
    discard.get().body().size = kScratch;
    co_await bhttp::async_read(stream, buffer, discard,
                               asio::redirect_error(asio::use_awaitable, ec));
    if (ec == bhttp::error::need_buffer) ec = {};  // the scratch is full: again
  }
  http::ReleaseBodyRoom(buffer, 0);
  http::CountBodyTimeout(ec, slot);
  co_return !ec;
}

// One wait in the front end's RoomWaiter, until the sink may have room or `deadline`: false
// at once when the waiter is full (kMaxWaiting) or stopped. The waiter resumes the coroutine
// on its own executor exactly once. `count`: the request is counted as one that waited.
asio::awaitable<bool> WaitOnce(Signal signal, RoomWaiter::Clock::time_point deadline, bool count,
                               HttpFrontend* self) {
  return asio::async_initiate<decltype(asio::use_awaitable), void(bool)>(
      [self, signal, deadline, count](auto handler) {
        // The waiter keeps copyable callbacks; the coroutine's handler is move-only.
        auto held = std::make_shared<decltype(handler)>(std::move(handler));
        auto resume = [held](bool waited) {
          auto ex = asio::get_associated_executor(*held);
          asio::post(ex, [h = std::move(*held), waited]() mutable { h(waited); });
        };
        if (!self->waiter()->Add(
                signal, 0, deadline, [resume] { resume(true); }, count))
          resume(false);
      },
      asio::use_awaitable);
}

// Waits while `signal`'s sink stays saturated, up to options().saturated_wait, with the body
// still unread in the kernel. Called once the sink was found saturated, so the first wait
// starts without asking again (the waiter's first look follows the request's count on the
// bell). A resumed request looks at the sink again itself before it goes on: the waiter
// resumed it from another thread, and a request resumed just before it may have taken the
// room since (gRPC calls are decoded on the waiter's thread, so they need not).
asio::awaitable<void> WaitForRoom(Signal signal, HttpFrontend* self) {
  const auto deadline = RoomWaiter::Clock::now() + self->options().saturated_wait;
  bool first = true;
  do {
    if (!co_await WaitOnce(signal, deadline, first, self)) break;
    first = false;
  } while (self->ingestor()->Saturated(signal) && RoomWaiter::Clock::now() < deadline);
}

// A request whose framing breaks RFC 9112's rules (http/framing.h), counted.
Response FramingRefusal(http::FramingError error, Ingestor* ingestor) {
  ingestor->stats()->http_framing.Count(error);
  return PlainError(static_cast<bhttp::status>(http::FramingStatus(error)),
                    http::FramingMessage(error));
}

asio::awaitable<void> Session(tcp::socket socket, HttpFrontend* self) {
  const OtlpReceiverOptions& o = self->options();
  beast::tcp_stream stream(std::move(socket));
  const std::unique_ptr<http::ConnectionSlot> slot = self->connections()->Admit(stream);
  if (!slot) co_return;
  beast::flat_buffer buffer;
  boost::system::error_code ec;
  bool unread_body = false;
  for (;;) {
    bhttp::request_parser<bhttp::string_body> parser;
    // Unlimited while reading the header so that a large Content-Length reaches CheckHeader
    // (and a 413) instead of failing the header read; bounded before the body is read.
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    // Under the idle and header timeouts; the body's is set for what follows.
    ec = co_await http::ReadRequestHeader(stream, buffer, parser, *slot);
    // A request the parser refused, or whose framing cannot be trusted: 400 and closed.
    const http::FramingError framing =
        ec ? http::FramingErrorFromParse(ec) : http::CheckRequestFraming(parser.get());
    if (ec && framing == http::FramingError::kNone) break;
    ec = {};
    std::optional<Signal> signal;
    Encoding enc = Encoding::kProtobuf;
    bool gzip = false;
    std::optional<Response> res =
        framing != http::FramingError::kNone
            ? FramingRefusal(framing, self->ingestor())
            : CheckHeader(parser, o.max_message_bytes, self->ingestor(), &signal, &enc, &gzip);
    // After an early answer the unread body makes the connection unusable: close it.
    bool keep_alive = !res && parser.get().keep_alive();
    unread_body = res.has_value();
    const unsigned version = parser.get().version() != 0 ? parser.get().version() : 11;
    const bool expect_continue = beast::iequals(parser.get()[bhttp::field::expect], "100-continue");
    if (!res) parser.body_limit(o.max_message_bytes);
    // The sink is asked once per request when it has room; only a full one is asked again,
    // after the wait, by Throttle (which counts the refusal).
    bool refuse = false;
    if (!res && self->ingestor()->Saturated(*signal)) {
      if (self->waiter() != nullptr) co_await WaitForRoom(*signal, self);
      refuse = self->ingestor()->Throttle(Transport::kHttp, *signal);
    }
    if (refuse) {
      // Refused before the body is read: the body is read and dropped (DiscardBody), never
      // held whole. A client waiting for 100 Continue is answered (after the wait for room)
      // without sending the body; the connection closes behind it.
      res = Throttled(enc);
      const bool discarded =
          !expect_continue && co_await DiscardBody(stream, buffer, std::move(parser), *slot);
      keep_alive = keep_alive && discarded;
      unread_body = !discarded;
    } else if (!res) {
      if (expect_continue) {
        bhttp::response<bhttp::empty_body> cont{bhttp::status::continue_, 11};
        co_await bhttp::async_write(stream, cont, asio::redirect_error(asio::use_awaitable, ec));
        if (ec) break;
      }
      if (const auto length = parser.content_length(); length && !parser.chunked()) {
        // A body of known length (what OTLP exporters send; CheckHeader bounded it) is read
        // straight into a buffer of its size: through Beast's string body each byte was
        // read into the connection's buffer, then zero-filled and copied into the body.
        // Bytes past it (a pipelined next request) stay in the socket or in `buffer`.
        const auto size = static_cast<std::size_t>(*length);
        auto body = std::make_unique_for_overwrite<char[]>(size);
        const std::size_t have = std::min(buffer.size(), size);
        asio::buffer_copy(asio::buffer(body.get(), have), buffer.data());
        buffer.consume(have);
        if (have < size) {
          co_await asio::async_read(stream, asio::buffer(body.get() + have, size - have),
                                    asio::redirect_error(asio::use_awaitable, ec));
          http::CountBodyTimeout(ec, *slot);
          if (ec) break;
        }
        slot->Answering();
        res = HandleBody(*signal, enc, gzip, std::string_view(body.get(), size),
                         o.max_message_bytes, self->ingestor());
      } else {
        // A chunked body, bounded by the parser's body limit.
        http::MakeRoomForBody(buffer, parser);  // exports are large
        co_await bhttp::async_read(stream, buffer, parser,
                                   asio::redirect_error(asio::use_awaitable, ec));
        http::ReleaseBodyRoom(buffer, 0);
        http::CountBodyTimeout(ec, *slot);
        slot->Answering();
        if (ec == bhttp::error::body_limit) {
          self->ingestor()->CountMalformed(Transport::kHttp, *signal);
          res = StatusResponse(bhttp::status::payload_too_large, enc, kResourceExhausted,
                               fmt::format("body larger than {} bytes", o.max_message_bytes));
          keep_alive = false;
          unread_body = true;
        } else if (ec) {
          break;
        } else {
          res = HandleBody(*signal, enc, gzip, parser.get().body(), o.max_message_bytes,
                           self->ingestor());
        }
      }
    }
    slot->Answering();
    res->version(version);
    res->keep_alive(keep_alive);
    res->prepare_payload();
    stream.expires_after(std::chrono::seconds(30));
    co_await bhttp::async_write(stream, *res, asio::redirect_error(asio::use_awaitable, ec));
    if (ec || !keep_alive) break;
  }
  stream.socket().shutdown(tcp::socket::shutdown_send, ec);
  if (unread_body && !ec) {
    // Closing with unread data would send a reset that can destroy the response before the
    // client reads it; read and discard the rest for a bounded time and size first.
    stream.expires_after(std::chrono::seconds(2));
    std::size_t drained = 0;
    std::array<char, 8192> sink;
    while (drained <= o.max_message_bytes + sizeof(sink)) {
      std::size_t n = co_await stream.async_read_some(
          asio::buffer(sink), asio::redirect_error(asio::use_awaitable, ec));
      if (ec) break;
      drained += n;
    }
  }
}

asio::awaitable<void> Accept(tcp::acceptor acceptor, HttpFrontend* self) {
  for (;;) {
    boost::system::error_code ec;
    // Each connection on a strand of its own: the connection table's evictions close a
    // socket from a handler posted to its executor.
    tcp::socket socket = co_await acceptor.async_accept(
        asio::make_strand(acceptor.get_executor()), asio::redirect_error(asio::use_awaitable, ec));
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
    if (ec) continue;
    auto ex = socket.get_executor();
    asio::co_spawn(ex, Session(std::move(socket), self), asio::detached);
  }
}

}  // namespace

std::unique_ptr<HttpFrontend> HttpFrontend::Start(const OtlpReceiverOptions& options,
                                                  Ingestor* ingestor, std::string* error) {
  auto hp = http::ParseHostPort(options.http_address);
  if (!hp) {
    *error = fmt::format("OTLP HTTP receiver: malformed address '{}' (want HOST:PORT)",
                         options.http_address);
    return nullptr;
  }
  std::unique_ptr<HttpFrontend> f(new HttpFrontend());
  f->options_ = options;
  f->ingestor_ = ingestor;
  f->connections_ = http::ConnectionTable::Make(
      options.http_connections, std::shared_ptr<http::ConnectionStats>(
                                    std::shared_ptr<void>(), &ingestor->stats()->http_connections));
  boost::system::error_code ec;
  auto ip = asio::ip::make_address(hp->host == "localhost" ? "127.0.0.1" : hp->host, ec);
  if (ec) {
    *error = fmt::format("OTLP HTTP receiver: bad host '{}': {}", hp->host, ec.message());
    return nullptr;
  }
  tcp::acceptor acceptor(f->io_);
  tcp::endpoint ep(ip, hp->port);
  acceptor.open(ep.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(ep, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    *error = fmt::format("OTLP HTTP receiver: cannot listen on {}: {}", options.http_address,
                         ec.message());
    return nullptr;
  }
  f->port_ = acceptor.local_endpoint().port();
  if (options.saturated_wait.count() > 0)
    f->waiter_ = std::make_unique<RoomWaiter>(ingestor, Transport::kHttp, options.saturated_wait);
  asio::co_spawn(f->io_, Accept(std::move(acceptor), f.get()), asio::detached);
  for (int i = 0; i < std::max(1, options.threads); ++i)
    f->threads_.emplace_back([io = &f->io_] {
      NameThisThread("otlp-http-recv");
      io->run();
    });
  return f;
}

HttpFrontend::~HttpFrontend() { Stop(); }

void HttpFrontend::Stop() {
  if (stopped_) return;
  stopped_ = true;
  // Waiting requests first: their coroutines are resumed onto io_ (and then, with io_ stopped,
  // destroyed with it) rather than left with the waiter.
  if (waiter_) waiter_->Stop();
  io_.stop();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

}  // namespace infertel::receiver::internal
