#pragma once
// OTLP/HTTP exporters (traces, logs, metrics): POST of a protobuf (application/x-protobuf) or
// OTLP/JSON (application/json) body to one URL, optionally gzip-compressed.
//
// Outcome mapping: 2xx → ok (a partial_success in the body is parsed: its rejected count is
// reported in ExportResult::rejected, not as an error); 429/502/503/504 and transport
// failures (connect, timeout, reset) → retryable, honouring Retry-After (seconds) when given;
// every other status → permanent.

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "pipeline/exporter.h"

namespace infertel::exporting {

enum class HttpEncoding { kProtobuf, kJson };

struct OtlpHttpOptions {
  // The exact URL to POST to, e.g. http://collector:4318/v1/traces (see SignalUrl()).
  std::string url;
  HttpEncoding encoding = HttpEncoding::kProtobuf;
  std::map<std::string, std::string> headers;
  std::chrono::milliseconds timeout{10000};
  bool gzip = false;
  std::string name;  // exporter name in self-metrics; default "otlp_http"
};

// The URL for one signal, following the OTEL_EXPORTER_OTLP_* rules: a per-signal endpoint is
// used as is; otherwise `/v1/<signal>` is appended to the base endpoint's path (with exactly
// one slash between). `signal` is "traces", "logs" or "metrics".
std::string SignalUrl(std::string_view base_endpoint, std::string_view per_signal_endpoint,
                      std::string_view signal);

// Returns nullptr and *error when the URL is malformed or not http://.
std::unique_ptr<pipeline::TraceExporter> MakeOtlpHttpTraceExporter(const OtlpHttpOptions& options,
                                                                   std::string* error);
std::unique_ptr<pipeline::LogExporter> MakeOtlpHttpLogExporter(const OtlpHttpOptions& options,
                                                               std::string* error);
std::unique_ptr<pipeline::MetricExporter> MakeOtlpHttpMetricExporter(const OtlpHttpOptions& options,
                                                                     std::string* error);

}  // namespace infertel::exporting
