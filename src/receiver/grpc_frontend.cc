#include <fmt/format.h>

#include <boost/asio/post.hpp>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "core/thread_name.h"
#include "http/url.h"
#include "receiver/frontends.h"
#include "receiver/grpc_connection.h"
#include "receiver/trace_decoder.h"

namespace infertel::receiver::internal {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

// How long before its deadline a waiting call must be resumed to be taken: time to decode,
// submit and answer before the sender gives up on it.
constexpr std::chrono::milliseconds kTimeToAnswer{50};

// The OTLP Export services: each whole message is decoded here (after a wait for room when the
// sink is saturated), handed to the Ingestor, and answered.
class OtlpService final : public GrpcService {
 public:
  OtlpService(Ingestor* ingestor, RoomWaiter* waiter, std::chrono::milliseconds saturated_wait,
              GrpcStats* stats, std::size_t max_message_bytes, asio::io_context* io)
      : ingestor_(ingestor),
        waiter_(waiter),
        saturated_wait_(saturated_wait),
        stats_(stats),
        max_message_bytes_(max_message_bytes),
        io_(io) {}

  void Serve(const std::shared_ptr<GrpcConnection>& connection,
             const GrpcRequest& request) override {
    // The sink is asked once per call when it has room; only a full one is asked again, by
    // Handle's Throttle (which counts the refusal), after the wait if there is one.
    const bool full = ingestor_->Saturated(request.signal);
    if (full && waiter_ != nullptr && Wait(connection, request)) return;
    connection->Answer(request.stream_id, request.serial, Handle(request, full));
  }

  void CountMalformed(Signal signal) override {
    ingestor_->CountMalformed(Transport::kGrpc, signal);
  }

 private:
  // Holds the call in the waiter; it resumes on the connection's thread if the connection and
  // the call are still there (a client that reset the stream meanwhile is not answered).
  // `count`: false when a resumed call waits again.
  bool Wait(const std::shared_ptr<GrpcConnection>& connection, const GrpcRequest& request) {
    const RoomWaiter::Clock::time_point latest = request.deadline == GrpcClock::time_point::max()
                                                     ? RoomWaiter::Clock::time_point::max()
                                                     : request.deadline - kTimeToAnswer;
    const RoomWaiter::Clock::time_point wait_end =
        std::min(latest, RoomWaiter::Clock::now() + saturated_wait_);
    return WaitOnce(connection, request.stream_id, request.serial, request.signal,
                    request.message.size(), latest, wait_end, /*count=*/true);
  }

  bool WaitOnce(const std::shared_ptr<GrpcConnection>& connection, std::int32_t id,
                std::uint64_t serial, Signal signal, std::size_t bytes,
                RoomWaiter::Clock::time_point latest, RoomWaiter::Clock::time_point wait_end,
                bool count) {
    std::weak_ptr<GrpcConnection> weak = connection;
    return waiter_->Add(
        signal, bytes, wait_end,
        [this, weak, id, serial, latest, wait_end] {
          asio::post(*io_, [this, weak, id, serial, latest, wait_end] {
            if (auto c = weak.lock()) Resume(c, id, serial, latest, wait_end);
          });
        },
        count);
  }

  // A call resumed by the waiter (counted as waiting when it was added). A sender that gave up,
  // or is about to (its deadline less kTimeToAnswer reached), sends the data again: taking it
  // now would store it twice.
  // Resumed calls run one by one on the connection's thread: one whose room was taken by a call
  // resumed just before it waits again, until its wait is over (as an HTTP request does).
  void Resume(const std::shared_ptr<GrpcConnection>& c, std::int32_t id, std::uint64_t serial,
              RoomWaiter::Clock::time_point latest, RoomWaiter::Clock::time_point wait_end) {
    GrpcConnection& connection = *c;
    const std::optional<GrpcRequest> request = connection.session().Pending(id, serial);
    if (!request) return;
    const RoomWaiter::Clock::time_point now = RoomWaiter::Clock::now();
    if (now < wait_end && ingestor_->Saturated(request->signal) &&
        WaitOnce(c, id, serial, request->signal, request->message.size(), latest, wait_end,
                 /*count=*/false))
      return;
    if (now >= latest)
      return connection.Answer(id, serial,
                               GrpcAnswer::Status(kGrpcDeadlineExceeded,
                                                  "the call's deadline came while it waited for "
                                                  "room in the agent's export queues"));
    connection.Answer(id, serial, Handle(*request, /*may_refuse=*/true));
  }

