#pragma once
// Helpers for the SGLang simulator tests: an in-process OTLP gRPC collector, span lookups and
// a simulator started in SGLang mode.

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/ids.h"
#include "core/telemetry.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.grpc.pb.h"
#include "sim/sim_server.h"
#include "sim_test_client.h"

namespace infertel::sim::testing {

struct SglReceived {
  Resource resource;
  std::string scope;
  Span span;
};

class SglCollector final : public otlp_collector_trace::TraceService::Service {
 public:
  SglCollector() {
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    b.RegisterService(this);
    server_ = b.BuildAndStart();
  }
  ~SglCollector() override {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  }
  grpc::Status Export(grpc::ServerContext*, const TracesRequest* req,
                      otlp_collector_trace::ExportTraceServiceResponse*) override {
    std::lock_guard lk(mu_);
    for (const auto& rs : req->resource_spans())
      for (const auto& ss : rs.scope_spans())
        for (const auto& sp : ss.spans()) spans_.push_back({rs.resource(), ss.scope().name(), sp});
    return grpc::Status::OK;
  }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }
  std::vector<SglReceived> all() const {
    std::lock_guard lk(mu_);
    return spans_;
  }
  std::size_t count() const {
    std::lock_guard lk(mu_);
    return spans_.size();
  }
  // The spans of the trace whose root is named "… Req <rid[:8]>" for `rid`, once the root
  // has arrived (the root span ends last).
  std::vector<Span> TraceOf(const std::string& rid_prefix8,
                            std::chrono::milliseconds timeout = std::chrono::seconds(5)) const {
    std::vector<Span> out;
    WaitFor(
        [&] {
          out.clear();
          std::string trace;
          for (const auto& r : all()) {
            const std::string& n = r.span.name();
            if (n.size() >= 13 && n.substr(n.size() - 13) == " Req " + rid_prefix8) {
              trace = r.span.trace_id();
            }
          }
          if (trace.empty()) return false;
          for (const auto& r : all())
            if (r.span.trace_id() == trace) out.push_back(r.span);
          return true;
        },
        timeout);
    return out;
  }

 private:
  mutable std::mutex mu_;
  std::vector<SglReceived> spans_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

inline const AnyValue* SpanAttr(const Span& s, std::string_view key) {
  return FindAttr(s.attributes(), key);
}
inline std::vector<std::string> AttrKeys(const Span& s) {
  std::vector<std::string> k;
  for (const auto& kv : s.attributes()) k.push_back(kv.key());
  return k;
}
inline const Span* ByName(const std::vector<Span>& spans, std::string_view name) {
  for (const auto& s : spans)
    if (s.name() == name) return &s;
  return nullptr;
}
inline const Span* ByPrefix(const std::vector<Span>& spans, std::string_view prefix) {
  for (const auto& s : spans)
    if (s.name().rfind(prefix, 0) == 0) return &s;
  return nullptr;
}
inline std::vector<const Span*> AllNamed(const std::vector<Span>& spans, std::string_view name) {
  std::vector<const Span*> out;
  for (const auto& s : spans)
    if (s.name() == name) out.push_back(&s);
  return out;
}
inline const Span* ById(const std::vector<Span>& spans, const std::string& id) {
  for (const auto& s : spans)
    if (s.span_id() == id) return &s;
  return nullptr;
}

// A simulator in SGLang mode; fast steps, a fixed seed.
inline std::unique_ptr<SimServer> StartSglang(SimOptions o,
                                              std::map<std::string, std::string> env = {},
                                              double speed = 50.0) {
  o.engine = "sglang";
  o.env = MapEnv(std::move(env));
  o.engine_config.speed = speed;
  o.engine_config.seed = 5;
  if (!o.log_sink) o.log_sink = [](const std::string&) {};
  std::string error;
  auto s = SimServer::Start(o, &error);
  EXPECT_TRUE(s) << error;
  return s;
}

// The `id` of a JSON response body.
inline std::string JsonId(const std::string& body) {
  simdjson::dom::parser p;
  std::string_view id;
  if (p.parse(body)["id"].get_string().get(id) != simdjson::SUCCESS) return "";
  return std::string(id);
}

}  // namespace infertel::sim::testing
