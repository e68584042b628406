#include <fmt/format.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "opentelemetry/proto/collector/logs/v1/logs_service.grpc.pb.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.grpc.pb.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.grpc.pb.h"
#include "receiver/frontends.h"
#include "receiver/trace_decoder.h"

namespace infertel::receiver::internal {
namespace {

// Raw-buffer handlers: decoding here rather than in gRPC's codec lets the receiver count and
// explain undecodable payloads instead of gRPC answering INTERNAL unseen.
template <typename Request, typename Base>
class RawExportService final : public Base {
 public:
  // `waiter`: where a call that finds the sink saturated waits for room; null: no wait.
  RawExportService(Signal signal, Ingestor* ingestor, RoomWaiter* waiter)
      : signal_(signal), ingestor_(ingestor), waiter_(waiter) {}

  grpc::ServerUnaryReactor* Export(grpc::CallbackServerContext* context,
                                   const grpc::ByteBuffer* request,
                                   grpc::ByteBuffer* response) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    // The sink is asked once per call when it has room; only a full one is asked again, by
    // Handle's Throttle (which counts the refusal), after the wait if there is one.
    const bool full = ingestor_->Saturated(signal_);
    // The call, its message and its answer stay valid until Finish, from whichever thread.
    if (full && waiter_ != nullptr) {
      const RoomWaiter::Clock::time_point latest = LatestResume(*context);
      if (waiter_->Add(signal_, request->Length(), latest,
                       [this, reactor, context, request, response, latest] {
                         reactor->Finish(Resume(context, request, response, latest));
                       }))
        return reactor;
    }
    reactor->Finish(Handle(context, request, response, /*may_refuse=*/full));
    return reactor;
  }

 private:
  // How long before its deadline a waiting call must be resumed to be taken: time to decode,
  // submit and answer before the sender gives up on it.
  static constexpr std::chrono::milliseconds kTimeToAnswer{50};

  // When a waiting call must be resumed at the latest: its deadline less kTimeToAnswer.
  static RoomWaiter::Clock::time_point LatestResume(const grpc::CallbackServerContext& context) {
    const auto deadline = context.deadline();
    if (deadline == std::chrono::system_clock::time_point::max())
      return RoomWaiter::Clock::time_point::max();
    return RoomWaiter::Clock::now() +
           std::chrono::duration_cast<RoomWaiter::Clock::duration>(
               deadline - std::chrono::system_clock::now()) -
           kTimeToAnswer;
  }

  // A call resumed by the waiter (counted as waiting when it was added). A sender that gave up, or
  // is about to (its deadline less kTimeToAnswer reached), sends the data again: taking it now
  // would store it twice.
  grpc::Status Resume(grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
                      grpc::ByteBuffer* response, RoomWaiter::Clock::time_point latest) noexcept {
    if (context->IsCancelled()) return grpc::Status::CANCELLED;
    if (RoomWaiter::Clock::now() >= latest)
      return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                          "the call's deadline came while it waited for room in the agent's "
                          "export queues");
    return Handle(context, request, response, /*may_refuse=*/true);
  }