  // `may_refuse`: the sink was found saturated, so it is asked again (Throttle) before decoding.
  GrpcAnswer Handle(const GrpcRequest& request, bool may_refuse) {
    // UNAVAILABLE, as the OpenTelemetry Collector answers a refusal that may pass: retryable in
    // the OTLP specification, and retried by the Python exporters of vLLM and SGLang after the
    // RetryInfo delay (the JS gRPC exporter reports it as a failure instead).
    if (may_refuse && ingestor_->Throttle(Transport::kGrpc, request.signal)) return Throttled();
    std::string inflated;
    std::string_view wire = request.message;
    if (request.gzip) {
      if (auto refusal = Inflate(request, &inflated)) return *refusal;
      wire = inflated;
    }
    switch (request.signal) {
      case Signal::kTraces:
        return DecodeAndAccept<TracesRequest>(request.signal, wire);
      case Signal::kLogs:
        return DecodeAndAccept<LogsRequest>(request.signal, wire);
      case Signal::kMetrics:
        return DecodeAndAccept<MetricsRequest>(request.signal, wire);
    }
    return GrpcAnswer::Status(kGrpcInternal, "unknown signal");
  }

  // Inflates a gzip message with the message limit as its bound; the refusal when it fails.
  std::optional<GrpcAnswer> Inflate(const GrpcRequest& request, std::string* out) {
    switch (InflateBounded(request.message, max_message_bytes_, out)) {
      case InflateResult::kOk:
        return std::nullopt;
      case InflateResult::kTooLarge: {
        std::string().swap(*out);
        CountMalformed(request.signal);
        GrpcAnswer a = GrpcAnswer::Status(
            kGrpcResourceExhausted,
            fmt::format("message inflates past the limit of {} bytes", max_message_bytes_));
        stats_->Refuse(GrpcRefusal::kInflatedSize, a.message);
        return a;
      }
      case InflateResult::kCorrupt:
        break;
    }
    CountMalformed(request.signal);
    stats_->Refuse(GrpcRefusal::kMalformed, "corrupt gzip message");
    return GrpcAnswer::Status(kGrpcInternal, "cannot inflate the gzip message");
  }

  template <typename Request>
  GrpcAnswer DecodeAndAccept(Signal signal, std::string_view wire) {
    // Decoded onto an arena that travels with the spans (pipeline/held.h).
    pipeline::Held<Request> decoded;
    LimitCounts limited;  // what the span limits dropped while decoding
    if (!DecodeProtobuf(wire, &decoded, &ingestor_->span_limits(), &limited)) {
      CountMalformed(signal);
      return GrpcAnswer::Status(kGrpcInvalidArgument, fmt::format("cannot decode {} as protobuf",
                                                                  Request::descriptor()->name()));
    }
    const IngestResult result = ingestor_->Accept(Transport::kGrpc, std::move(decoded), limited);
    // No room for all of it after all (another request took the room since the look before
    // decoding): nothing was taken, and the sender is told to retry as above.
    if (result.refused) return Throttled();
    if (result.all_rejected())
      return GrpcAnswer::Status(kGrpcInvalidArgument, result.error_message);
    GrpcAnswer a;
    a.body = ResponseProto(result);
    return a;
  }

  static GrpcAnswer Throttled() {
    GrpcAnswer a = GrpcAnswer::Status(kGrpcUnavailable, std::string(kThrottledMessage));
    a.retry_info = true;
    return a;
  }

  Ingestor* ingestor_;
  RoomWaiter* waiter_;
  std::chrono::milliseconds saturated_wait_;
  GrpcStats* stats_;
  std::size_t max_message_bytes_;
  asio::io_context* io_;
};

}  // namespace

