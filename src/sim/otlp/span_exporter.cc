#include "sim/otlp/span_exporter.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdlib>

#include "http/sync_client.h"
#include "http/url.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.grpc.pb.h"

namespace infertel::sim {
namespace {

class GrpcSpanExporter : public SpanExporter {
 public:
  GrpcSpanExporter(const std::string& target, std::chrono::milliseconds timeout)
      : stub_(otlp_collector_trace::TraceService::NewStub(
            grpc::CreateChannel(target, grpc::InsecureChannelCredentials()))),
        timeout_(timeout) {}

  bool Export(const TracesRequest& request, std::string* error) override {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + timeout_);
    otlp_collector_trace::ExportTraceServiceResponse response;
    grpc::Status st = stub_->Export(&ctx, request, &response);
    if (!st.ok()) {
      *error = "gRPC export failed: " + std::to_string(static_cast<int>(st.error_code())) + " " +
               st.error_message();
      return false;
    }
    return true;
  }

 private:
  std::unique_ptr<otlp_collector_trace::TraceService::Stub> stub_;
  std::chrono::milliseconds timeout_;
};

class HttpSpanExporter : public SpanExporter {
 public:
  HttpSpanExporter(infertel::http::Url url, std::chrono::milliseconds timeout)
      : url_(std::move(url)), client_(infertel::http::SyncTimeouts{timeout, timeout, timeout}) {}

  bool Export(const TracesRequest& request, std::string* error) override {
    infertel::http::SyncResponse res;
    if (!client_.Send("POST", url_, {}, "application/x-protobuf", request.SerializeAsString(), &res,
                      error)) {
      return false;
    }
    if (res.status < 200 || res.status >= 300) {
      *error = "HTTP export got status " + std::to_string(res.status);
      return false;
    }
    return true;
  }

 private:
  infertel::http::Url url_;
  infertel::http::SyncClient client_;
};

std::optional<std::int64_t> EnvInt(const SimEnvFn& env, std::string_view name) {
  auto v = env(name);
  if (!v || v->empty()) return std::nullopt;
  char* end = nullptr;
  long long x = std::strtoll(v->c_str(), &end, 10);
  // Like the SDK: an unparsable value falls back to the default.
  if (end == v->c_str() || *end != '\0') return std::nullopt;
  return x;
}

}  // namespace

SimEnvFn ProcessEnv() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* v = std::getenv(std::string(name).c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  };
}

std::unique_ptr<SpanExporter> MakeGrpcSpanExporter(std::string_view endpoint,
                                                   std::chrono::milliseconds timeout,
                                                   std::string* error) {
  std::string_view rest = endpoint;
  if (auto pos = rest.find("://"); pos != std::string_view::npos) {
    std::string_view scheme = rest.substr(0, pos);
    if (scheme != "grpc" && scheme != "http") {
      *error = "unsupported OTLP gRPC endpoint scheme '" + std::string(scheme) +
               "' (the simulator sends plaintext: grpc://, http:// or host:port)";
      return nullptr;
    }
    rest = rest.substr(pos + 3);
  }
  rest = rest.substr(0, rest.find('/'));
  if (rest.empty() || rest.find(':') == std::string_view::npos) {
    *error = "OTLP gRPC endpoint must name host:port, got '" + std::string(endpoint) + "'";
    return nullptr;
  }
  return std::make_unique<GrpcSpanExporter>(std::string(rest), timeout);
}

std::unique_ptr<SpanExporter> MakeHttpSpanExporter(std::string_view url,
                                                   std::chrono::milliseconds timeout,
                                                   std::string* error) {
  auto parsed = infertel::http::ParseUrl(url);
  if (!parsed || parsed->scheme != "http") {
    *error = "OTLP HTTP endpoint must be an http:// URL, got '" + std::string(url) + "'";
    return nullptr;
  }
  return std::make_unique<HttpSpanExporter>(*parsed, timeout);
}

