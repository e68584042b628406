#include "export/otlp_http/otlp_http_exporter.h"

#include <charconv>

#include "http/sync_client.h"
#include "otlp/gzip.h"
#include "otlp/json.h"
#include "otlp/partial_success.h"
#include "pipeline/encode.h"
#include "pipeline/signal.h"

namespace infertel::exporting {
namespace {

template <typename Request>
class OtlpHttpExporter final : public pipeline::Exporter<Request> {
 public:
  OtlpHttpExporter(const OtlpHttpOptions& o, http::Url url)
      : options_(o),
        url_(std::move(url)),
        client_(http::SyncTimeouts{o.timeout, o.timeout, o.timeout}) {
    if (options_.name.empty()) options_.name = "otlp_http";
    for (const auto& [k, v] : options_.headers) headers_.emplace_back(k, v);
    if (options_.gzip) headers_.emplace_back("Content-Encoding", "gzip");
  }

  std::string_view Name() const noexcept override { return options_.name; }

  pipeline::ExportResult Export(const Request& request) noexcept override {
    try {
      return DoExport(request);
    } catch (const std::exception& e) {  // allocation failure and the like
      return pipeline::ExportResult::Retryable(e.what());
    }
  }

  void Shutdown() noexcept override { client_.Close(); }

 private:
  pipeline::ExportResult DoExport(const Request& request) {
    const bool json = options_.encoding == HttpEncoding::kJson;
    std::string body = json ? otlp_json::Encode(request) : pipeline::Encode(request);
    if (options_.gzip) {
      std::string z;
      if (!otlp::GzipCompress(body, &z)) return pipeline::ExportResult::Permanent("gzip failed");
      body = std::move(z);
    }
    http::SyncResponse res;
    std::string error;
    const char* ctype = json ? "application/json" : "application/x-protobuf";
    if (!client_.Send("POST", url_, headers_, ctype, std::move(body), &res, &error))
      return pipeline::ExportResult::Retryable(std::move(error));
    if (res.status >= 200 && res.status < 300) return Success(res);
    std::string msg = "HTTP " + std::to_string(res.status);
    if (!res.body.empty()) msg += ": " + res.body.substr(0, 256);
    if (!pipeline::IsRetryableHttpStatus(res.status))
      return pipeline::ExportResult::Permanent(std::move(msg));
    auto r = pipeline::ExportResult::Retryable(std::move(msg));
    if (const std::string* ra = res.Header("retry-after")) {
      std::int64_t secs = 0;
      auto [p, ec] = std::from_chars(ra->data(), ra->data() + ra->size(), secs);
      if (ec == std::errc() && secs > 0) r.retry_after_ms = secs * 1000;
    }
    return r;
  }

  pipeline::ExportResult Success(const http::SyncResponse& res) {
    auto ok = pipeline::ExportResult::Ok();
    if (res.body.empty()) return ok;
    const std::string* ct = res.Header("content-type");
    otlp::PartialSuccess ps;
    const bool parsed = ct != nullptr && ct->find("json") != std::string::npos
                            ? otlp::ParsePartialSuccessJson(res.body, &ps)
                            : otlp::ParsePartialSuccessProto(res.body, &ps);
    if (parsed) {
      ok.rejected = ps.rejected;
      ok.message = std::move(ps.error_message);
    }
    return ok;
  }

  OtlpHttpOptions options_;
  http::Url url_;
  http::SyncClient client_;
  std::vector<std::pair<std::string, std::string>> headers_;
};

template <typename Request>
std::unique_ptr<pipeline::Exporter<Request>> Make(const OtlpHttpOptions& o, std::string* error) {
  auto url = http::ParseUrl(o.url);
  if (!url) {
    *error = "malformed OTLP/HTTP endpoint: " + o.url;
    return nullptr;
  }
  if (url->scheme != "http") {
    *error = "OTLP/HTTP endpoint " + o.url + ": only http:// is supported";
    return nullptr;
  }
  return std::make_unique<OtlpHttpExporter<Request>>(o, std::move(*url));
}

}  // namespace

std::string SignalUrl(std::string_view base, std::string_view per_signal, std::string_view signal) {
  if (!per_signal.empty()) return std::string(per_signal);
  std::string url(base);
  while (!url.empty() && url.back() == '/') url.pop_back();
  url += "/v1/";
  url += signal;
  return url;
}

std::unique_ptr<pipeline::TraceExporter> MakeOtlpHttpTraceExporter(const OtlpHttpOptions& o,
                                                                   std::string* error) {
  return Make<TracesRequest>(o, error);
}
std::unique_ptr<pipeline::LogExporter> MakeOtlpHttpLogExporter(const OtlpHttpOptions& o,
                                                               std::string* error) {
  return Make<LogsRequest>(o, error);
}
std::unique_ptr<pipeline::MetricExporter> MakeOtlpHttpMetricExporter(const OtlpHttpOptions& o,
                                                                     std::string* error) {
  return Make<MetricsRequest>(o, error);
}

}  // namespace infertel::exporting