GrpcFrontend::GrpcFrontend() = default;

std::unique_ptr<GrpcFrontend> GrpcFrontend::Start(const OtlpReceiverOptions& options,
                                                  Ingestor* ingestor, GrpcStats* stats,
                                                  std::string* error) {
  auto hp = http::ParseHostPort(options.grpc_address);
  if (!hp) {
    *error = fmt::format("OTLP gRPC receiver: malformed address '{}' (want HOST:PORT)",
                         options.grpc_address);
    return nullptr;
  }
  std::unique_ptr<GrpcFrontend> f(new GrpcFrontend());
  f->options_ = options;
  f->stats_ = stats;
  boost::system::error_code ec;
  auto ip = asio::ip::make_address(hp->host == "localhost" ? "127.0.0.1" : hp->host, ec);
  if (ec) {
    *error = fmt::format("OTLP gRPC receiver: bad host '{}': {}", hp->host, ec.message());
    return nullptr;
  }
  f->acceptor_ = std::make_unique<tcp::acceptor>(f->io_);
  tcp::endpoint ep(ip, hp->port);
  f->acceptor_->open(ep.protocol(), ec);
  if (!ec) f->acceptor_->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) f->acceptor_->bind(ep, ec);
  if (!ec) f->acceptor_->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    *error = fmt::format("OTLP gRPC receiver: cannot listen on {}: {}", options.grpc_address,
                         ec.message());
    return nullptr;
  }
  f->port_ = f->acceptor_->local_endpoint().port();
  if (options.saturated_wait.count() > 0)
    f->waiter_ = std::make_unique<RoomWaiter>(ingestor, Transport::kGrpc, options.saturated_wait);
  f->budget_ = std::make_unique<BufferBudget>(options.grpc.max_buffered_bytes);
  f->service_ = std::make_unique<OtlpService>(ingestor, f->waiter_.get(), options.saturated_wait,
                                              stats, options.max_message_bytes, &f->io_);
  f->Accept();
  f->thread_ = std::thread([io = &f->io_] {
    NameThisThread("otlp-grpc-recv");
    io->run();
  });
  return f;
}

void GrpcFrontend::Accept() {
  acceptor_->async_accept([this](const boost::system::error_code& ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_->is_open()) return;
    if (!ec) {
      if (connections_.size() >= options_.grpc.max_connections) {
        stats_->Refuse(GrpcRefusal::kConnections,
                       fmt::format("more than {} connections", options_.grpc.max_connections));
        boost::system::error_code ignored;
        socket.close(ignored);
      } else {
        GrpcConnection::Shared shared{&options_.grpc, options_.max_message_bytes,
                                      stats_,         budget_.get(),
                                      service_.get(), [this](GrpcConnection* c) { Closed(c); }};
        auto connection = std::make_shared<GrpcConnection>(std::move(socket), shared);
        connections_.push_back(connection.get());
        open_.store(connections_.size(), std::memory_order_relaxed);
        connection->Start();
      }
    }
    Accept();
  });
}

void GrpcFrontend::Closed(GrpcConnection* connection) {
  std::erase(connections_, connection);
  open_.store(connections_.size(), std::memory_order_relaxed);
}

void GrpcFrontend::ShutdownAll() {
  boost::system::error_code ec;
  acceptor_->close(ec);
  // Shutdown may close a connection at once, which takes it out of connections_.
  const std::vector<GrpcConnection*> open = connections_;
  for (GrpcConnection* c : open) c->Shutdown();
}

GrpcFrontend::~GrpcFrontend() { Stop(); }

void GrpcFrontend::Stop() {
  if (stopped_) return;
  stopped_ = true;
  // First: the calls held for room are resumed, onto io_, ahead of the shutdown posted below.
  if (waiter_) waiter_->Stop();
  asio::post(io_, [this] { ShutdownAll(); });
  // Not on a data path: the controlling thread looks every 5 ms for up to 1 s.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (open_.load(std::memory_order_relaxed) > 0 && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  io_.stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace infertel::receiver::internal
