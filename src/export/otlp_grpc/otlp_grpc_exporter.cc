#include "export/otlp_grpc/otlp_grpc_exporter.h"

#include <grpcpp/grpcpp.h>

#include <cctype>

#include "export/partial_success.h"
#include "http/url.h"
#include "opentelemetry/proto/collector/logs/v1/logs_service.grpc.pb.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.grpc.pb.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.grpc.pb.h"

namespace infertel::exporting {
namespace {

template <typename Request>
struct ServiceOf;
template <>
struct ServiceOf<TracesRequest> {
  using Service = otlp_collector_trace::TraceService;
  using Response = otlp_collector_trace::ExportTraceServiceResponse;
};
template <>
struct ServiceOf<LogsRequest> {
  using Service = otlp_collector_logs::LogsService;
  using Response = otlp_collector_logs::ExportLogsServiceResponse;
};
template <>
struct ServiceOf<MetricsRequest> {
  using Service = otlp_collector_metrics::MetricsService;
  using Response = otlp_collector_metrics::ExportMetricsServiceResponse;
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
    stub_ = S::Service::NewStub(channel_);
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
      typename S::Response response;
      grpc::Status status = stub_->Export(&ctx, request, &response);
      if (status.ok()) {
        auto r = pipeline::ExportResult::Ok();
        // partial_success is unknown to the compiled protos and kept as an unknown field.
        PartialSuccess ps;
        if (ParsePartialSuccessProto(response.SerializeAsString(), &ps)) {
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
  std::unique_ptr<typename S::Service::Stub> stub_;
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
