#pragma once
// OTLP/gRPC exporters (traces, logs, metrics) over an insecure channel: the generated
// services' Export method, called with a request encoded by pipeline::Encode (one size
// computation per span). Each Export() is one unary call with a deadline of `timeout`;
// headers are sent as call metadata (names lowercased, as gRPC requires); gzip compression on
// request.
//
// Outcome mapping: OK → ok (partial_success.rejected_* reported in ExportResult::rejected);
// codes of pipeline::IsRetryableGrpcCode → retryable; the rest → permanent.

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "pipeline/exporter.h"

namespace infertel::exporting {

struct OtlpGrpcOptions {
  // "host:port", "http://host:port" (a path, if any, is ignored). https:// is refused.
  std::string endpoint;
  std::map<std::string, std::string> headers;
  std::chrono::milliseconds timeout{10000};
  bool gzip = false;
  std::string name;  // exporter name in self-metrics; default "otlp_grpc"
};

// Returns nullptr and *error when the endpoint is malformed.
std::unique_ptr<pipeline::TraceExporter> MakeOtlpGrpcTraceExporter(const OtlpGrpcOptions& options,
                                                                   std::string* error);
std::unique_ptr<pipeline::LogExporter> MakeOtlpGrpcLogExporter(const OtlpGrpcOptions& options,
                                                               std::string* error);
std::unique_ptr<pipeline::MetricExporter> MakeOtlpGrpcMetricExporter(const OtlpGrpcOptions& options,
                                                                     std::string* error);

}  // namespace infertel::exporting
