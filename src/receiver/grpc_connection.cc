#include "receiver/grpc_connection.h"

#include <fmt/format.h>
#include <boost/asio/write.hpp>

#include <algorithm>

namespace infertel::receiver::internal {
namespace {

namespace asio = boost::asio;

// How long a closing connection may take to write its last frames (a GOAWAY) to a client that
// does not read them.
constexpr std::chrono::milliseconds kClosingGrace{1000};

}  // namespace

GrpcConnection::GrpcConnection(asio::ip::tcp::socket socket, const Shared& shared)
    : shared_(shared),
      socket_(std::move(socket)),
      timer_(socket_.get_executor()),
      session_(*shared.limits, shared.max_message_bytes, shared.stats, shared.budget, this) {}

GrpcConnection::~GrpcConnection() {
  if (!closed_) shared_.stats->connections().fetch_sub(1, std::memory_order_relaxed);
}

void GrpcConnection::Start() {
  shared_.stats->connections().fetch_add(1, std::memory_order_relaxed);
  boost::system::error_code ec;
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
  opened_ = last_read_ = GrpcClock::now();
  Flush();  // the server's SETTINGS go first
  Read();
  ArmTimer();
}

void GrpcConnection::Answer(std::int32_t stream_id, std::uint64_t serial,
                            const GrpcAnswer& answer) {
  if (closed_) return;
  session_.Answer(stream_id, serial, answer);
  // Inside Receive, the output is sent once it returns.
  if (!in_receive_) Flush();
}

void GrpcConnection::Shutdown() {
  if (closed_ || closing_) return;
  session_.GoAway(NGHTTP2_NO_ERROR);
  BeginClosing();
}

void GrpcConnection::OnRequest(const GrpcRequest& request) {
  shared_.service->Serve(shared_from_this(), request);
}

void GrpcConnection::Read() {
  if (reading_ || closing_ || closed_) return;
  reading_ = true;
  socket_.async_read_some(asio::buffer(in_),
                          [self = shared_from_this()](const boost::system::error_code& ec,
                                                      std::size_t n) { self->OnRead(ec, n); });
}

void GrpcConnection::OnRead(const boost::system::error_code& ec, std::size_t n) {
  reading_ = false;
  if (closed_) return;
  if (ec) return Close();  // the client went away (or Close cancelled the read)
  if (draining_) return DrainMore();
  last_read_ = GrpcClock::now();
  in_receive_ = true;
  const bool alive = session_.Receive(std::string_view(in_.data(), n), last_read_);
  in_receive_ = false;
  Flush();
  if (!alive) return BeginClosing();
  Read();
}

void GrpcConnection::Flush() {
  if (writing_ || closed_) return;
  out_.clear();
  session_.TakeOutput(&out_);
  if (out_.empty()) {
    if (closing_ || !session_.Alive()) Drain();
    return;
  }
  writing_ = true;
  asio::async_write(socket_, asio::buffer(out_),
                    [self = shared_from_this()](const boost::system::error_code& ec, std::size_t) {
                      self->writing_ = false;
                      if (ec) return self->Close();
                      self->Flush();
                    });
}

void GrpcConnection::ArmTimer() {
  const GrpcServerLimits& l = *shared_.limits;
  const auto period = std::clamp<std::chrono::milliseconds>(
      std::min(l.handshake_timeout, l.idle_timeout) / 4, std::chrono::milliseconds(10),
      std::chrono::milliseconds(1000));
  timer_.expires_after(period);
  timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (!ec) self->OnTimer();
  });
}

void GrpcConnection::OnTimer() {
  if (closed_) return;
  const GrpcClock::time_point now = GrpcClock::now();
  const GrpcServerLimits& l = *shared_.limits;
  if (closing_) {
    if (now - closing_since_ >= kClosingGrace) return Close();
  } else if (!session_.handshake_done() && now - opened_ >= l.handshake_timeout) {
    shared_.stats->Refuse(
        GrpcRefusal::kHandshakeTimeout,
        fmt::format("no HTTP/2 preface and SETTINGS within {} ms", l.handshake_timeout.count()));
    return Close();
  } else if (now - last_read_ >= l.idle_timeout) {
    shared_.stats->Refuse(
        GrpcRefusal::kIdleTimeout,
        fmt::format("nothing received for {} ms: GOAWAY", l.idle_timeout.count()));
    Shutdown();
  }
  ArmTimer();
}

void GrpcConnection::BeginClosing() {
  if (closing_) return;
  closing_ = true;
  closing_since_ = GrpcClock::now();
  Flush();
  if (reading_ && !writing_ && !closed_) Drain();  // a read is pending: let it drain
}

// The last frames (a GOAWAY) are written: the sending side is shut and what the client still
// sends is read and dropped until it closes or the grace runs out. Closing with unread bytes
// would send a TCP reset, which can destroy the GOAWAY before the client reads it.
void GrpcConnection::Drain() {
  if (draining_ || closed_) return;
  draining_ = true;
  if (!closing_) BeginClosing();
  boost::system::error_code ec;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ec);
  DrainMore();
}

void GrpcConnection::DrainMore() {
  if (reading_) return;  // the pending read drops its bytes (OnRead sees draining_)
  reading_ = true;
  socket_.async_read_some(asio::buffer(in_), [self = shared_from_this()](
                                                 const boost::system::error_code& ec, std::size_t) {
    self->reading_ = false;
    if (ec || self->closed_) return self->Close();
    self->DrainMore();
  });
}

void GrpcConnection::Close() {
  if (closed_) return;
  closed_ = true;
  boost::system::error_code ec;
  timer_.cancel();
  socket_.close(ec);
  shared_.stats->connections().fetch_sub(1, std::memory_order_relaxed);
  if (shared_.on_closed) shared_.on_closed(this);
}

}  // namespace infertel::receiver::internal
