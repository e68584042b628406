#include "http/simple_server.h"

#include "http/read_header.h"

#include "core/json.h"
#include "core/thread_name.h"

#include <boost/asio.hpp>
#include <boost/beast.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <array>
#include <atomic>
#include <optional>

namespace infertel::http {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;

namespace {

// The refusal of a request, counted and logged (at most one line per 10 s for all servers: a
// flood must not flood the log too).
StringResponse Refusal(unsigned status, std::string_view type, std::string_view message,
                       std::atomic<std::uint64_t>* counter) {
  counter->fetch_add(1, std::memory_order_relaxed);
  static std::atomic<std::int64_t> last_log{0};
  const std::int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                               std::chrono::steady_clock::now().time_since_epoch())
                               .count();
  std::int64_t last = last_log.load(std::memory_order_relaxed);
  if (now - last >= 10 && last_log.compare_exchange_strong(last, now))
    spdlog::warn("admin HTTP: refused a request: {} {}", status, message);
  auto res = MakeResponse(status, JsonErrorBody(status, type, message), "application/json");
  res.keep_alive(false);
  return res;
}

// The answer to a request past a limit or with broken framing, or none when `ec` is about
// neither (the connection ended or timed out). Beast's header_limit covers the request line
// and the fields together: when it is passed before the request line was read (no target
// yet), the target is at fault (414), otherwise the fields (431).
std::optional<StringResponse> RefusalFor(const boost::system::error_code& ec,
                                         bool request_line_read, ServerStats* stats) {
  if (ec == bhttp::error::body_limit)
    return Refusal(413, "body_too_large", "request body too large", &stats->body_too_large);
  if (const FramingError f = FramingErrorFromParse(ec); f != FramingError::kNone)
    return Refusal(FramingStatus(f), "bad_request", FramingMessage(f),
                   &stats->framing.refused[static_cast<std::size_t>(f)]);
  if (ec != bhttp::error::header_limit) return std::nullopt;
  if (!request_line_read)
    return Refusal(414, "target_too_long", "request target too long", &stats->target_too_long);
  return Refusal(431, "header_too_large", "request header fields too large",
                 &stats->header_too_large);
}

// What the header alone refuses: broken framing, or a body in a Content-Encoding (no admin
// handler inflates, and none should be handed bytes it would misread).
std::optional<StringResponse> RefusalForHeader(const RequestHeader& header,
                                               const ServerLimits& limits, ServerStats* stats) {
  if (const FramingError f = CheckRequestFraming(header); f != FramingError::kNone)
    return Refusal(FramingStatus(f), "bad_request", FramingMessage(f),
                   &stats->framing.refused[static_cast<std::size_t>(f)]);
  const auto coding = header.find(bhttp::field::content_encoding);
  if (limits.refuse_content_encoding && coding != header.end() &&
      !beast::iequals(coding->value(), "identity"))
    return Refusal(415, "unsupported_media_type", "Content-Encoding is not supported",
                   &stats->content_encoding);
  return std::nullopt;
}

// Answers a refused request and closes: the answer, then a half-close, then what the client
// still sends is read and dropped for up to 2 s, so that closing with unread data does not
// reset the connection before the client has read the answer.
asio::awaitable<void> RefuseAndClose(beast::tcp_stream& stream, StringResponse res) {
  boost::system::error_code ec;
  res.prepare_payload();
  stream.expires_after(std::chrono::seconds(5));
  co_await bhttp::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return;
  stream.socket().shutdown(tcp::socket::shutdown_send, ec);
  stream.expires_after(std::chrono::seconds(2));
  std::array<char, 16384> scratch;
  while (!ec)
    co_await stream.async_read_some(asio::buffer(scratch),
                                    asio::redirect_error(asio::use_awaitable, ec));
}

// Reads one request under the connection guard's timeouts: header, the checks on it, body.
// On an error the parser's state tells the caller what was read.
asio::awaitable<std::optional<StringResponse>> ReadRequest(
    beast::tcp_stream& stream, beast::flat_buffer& buffer,
    bhttp::request_parser<bhttp::string_body>& parser, ConnectionSlot& slot,
    const ServerLimits& limits, ServerStats* stats, boost::system::error_code& ec) {
  ec = co_await ReadRequestHeader(stream, buffer, parser, slot);
  if (!ec) {
    if (auto refused = RefusalForHeader(parser.get(), limits, stats)) co_return refused;
    if (!parser.is_done()) {
      co_await bhttp::async_read(stream, buffer, parser,
                                 asio::redirect_error(asio::use_awaitable, ec));
      CountBodyTimeout(ec, slot);
    }
  }
  if (ec) co_return RefusalFor(ec, !parser.get().target().empty(), stats);
  co_return std::nullopt;
}

asio::awaitable<void> Serve(tcp::socket socket, std::shared_ptr<Handler> handler,
                            std::shared_ptr<ServerStats> stats, ServerLimits limits,
                            std::shared_ptr<ConnectionTable> table) {
  beast::tcp_stream stream(std::move(socket));
  const std::unique_ptr<ConnectionSlot> slot = table->Admit(stream);
  if (!slot) co_return;
  beast::flat_buffer buffer;
  boost::system::error_code ec;
  for (;;) {
    bhttp::request_parser<bhttp::string_body> parser;
    parser.body_limit(limits.body_bytes);
    parser.header_limit(static_cast<std::uint32_t>(limits.header_bytes));
    std::optional<StringResponse> refused =
        co_await ReadRequest(stream, buffer, parser, *slot, limits, stats.get(), ec);
    if (refused) {
      slot->Answering();
      co_await RefuseAndClose(stream, *std::move(refused));
      co_return;
    }
    if (ec) break;
    slot->Answering();
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
    stream.expires_after(std::chrono::seconds(30));
    co_await bhttp::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
    if (ec || !req.keep_alive()) break;
  }
  stream.socket().shutdown(tcp::socket::shutdown_send, ec);
}

// Each connection on a strand of its own, which the connection table's evictions need when
// the server runs on several threads.
asio::awaitable<void> Accept(tcp::acceptor acceptor, std::shared_ptr<Handler> handler,
                             std::shared_ptr<ServerStats> stats, ServerLimits limits) {
  auto table = ConnectionTable::Make(limits.connections,
                                     std::shared_ptr<ConnectionStats>(stats, &stats->connections));
  for (;;) {
    boost::system::error_code ec;
    tcp::socket socket = co_await acceptor.async_accept(
        asio::make_strand(acceptor.get_executor()), asio::redirect_error(asio::use_awaitable, ec));
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
    if (ec) continue;
    auto ex = socket.get_executor();
    asio::co_spawn(ex, Serve(std::move(socket), handler, stats, limits, table), asio::detached);
  }
}

}  // namespace

void ServerStats::Register(StatsRegistry* registry, std::string_view prefix) const {
  constexpr std::string_view kHelp = "Admin API requests refused (answered 4xx without acting)";
  const std::string family = fmt::format("{}_refused_requests", prefix);
  for (const auto& [reason, counter] :
       {std::pair{"body_too_large", &body_too_large},
        std::pair{"target_too_long", &target_too_long},
        std::pair{"header_too_large", &header_too_large},
        std::pair{"unsupported_content_encoding", &content_encoding}}) {
    registry->Add(family, std::string(kHelp), StatsRegistry::Type::kCounter,
                  fmt::format(R"(reason="{}")", reason), counter);
  }
  framing.Register(registry, family, kHelp);
  connections.Register(registry, fmt::format("{}_refused_connections", prefix),
                       fmt::format("{}_open_connections", prefix));
}

std::unique_ptr<SimpleServer> SimpleServer::Start(const HostPort& address, Handler handler,
                                                  std::string* error, int threads,
                                                  ServerLimits limits) {
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
  asio::co_spawn(
      s->io_,
      Accept(std::move(acceptor), std::make_shared<Handler>(std::move(handler)), s->stats_, limits),
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
