#include "export/otlp_http/otlp_http_exporter.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <mutex>

#include "common/telemetry_builders.h"
#include "http/simple_server.h"
#include "otlp/gzip.h"
#include "otlp/json.h"
#include "otlp/partial_success.h"
#include "pipeline/batch_processor.h"

namespace infertel::exporting {
namespace {

using google::protobuf::util::MessageDifferencer;
using namespace std::chrono_literals;
namespace bhttp = boost::beast::http;

// An in-process OTLP/HTTP backend answering from a script of statuses (then 200).
class FakeBackend {
 public:
  struct Received {
    std::string target, content_type, content_encoding, auth;
    std::string body;  // decompressed
  };

  FakeBackend() {
    std::string error;
    server_ = http::SimpleServer::Start(
        http::HostPort{"127.0.0.1", 0},
        [this](const http::StringRequest& req) { return Handle(req); }, &error);
    EXPECT_NE(server_, nullptr) << error;
  }

  std::string Base() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }

  void Script(std::vector<int> statuses) {
    std::lock_guard l(mu_);
    script_ = std::move(statuses);
  }
  void SetRetryAfter(std::string v) {
    std::lock_guard l(mu_);
    retry_after_ = std::move(v);
  }
  void SetOkBody(std::string body, std::string ctype) {
    std::lock_guard l(mu_);
    ok_body_ = std::move(body);
    ok_ctype_ = std::move(ctype);
  }
  std::vector<Received> Requests() {
    std::lock_guard l(mu_);
    return received_;
  }

 private:
  http::StringResponse Handle(const http::StringRequest& req) {
    std::lock_guard l(mu_);
    Received r;
    r.target = std::string(req.target());
    r.content_type = std::string(req[bhttp::field::content_type]);
    r.content_encoding = std::string(req[bhttp::field::content_encoding]);
    r.auth = std::string(req["x-api-key"]);
    r.body = req.body();
    if (r.content_encoding == "gzip") {
      std::string plain;
      EXPECT_TRUE(otlp::GzipDecompress(req.body(), &plain, 1 << 24));
      r.body = plain;
    }
    received_.push_back(std::move(r));
    int status = 200;
    if (!script_.empty()) {
      status = script_.front();
      script_.erase(script_.begin());
    }
    if (status != 200) {
      auto res =
          http::MakeResponse(status, "{\"code\":14,\"message\":\"not now\"}", "application/json");
      if (!retry_after_.empty()) res.set(bhttp::field::retry_after, retry_after_);
      return res;
    }
    return http::MakeResponse(200, ok_body_, ok_ctype_);
  }

  std::mutex mu_;
  std::vector<int> script_;
  std::string retry_after_;
  std::string ok_body_;
  std::string ok_ctype_ = "application/x-protobuf";
  std::vector<Received> received_;
  std::unique_ptr<http::SimpleServer> server_;
};

OtlpHttpOptions Opts(const FakeBackend& b, HttpEncoding enc, bool gzip = false) {
  OtlpHttpOptions o;
  o.url = SignalUrl(b.Base(), "", "traces");
  o.encoding = enc;
  o.gzip = gzip;
  o.headers["x-api-key"] = "secret";
  o.timeout = 2s;
  return o;
}

TEST(SignalUrlTest, FollowsTheOtelEndpointRules) {
  EXPECT_EQ(SignalUrl("http://c:4318", "", "traces"), "http://c:4318/v1/traces");
  EXPECT_EQ(SignalUrl("http://c:4318/", "", "logs"), "http://c:4318/v1/logs");
  EXPECT_EQ(SignalUrl("http://c:4318/otlp", "", "metrics"), "http://c:4318/otlp/v1/metrics");
  EXPECT_EQ(SignalUrl("http://c:4318", "http://d:9/custom", "traces"), "http://d:9/custom");
}

TEST(OtlpHttpExporterTest, PostsProtobuf) {
  FakeBackend backend;
  std::string error;
  auto e = MakeOtlpHttpTraceExporter(Opts(backend, HttpEncoding::kProtobuf), &error);
  ASSERT_NE(e, nullptr) << error;
  const TracesRequest req = testing::RichRequest();
  EXPECT_TRUE(e->Export(req).ok());
  auto got = backend.Requests();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].target, "/v1/traces");
  EXPECT_EQ(got[0].content_type, "application/x-protobuf");
  EXPECT_EQ(got[0].auth, "secret");
  TracesRequest decoded;
  ASSERT_TRUE(decoded.ParseFromString(got[0].body));
  EXPECT_TRUE(MessageDifferencer::Equals(req, decoded));
}