  // `may_refuse`: the sink was found saturated, so it is asked again (Throttle) before decoding.
  grpc::Status Handle(grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
                      grpc::ByteBuffer* response, bool may_refuse) noexcept {
    // UNAVAILABLE, as the OpenTelemetry Collector answers a refusal that may pass: retryable in
    // the OTLP specification, and retried by the Python exporters of vLLM and SGLang after the
    // RetryInfo delay (the JS gRPC exporter reports it as a failure instead).
    if (may_refuse && ingestor_->Throttle(Transport::kGrpc, signal_)) return Throttled(context);
    // Decoded onto an arena that travels with the spans (pipeline/held.h).
    pipeline::Held<Request> decoded;
    std::vector<grpc::Slice> slices;
    const std::optional<std::string_view> wire = Contiguous(*request, &slices);
    if (!wire || !DecodeProtobuf(*wire, &decoded)) {
      ingestor_->CountMalformed(Transport::kGrpc, signal_);
      return grpc::Status(
          grpc::StatusCode::INVALID_ARGUMENT,
          fmt::format("cannot decode {} as protobuf", Request::descriptor()->name()));
    }
    IngestResult result = ingestor_->Accept(Transport::kGrpc, std::move(decoded));
    // No room for all of it after all (another request took the room since the look before
    // decoding): nothing was taken, and the sender is told to retry as above.
    if (result.refused) return Throttled(context);
    if (result.all_rejected())
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, result.error_message);
    const std::string body = ResponseProto(result);
    grpc::Slice slice(body);
    grpc::ByteBuffer out(&slice, 1);
    response->Swap(&out);
    return grpc::Status::OK;
  }

  static grpc::Status Throttled(grpc::CallbackServerContext* context) {
    static constexpr auto kRetryInfo = RetryInfoBytes(kRetryAfterSeconds);
    context->AddTrailingMetadata(std::string(kRetryInfoTrailer),
                                 std::string(kRetryInfo.data(), kRetryInfo.size()));
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, std::string(kThrottledMessage));
  }

  // The message's bytes in one piece (nullopt when gRPC cannot read it): its one slice, or a
  // copy of its slices in this thread's buffer, valid until the next call on this thread. `slices`
  // holds the slices (and so their bytes) until the caller is done. A request of 512 vLLM spans
  // is about 300 KB, which arrives in dozens of slices: the copy is a memcpy of about 600 bytes
  // per span, against the 4–5 µs a span costs the agent; one buffer is what lets the decoder
  // read with plain pointers.
  static std::optional<std::string_view> Contiguous(const grpc::ByteBuffer& message,
                                                    std::vector<grpc::Slice>* slices) {
    if (!message.Dump(slices).ok()) return std::nullopt;
    if (slices->size() == 1)
      return std::string_view(reinterpret_cast<const char*>((*slices)[0].begin()),
                              (*slices)[0].size());
    // Kept between calls up to kKeptBytes; a larger message's buffer is given back after it.
    thread_local std::string joined;
    constexpr std::size_t kKeptBytes = 1 << 20;
    if (joined.capacity() > kKeptBytes) std::string().swap(joined);
    joined.clear();
    for (const grpc::Slice& s : *slices)
      joined.append(reinterpret_cast<const char*>(s.begin()), s.size());
    return joined;
  }

  Signal signal_;
  Ingestor* ingestor_;
  RoomWaiter* waiter_;
};

namespace trace_v1 = opentelemetry::proto::collector::trace::v1;
namespace logs_v1 = opentelemetry::proto::collector::logs::v1;
namespace metrics_v1 = opentelemetry::proto::collector::metrics::v1;

using TraceRaw = RawExportService<
    TracesRequest,
    trace_v1::TraceService::WithRawCallbackMethod_Export<trace_v1::TraceService::Service>>;
using LogsRaw = RawExportService<
    LogsRequest, logs_v1::LogsService::WithRawCallbackMethod_Export<logs_v1::LogsService::Service>>;
using MetricsRaw = RawExportService<
    MetricsRequest,
    metrics_v1::MetricsService::WithRawCallbackMethod_Export<metrics_v1::MetricsService::Service>>;

}  // namespace

std::unique_ptr<GrpcFrontend> GrpcFrontend::Start(const OtlpReceiverOptions& options,
                                                  Ingestor* ingestor, std::string* error) {
  std::unique_ptr<GrpcFrontend> f(new GrpcFrontend());
  if (options.saturated_wait.count() > 0)
    f->waiter_ = std::make_unique<RoomWaiter>(ingestor, Transport::kGrpc, options.saturated_wait);
  f->services_.push_back(std::make_unique<TraceRaw>(Signal::kTraces, ingestor, f->waiter_.get()));
  f->services_.push_back(std::make_unique<LogsRaw>(Signal::kLogs, ingestor, f->waiter_.get()));
  f->services_.push_back(
      std::make_unique<MetricsRaw>(Signal::kMetrics, ingestor, f->waiter_.get()));
  const std::string& address = options.grpc_address;
  const std::size_t max_bytes = options.max_message_bytes;
  grpc::ServerBuilder builder;
  int selected_port = 0;
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &selected_port);
  builder.SetMaxReceiveMessageSize(static_cast<int>(std::min<std::size_t>(max_bytes, INT32_MAX)));
  for (auto& s : f->services_) builder.RegisterService(s.get());
  f->server_ = builder.BuildAndStart();
  if (f->server_ == nullptr || selected_port <= 0) {
    *error = fmt::format("OTLP gRPC receiver: cannot listen on {}", address);
    if (f->server_) f->server_->Shutdown();
    return nullptr;
  }
  f->port_ = static_cast<std::uint16_t>(selected_port);
  return f;
}

GrpcFrontend::~GrpcFrontend() { Stop(); }

void GrpcFrontend::Stop() {
  // First: the calls held for room are answered now, and later ones are not held, so the
  // server's shutdown below finds no call waiting on the waiter's thread.
  if (waiter_) waiter_->Stop();
  if (server_ == nullptr) return;
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  server_->Wait();
  server_.reset();
}

}  // namespace infertel::receiver::internal
