#pragma once
// One TCP connection of the OTLP/gRPC receiver: a GrpcSession fed from the socket, its output
// written back with one write in flight, and the connection's timers (handshake, idle, the grace
// to flush a GOAWAY). Lives on the front end's io_context thread; owned by shared_ptr (the
// pending reads and writes hold it); the RoomWaiter's resumptions hold a weak_ptr, so a
// connection that closed while a call waited is simply gone when the call resumes.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <array>
#include <functional>
#include <memory>
#include <string>

#include "receiver/grpc_session.h"

namespace infertel::receiver::internal {

class GrpcConnection;

// What serves the calls of every connection (grpc_frontend.cc: the OTLP Export services).
class GrpcService {
 public:
  virtual ~GrpcService() = default;
  // A whole message: answer it with connection->Answer, now or later on the same thread.
  virtual void Serve(const std::shared_ptr<GrpcConnection>& connection,
                     const GrpcRequest& request) = 0;
  virtual void CountMalformed(Signal signal) = 0;
};

class GrpcConnection final : public std::enable_shared_from_this<GrpcConnection>,
                             private GrpcSession::Handler {
 public:
  struct Shared {  // the front end's, for every connection
    const GrpcServerLimits* limits;
    std::size_t max_message_bytes;
    GrpcStats* stats;
    BufferBudget* budget;
    GrpcService* service;
    std::function<void(GrpcConnection*)> on_closed;  // once, when the socket is closed
  };
  GrpcConnection(boost::asio::ip::tcp::socket socket, const Shared& shared);
  ~GrpcConnection() override;

  void Start();
  // Answers a call (a no-op when its stream is gone) and sends what is pending.
  void Answer(std::int32_t stream_id, std::uint64_t serial, const GrpcAnswer& answer);
  const GrpcSession& session() const { return session_; }
  // GOAWAY NO_ERROR; the connection closes once it is written (or after a grace period).
  void Shutdown();

 private:
  void OnRequest(const GrpcRequest& request) override;
  void OnMalformed(Signal signal) override { shared_.service->CountMalformed(signal); }
  void Read();
  void OnRead(const boost::system::error_code& ec, std::size_t n);
  void Flush();
  void ArmTimer();
  void OnTimer();
  void BeginClosing();
  void Drain();
  void DrainMore();
  void Close();

  Shared shared_;
  boost::asio::ip::tcp::socket socket_;
  boost::asio::steady_timer timer_;
  GrpcSession session_;
  std::array<char, 16384> in_;
  std::string out_;
  bool reading_ = false, writing_ = false, in_receive_ = false;
  bool closing_ = false, closed_ = false, draining_ = false;
  GrpcClock::time_point opened_, last_read_, closing_since_;
};

}  // namespace infertel::receiver::internal