std::optional<SpanExportConfig> SpanExportConfigFromEnv(std::string_view endpoint,
                                                        const SimEnvFn& env, std::string* error) {
  SpanExportConfig c;
  c.protocol = env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL").value_or("grpc");
  std::chrono::milliseconds timeout{
      EnvInt(env, "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
          .value_or(EnvInt(env, "OTEL_EXPORTER_OTLP_TIMEOUT").value_or(10000))};
  if (c.protocol == "grpc") {
    c.exporter = MakeGrpcSpanExporter(endpoint, timeout, error);
  } else if (c.protocol == "http/protobuf") {
    c.exporter = MakeHttpSpanExporter(endpoint, timeout, error);
  } else {
    *error = "Unsupported OTLP protocol '" + c.protocol +
             "' is configured in OTEL_EXPORTER_OTLP_TRACES_PROTOCOL (supported: grpc, "
             "http/protobuf)";
    return std::nullopt;
  }
  if (!c.exporter) return std::nullopt;
  if (auto v = EnvInt(env, "OTEL_BSP_SCHEDULE_DELAY"); v && *v >= 0)
    c.batch.schedule_delay = std::chrono::milliseconds(*v);
  if (auto v = EnvInt(env, "OTEL_BSP_MAX_QUEUE_SIZE"); v && *v > 0)
    c.batch.max_queue_size = static_cast<std::size_t>(*v);
  if (auto v = EnvInt(env, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"); v && *v > 0)
    c.batch.max_export_batch_size = static_cast<std::size_t>(*v);
  if (auto v = EnvInt(env, "OTEL_BSP_EXPORT_TIMEOUT"); v && *v > 0)
    c.batch.export_timeout = std::chrono::milliseconds(*v);
  if (c.batch.max_export_batch_size > c.batch.max_queue_size) {
    // The SDK rejects this combination; refusing to start is the closest equivalent.
    *error = "OTEL_BSP_MAX_EXPORT_BATCH_SIZE must be less than or equal to OTEL_BSP_MAX_QUEUE_SIZE";
    return std::nullopt;
  }
  return c;
}

BatchSpanProcessor::BatchSpanProcessor(std::unique_ptr<SpanExporter> exporter, Resource resource,
                                       std::string scope_name, BatchOptions options)
    : exporter_(std::move(exporter)),
      resource_(std::move(resource)),
      scope_name_(std::move(scope_name)),
      options_(options) {
  worker_ = std::thread([this] { Run(); });
}

BatchSpanProcessor::~BatchSpanProcessor() { Shutdown(); }

void BatchSpanProcessor::OnEnd(Span span) {
  std::lock_guard lk(mu_);
  if (done_) return;
  if (queue_.size() >= options_.max_queue_size) {
    ++dropped_;
    return;
  }
  queue_.push_back(std::move(span));
  if (queue_.size() >= options_.max_export_batch_size) cv_.notify_all();
}

void BatchSpanProcessor::Shutdown() {
  {
    std::lock_guard lk(mu_);
    if (done_ && !worker_.joinable()) return;
    done_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

std::uint64_t BatchSpanProcessor::dropped() const {
  std::lock_guard lk(mu_);
  return dropped_;
}
std::uint64_t BatchSpanProcessor::exported() const {
  std::lock_guard lk(mu_);
  return exported_;
}
std::uint64_t BatchSpanProcessor::failed() const {
  std::lock_guard lk(mu_);
  return failed_;
}

void BatchSpanProcessor::Run() {
  auto deadline = std::chrono::steady_clock::now() + options_.schedule_delay;
  for (;;) {
    std::deque<Span> batch;
    bool finishing = false;
    {
      std::unique_lock lk(mu_);
      cv_.wait_until(lk, deadline,
                     [&] { return done_ || queue_.size() >= options_.max_export_batch_size; });
      finishing = done_;
      if (!finishing && queue_.size() < options_.max_export_batch_size &&
          std::chrono::steady_clock::now() < deadline) {
        continue;  // spurious wake-up
      }
      std::size_t n = std::min(queue_.size(), options_.max_export_batch_size);
      for (std::size_t i = 0; i < n; ++i) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    if (!batch.empty()) ExportBatch(batch);
    if (finishing) {
      // Flush on shutdown: everything left, batch by batch.
      for (;;) {
        std::deque<Span> rest;
        {
          std::lock_guard lk(mu_);
          std::size_t n = std::min(queue_.size(), options_.max_export_batch_size);
          for (std::size_t i = 0; i < n; ++i) {
            rest.push_back(std::move(queue_.front()));
            queue_.pop_front();
          }
        }
        if (rest.empty()) return;
        ExportBatch(rest);
      }
    }
    bool more;
    {
      std::lock_guard lk(mu_);
      more = queue_.size() >= options_.max_export_batch_size;
    }
    // A full batch waiting goes out at once; otherwise the next one waits a whole delay.
    deadline = more ? std::chrono::steady_clock::now()
                    : std::chrono::steady_clock::now() + options_.schedule_delay;
  }
}

void BatchSpanProcessor::ExportBatch(std::deque<Span>& batch) {
  TracesRequest req;
  auto* rs = req.add_resource_spans();
  *rs->mutable_resource() = resource_;
  auto* ss = rs->add_scope_spans();
  ss->mutable_scope()->set_name(scope_name_);
  for (Span& s : batch) *ss->add_spans() = std::move(s);
  std::string error;
  bool ok = exporter_->Export(req, &error);
  std::lock_guard lk(mu_);
  if (ok) {
    exported_ += batch.size();
  } else {
    failed_ += batch.size();
  }
}

}  // namespace infertel::sim
