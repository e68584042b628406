#include "export/otlp_grpc/otlp_grpc_exporter.h"

#include <google/protobuf/util/message_differencer.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <deque>
#include <mutex>

#include "common/telemetry_builders.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.grpc.pb.h"
#include "pipeline/batch_processor.h"

namespace infertel::exporting {
namespace {

using google::protobuf::util::MessageDifferencer;
using namespace std::chrono_literals;

// An in-process OTLP/gRPC TraceService answering from a script of status codes (then OK).
class FakeTraceService final : public otlp_collector_trace::TraceService::Service {
 public:
  grpc::Status Export(grpc::ServerContext* ctx, const TracesRequest* req,
                      otlp_collector_trace::ExportTraceServiceResponse* response) override {
    std::lock_guard l(mu);
    requests.push_back(*req);
    // partial_success (field 1) postdates the compiled protos: written as an unknown field.
    if (!partial_success.empty())
      response->GetReflection()->MutableUnknownFields(response)->AddLengthDelimited(
          1, partial_success);
    auto md = ctx->client_metadata().find("x-api-key");
    if (md != ctx->client_metadata().end()) api_key.assign(md->second.data(), md->second.size());
    if (!script.empty()) {
      grpc::StatusCode code = script.front();
      script.pop_front();
      return grpc::Status(code, "scripted");
    }
    return grpc::Status::OK;
  }

  std::mutex mu;
  std::vector<TracesRequest> requests;
  std::deque<grpc::StatusCode> script;
  std::string api_key;
  std::string partial_success;  // ExportTracePartialSuccess, encoded
};

class OtlpGrpcExporterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    b.RegisterService(&service_);
    server_ = b.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port_, 0);
  }
  void TearDown() override { server_->Shutdown(std::chrono::system_clock::now() + 1s); }

  OtlpGrpcOptions Opts(bool gzip = false) {
    OtlpGrpcOptions o;
    o.endpoint = "http://127.0.0.1:" + std::to_string(port_);
    o.headers["X-Api-Key"] = "secret";
    o.timeout = 2s;
    o.gzip = gzip;
    return o;
  }

  FakeTraceService service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

TEST_F(OtlpGrpcExporterTest, ExportsWithMetadataAndGzip) {
  std::string error;
  auto e = MakeOtlpGrpcTraceExporter(Opts(true), &error);
  ASSERT_NE(e, nullptr) << error;
  EXPECT_EQ(e->Name(), "otlp_grpc");
  const TracesRequest req = testing::RichRequest();
  auto r = e->Export(req);
  EXPECT_TRUE(r.ok()) << r.message;
  std::lock_guard l(service_.mu);
  ASSERT_EQ(service_.requests.size(), 1u);
  EXPECT_TRUE(MessageDifferencer::Equals(req, service_.requests[0]));
  EXPECT_EQ(service_.api_key, "secret");  // header names are lowercased for gRPC
}

TEST_F(OtlpGrpcExporterTest, ReadsPartialSuccessFromTheResponse) {
  // rejected_spans (1) = 2, error_message (2) = "too old"
  service_.partial_success = std::string("\x08\x02\x12\x07too old", 11);
  std::string error;
  auto e = MakeOtlpGrpcTraceExporter(Opts(), &error);
  ASSERT_NE(e, nullptr) << error;
  auto r = e->Export(testing::RichRequest());
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.rejected, 2);
  EXPECT_EQ(r.message, "too old");
}

TEST_F(OtlpGrpcExporterTest, MapsStatusCodes) {
  service_.script = {grpc::StatusCode::UNAVAILABLE, grpc::StatusCode::RESOURCE_EXHAUSTED,
                     grpc::StatusCode::INVALID_ARGUMENT, grpc::StatusCode::UNAUTHENTICATED};
  std::string error;
  auto e = MakeOtlpGrpcTraceExporter(Opts(), &error);
  const TracesRequest req = testing::RichRequest();
  EXPECT_EQ(e->Export(req).code, pipeline::ExportCode::kRetryable);
  EXPECT_EQ(e->Export(req).code, pipeline::ExportCode::kRetryable);
  EXPECT_EQ(e->Export(req).code, pipeline::ExportCode::kPermanent);
  EXPECT_EQ(e->Export(req).code, pipeline::ExportCode::kPermanent);
  EXPECT_TRUE(e->Export(req).ok());
}

TEST_F(OtlpGrpcExporterTest, BatchProcessorRetriesUnavailableThenSucceeds) {
  service_.script = {grpc::StatusCode::UNAVAILABLE, grpc::StatusCode::UNAVAILABLE};
  std::string error;
  std::vector<std::unique_ptr<pipeline::TraceExporter>> ex;
  ex.push_back(MakeOtlpGrpcTraceExporter(Opts(), &error));
  pipeline::BatchOptions bo;
  bo.max_delay = 0ms;
  bo.retry.initial_backoff = 1ms;
  pipeline::TraceBatchProcessor p(std::move(ex), bo);
  p.Submit(testing::RichRequest());
  ASSERT_TRUE(p.Flush(5s));
  EXPECT_EQ(p.Stats(0).sent.load(), 1u);
  EXPECT_EQ(p.Stats(0).retries.load(), 2u);
  std::lock_guard l(service_.mu);
  ASSERT_EQ(service_.requests.size(), 3u);
  // Each attempt sends the same bytes, encoded with the sizes computed at Submit.
  for (const auto& got : service_.requests)
    EXPECT_TRUE(MessageDifferencer::Equals(testing::RichRequest(), got));
}

TEST(OtlpGrpcExporterNoServerTest, DeadBackendIsRetryableWithinTheDeadline) {
  OtlpGrpcOptions o;
  o.endpoint = "127.0.0.1:1";  // nothing listens on port 1
  o.timeout = 300ms;
  std::string error;
  auto e = MakeOtlpGrpcTraceExporter(o, &error);
  ASSERT_NE(e, nullptr) << error;
  const auto start = std::chrono::steady_clock::now();
  auto r = e->Export(testing::RichRequest());
  EXPECT_EQ(r.code, pipeline::ExportCode::kRetryable) << r.message;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  o.endpoint = "https://c:4317";
  EXPECT_EQ(MakeOtlpGrpcTraceExporter(o, &error), nullptr);
}

}  // namespace
}  // namespace infertel::exporting