TEST(OtlpHttpExporterTest, PostsJsonGzipped) {
  FakeBackend backend;
  std::string error;
  auto e = MakeOtlpHttpTraceExporter(Opts(backend, HttpEncoding::kJson, true), &error);
  ASSERT_NE(e, nullptr) << error;
  const TracesRequest req = testing::RichRequest();
  EXPECT_TRUE(e->Export(req).ok());
  auto got = backend.Requests();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].content_type, "application/json");
  EXPECT_EQ(got[0].content_encoding, "gzip");
  EXPECT_NE(got[0].body.find("\"traceId\":\"0af7651916cd43dd8448eb211c80319c\""),
            std::string::npos);
  TracesRequest decoded;
  ASSERT_TRUE(otlp_json::DecodeTraces(got[0].body, &decoded, &error)) << error;
  EXPECT_TRUE(MessageDifferencer::Equals(req, decoded));
}

TEST(OtlpHttpExporterTest, ClassifiesStatuses) {
  FakeBackend backend;
  backend.Script({503, 429, 400, 500});
  backend.SetRetryAfter("3");
  std::string error;
  auto e = MakeOtlpHttpTraceExporter(Opts(backend, HttpEncoding::kProtobuf), &error);
  ASSERT_NE(e, nullptr);
  const TracesRequest req = testing::RichRequest();
  auto r = e->Export(req);
  EXPECT_EQ(r.code, pipeline::ExportCode::kRetryable);
  EXPECT_EQ(r.retry_after_ms, 3000);
  EXPECT_NE(r.message.find("503"), std::string::npos);
  EXPECT_EQ(e->Export(req).code, pipeline::ExportCode::kRetryable);
  EXPECT_EQ(e->Export(req).code, pipeline::ExportCode::kPermanent);
  EXPECT_EQ(e->Export(req).code, pipeline::ExportCode::kPermanent);
  EXPECT_TRUE(e->Export(req).ok());
}

TEST(OtlpHttpExporterTest, ConnectionRefusedIsRetryable) {
  std::uint16_t port;
  {
    FakeBackend gone;  // learn a free port, then close it
    port = static_cast<std::uint16_t>(std::stoi(gone.Base().substr(gone.Base().rfind(':') + 1)));
  }
  OtlpHttpOptions o;
  o.url = "http://127.0.0.1:" + std::to_string(port) + "/v1/traces";
  o.timeout = 1s;
  std::string error;
  auto e = MakeOtlpHttpTraceExporter(o, &error);
  ASSERT_NE(e, nullptr);
  auto r = e->Export(testing::RichRequest());
  EXPECT_EQ(r.code, pipeline::ExportCode::kRetryable);
  EXPECT_NE(r.message.find("connect"), std::string::npos) << r.message;
}

TEST(OtlpHttpExporterTest, ReportsPartialSuccess) {
  FakeBackend backend;
  backend.SetOkBody(otlp::EncodePartialSuccessProto({3, "too old"}), "application/x-protobuf");
  std::string error;
  auto e = MakeOtlpHttpTraceExporter(Opts(backend, HttpEncoding::kProtobuf), &error);
  auto r = e->Export(testing::RichRequest());
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.rejected, 3);
  EXPECT_EQ(r.message, "too old");

  backend.SetOkBody(R"({"partialSuccess":{"rejectedSpans":"2","errorMessage":"dup"}})",
                    "application/json");
  auto e2 = MakeOtlpHttpTraceExporter(Opts(backend, HttpEncoding::kJson), &error);
  auto r2 = e2->Export(testing::RichRequest());
  EXPECT_TRUE(r2.ok());
  EXPECT_EQ(r2.rejected, 2);
  EXPECT_EQ(r2.message, "dup");
}

TEST(OtlpHttpExporterTest, RefusesBadEndpoints) {
  OtlpHttpOptions o;
  std::string error;
  o.url = "https://c:4318/v1/traces";
  EXPECT_EQ(MakeOtlpHttpTraceExporter(o, &error), nullptr);
  o.url = "http://:x";
  EXPECT_EQ(MakeOtlpHttpTraceExporter(o, &error), nullptr);
}

TEST(OtlpHttpExporterTest, BatchProcessorRetries503ButNot400) {
  FakeBackend backend;
  backend.Script({503, 503});
  std::string error;
  std::vector<std::unique_ptr<pipeline::TraceExporter>> ex;
  ex.push_back(MakeOtlpHttpTraceExporter(Opts(backend, HttpEncoding::kProtobuf), &error));
  pipeline::BatchOptions bo;
  bo.max_delay = 0ms;
  bo.retry.initial_backoff = 1ms;
  pipeline::TraceBatchProcessor p(std::move(ex), bo);
  p.Submit(testing::RichRequest());
  ASSERT_TRUE(p.Flush(5s));
  EXPECT_EQ(backend.Requests().size(), 3u);
  EXPECT_EQ(p.Stats(0).sent.load(), 1u);
  EXPECT_EQ(p.Stats(0).retries.load(), 2u);

  backend.Script({400});
  p.Submit(testing::RichRequest());
  ASSERT_TRUE(p.Flush(5s));
  EXPECT_EQ(backend.Requests().size(), 4u);
  EXPECT_EQ(p.Stats(0).dropped_export_failed.load(), 1u);
}

}  // namespace
}  // namespace infertel::exporting
