#include "export/otlp_grpc/otlp_grpc_exporter.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/client_unary_call.h>
#include <grpcpp/impl/rpc_method.h>

#include <cctype>

#include "http/url.h"
#include "opentelemetry/proto/collector/logs/v1/logs_service.grpc.pb.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.grpc.pb.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.grpc.pb.h"
#include "otlp/partial_success.h"
#include "pipeline/encode.h"

namespace infertel::exporting {
namespace {

template <typename Request>
struct ServiceOf;
template <>
struct ServiceOf<TracesRequest> {
  using Service = otlp_collector_trace::TraceService;
};
template <>
struct ServiceOf<LogsRequest> {
  using Service = otlp_collector_logs::LogsService;
};
template <>
struct ServiceOf<MetricsRequest> {
  using Service = otlp_collector_metrics::MetricsService;
};

template <typename Request>
class OtlpGrpcExporter final : public pipeline::Exporter<Request> {
  using S = ServiceOf<Request>;

 public:
  OtlpGrpcExporter(const OtlpGrpcOptions& o, const std::string& target) : options_(o) {
    if (options_.name.empty()) options_.name = "otlp_grpc";
    grpc::ChannelArguments args;
    if (options_.gzip) args.SetCompressionAlgorithm(GRPC_COMPRESS_GZIP);
    channel_ = grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
    method_path_ = std::string("/") + S::Service::service_full_name() + "/Export";
    method_ = std::make_unique<grpc::internal::RpcMethod>(
        method_path_.c_str(), grpc::internal::RpcMethod::NORMAL_RPC, channel_);
    for (const auto& [k, v] : options_.headers) {
      std::string key = k;
      for (auto& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      metadata_.emplace_back(std::move(key), v);
    }
  }

  std::string_view Name() const noexcept override { return options_.name; }

  pipeline::ExportResult Export(const Request& request) noexcept override {
    try {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + options_.timeout);
      for (const auto& [k, v] : metadata_) ctx.AddMetadata(k, v);
      // The request goes out as bytes encoded here, with the span sizes the batch processor
      // computed at Submit (pipeline/encode.h): the generated stub's codec would size every
      // span twice more. The call is the one the generated stub makes, over a raw buffer.
      auto wire = std::make_unique<std::string>();
      pipeline::Encode(request, wire.get());
      // The slice owns the bytes from here on, without a copy.
      grpc::Slice slice(
          wire->data(), wire->size(), [](void* p) { delete static_cast<std::string*>(p); },
          wire.get());
      wire.release();
      grpc::ByteBuffer body(&slice, 1);
      grpc::ByteBuffer response;
      grpc::Status status = grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
          channel_.get(), *method_, &ctx, body, &response);
      if (status.ok()) {
        auto r = pipeline::ExportResult::Ok();
        // partial_success is read from the response's bytes: the compiled protos predate it.
        std::vector<grpc::Slice> slices;
        std::string bytes;
        if (response.Valid() && response.Dump(&slices).ok())
          for (const auto& s : slices)
            bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
        otlp::PartialSuccess ps;
        if (otlp::ParsePartialSuccessProto(bytes, &ps)) {
          r.rejected = ps.rejected;
          r.message = std::move(ps.error_message);
        }
        return r;
      }
      std::string msg =
          "gRPC status " + std::to_string(status.error_code()) + ": " + status.error_message();
      if (pipeline::IsRetryableGrpcCode(status.error_code()))
        return pipeline::ExportResult::Retryable(std::move(msg));
      return pipeline::ExportResult::Permanent(std::move(msg));
    } catch (const std::exception& e) {
      return pipeline::ExportResult::Retryable(e.what());
    }
  }

 private:
  OtlpGrpcOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::string method_path_;  // outlives method_, which keeps a pointer to it
  std::unique_ptr<grpc::internal::RpcMethod> method_;
  std::vector<std::pair<std::string, std::string>> metadata_;
};

// "http://host:port/..." or "host:port" → "host:port".
bool Target(const std::string& endpoint, std::string* target, std::string* error) {
  if (endpoint.rfind("https://", 0) == 0) {
    *error = "OTLP/gRPC endpoint " + endpoint + ": TLS is not supported";
    return false;
  }
  auto url = http::ParseUrl(endpoint);
  if (!url) {
    *error = "malformed OTLP/gRPC endpoint: " + endpoint;
    return false;
  }
  // Without a port, OTLP/gRPC's default port applies.
  bool has_port = endpoint.find(':', endpoint.find("://") == std::string::npos
                                         ? 0
                                         : endpoint.find("://") + 3) != std::string::npos;
  if (!has_port) url->port = 4317;
  *target = url->HostPort();
  return true;
}

template <typename Request>
std::unique_ptr<pipeline::Exporter<Request>> Make(const OtlpGrpcOptions& o, std::string* error) {
  std::string target;
  if (!Target(o.endpoint, &target, error)) return nullptr;
  return std::make_unique<OtlpGrpcExporter<Request>>(o, target);
}

}  // namespace

std::unique_ptr<pipeline::TraceExporter> MakeOtlpGrpcTraceExporter(const OtlpGrpcOptions& o,
                                                                   std::string* error) {
  return Make<TracesRequest>(o, error);
}
std::unique_ptr<pipeline::LogExporter> MakeOtlpGrpcLogExporter(const OtlpGrpcOptions& o,
                                                               std::string* error) {
  return Make<LogsRequest>(o, error);
}
std::unique_ptr<pipeline::MetricExporter> MakeOtlpGrpcMetricExporter(const OtlpGrpcOptions& o,
                                                                     std::string* error) {
  return Make<MetricsRequest>(o, error);
}

}  // namespace infertel::exporting
