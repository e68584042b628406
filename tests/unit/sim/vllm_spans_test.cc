// The simulator's native vLLM spans (facts/vllm.md §1), decoded from what an in-process OTLP
// gRPC TraceService and an OTLP/HTTP receiver actually get.

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <condition_variable>
#include <mutex>
#include <set>

#include "core/clock.h"
#include "core/ids.h"
#include "core/telemetry.h"
#include "http/simple_server.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.grpc.pb.h"
#include "sim/otlp/span_exporter.h"
#include "sim/sim_server.h"
#include "sim_test_client.h"

namespace infertel::sim {
namespace {

using namespace std::chrono_literals;
using testing::MapEnv;
using testing::SimPost;
using testing::WaitFor;

// Everything received, flattened to (resource, scope, span).
struct Received {
  Resource resource;
  std::string scope;
  Span span;
};

class Collector {
 public:
  void Add(const TracesRequest& req) {
    std::lock_guard lk(mu_);
    ++requests_;
    for (const auto& rs : req.resource_spans())
      for (const auto& ss : rs.scope_spans())
        for (const auto& sp : ss.spans()) spans_.push_back({rs.resource(), ss.scope().name(), sp});
  }
  std::vector<Received> spans() const {
    std::lock_guard lk(mu_);
    return spans_;
  }
  std::size_t count() const {
    std::lock_guard lk(mu_);
    return spans_.size();
  }
  int requests() const {
    std::lock_guard lk(mu_);
    return requests_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<Received> spans_;
  int requests_ = 0;
};

class GrpcCollector final : public otlp_collector_trace::TraceService::Service {
 public:
  GrpcCollector() {
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    b.RegisterService(this);
    server_ = b.BuildAndStart();
  }
  ~GrpcCollector() override { server_->Shutdown(std::chrono::system_clock::now() + 1s); }
  grpc::Status Export(grpc::ServerContext*, const TracesRequest* req,
                      otlp_collector_trace::ExportTraceServiceResponse*) override {
    got.Add(*req);
    return grpc::Status::OK;
  }
  std::string endpoint(const std::string& scheme = "grpc://") const {
    return scheme + "127.0.0.1:" + std::to_string(port_);
  }
  Collector got;

 private:
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

const AnyValue& Attr(const Span& s, std::string_view key) {
  static const AnyValue kMissing;
  const AnyValue* v = FindAttr(s.attributes(), key);
  EXPECT_NE(v, nullptr) << "missing attribute " << key;
  return v ? *v : kMissing;
}
std::string ResAttr(const Resource& r, std::string_view key) {
  const AnyValue* v = FindAttr(r.attributes(), key);
  return v ? v->string_value() : "<absent>";
}
std::set<std::string> Keys(const Span& s) {
  std::set<std::string> out;
  for (const auto& kv : s.attributes()) out.insert(kv.key());
  return out;
}

std::string ChatBody(const std::string& extra = "") {
  return R"({"model":"demo-model","messages":[{"role":"user","content":"hello there"}])" + extra +
         "}";
}

struct Usage {
  int prompt = 0, completion = 0;
};
Usage UsageOf(const std::string& body) {
  simdjson::dom::parser p;
  auto doc = p.parse(body);
  return {static_cast<int>(int64_t(doc["usage"]["prompt_tokens"])),
          static_cast<int>(int64_t(doc["usage"]["completion_tokens"]))};
}

class VllmSpansTest : public ::testing::Test {
 protected:
  std::unique_ptr<SimServer> Start(SimOptions o, std::map<std::string, std::string> env = {}) {
    if (!env.count("OTEL_BSP_SCHEDULE_DELAY")) env["OTEL_BSP_SCHEDULE_DELAY"] = "20";
    o.env = MapEnv(env);
    if (o.otlp_traces_endpoint.empty()) o.otlp_traces_endpoint = collector_.endpoint();
    o.engine_config.speed = 50.0;
    o.engine_config.seed = 3;
    std::string error;
    auto s = SimServer::Start(o, &error);
    EXPECT_TRUE(s) << error;
    return s;
  }
  GrpcCollector collector_;
};

TEST_F(VllmSpansTest, V1SpanHasVllmShapeParentAndAttributes) {
  auto server = Start(SimOptions{}, {{"OTEL_SERVICE_NAME", "vllm-server"},
                                     {"OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=test"}});
  ASSERT_TRUE(server);
  const std::string tid = "4bf92f3577b34da6a3ce929d0e0e4736";
  const std::string sid = "00f067aa0ba902b7";
  const std::uint64_t before = WallNanos();
  auto res = SimPost(server->port(), "/v1/chat/completions",
                     ChatBody(R"(,"temperature":0,"top_p":0.9,"max_tokens":8,"ignore_eos":true)"),
                     {{"X-Request-Id", "abc"},
                      {"traceparent", "00-" + tid + "-" + sid + "-01"},
                      {"tracestate", "vendor=value"}});
  const std::uint64_t after = WallNanos();
  ASSERT_EQ(res.status, 200) << res.body;
  ASSERT_TRUE(WaitFor([&] { return collector_.got.count() == 1; }));
  Received r = collector_.got.spans()[0];
  const Span& s = r.span;

  EXPECT_EQ(r.scope, "vllm.tracing.otel");
  EXPECT_EQ(ResAttr(r.resource, "service.name"), "vllm-server");
  EXPECT_EQ(ResAttr(r.resource, "deployment.environment"), "test");
  EXPECT_EQ(ResAttr(r.resource, "telemetry.sdk.language"), "python");
  EXPECT_EQ(ResAttr(r.resource, "telemetry.sdk.name"), "opentelemetry");
  EXPECT_NE(ResAttr(r.resource, "telemetry.sdk.version"), "<absent>");
  EXPECT_EQ(ResAttr(r.resource, "vllm.instrumenting_module_name"), "vllm.llm_engine");
  EXPECT_EQ(ResAttr(r.resource, "vllm.process_id"), std::to_string(getpid()));

  EXPECT_EQ(s.name(), "llm_request");
  EXPECT_EQ(s.kind(), otlp_trace::Span::SPAN_KIND_SERVER);
  EXPECT_EQ(s.trace_id(), std::string(AsBytes(*TraceIdFromHex(tid))));
  EXPECT_EQ(s.parent_span_id(), std::string(AsBytes(*SpanIdFromHex(sid))));
  EXPECT_EQ(s.trace_state(), "vendor=value");
  EXPECT_EQ(s.span_id().size(), 8u);
  EXPECT_FALSE(s.has_status());
  EXPECT_EQ(s.events_size(), 0);
  EXPECT_LE(before, s.start_time_unix_nano());
  EXPECT_LT(s.start_time_unix_nano(), s.end_time_unix_nano());
  EXPECT_LE(s.end_time_unix_nano(), after);

  // Exactly vLLM V1's keys: temperature 0 is falsy, so absent; no model, no V0 keys.
  EXPECT_EQ(Keys(s), (std::set<std::string>{
                         "gen_ai.latency.time_to_first_token", "gen_ai.latency.e2e",
                         "gen_ai.latency.time_in_queue", "gen_ai.usage.prompt_tokens",
                         "gen_ai.usage.completion_tokens", "gen_ai.latency.time_in_model_prefill",
                         "gen_ai.latency.time_in_model_decode",
                         "gen_ai.latency.time_in_model_inference", "gen_ai.request.id",
                         "gen_ai.request.top_p", "gen_ai.request.max_tokens", "gen_ai.request.n"}));
  for (const char* k :
       {"gen_ai.latency.time_to_first_token", "gen_ai.latency.e2e", "gen_ai.latency.time_in_queue",
        "gen_ai.latency.time_in_model_prefill", "gen_ai.latency.time_in_model_decode",
        "gen_ai.latency.time_in_model_inference", "gen_ai.request.top_p"}) {
    EXPECT_EQ(Attr(s, k).value_case(), AnyValue::kDoubleValue) << k;
  }
  for (const char* k : {"gen_ai.usage.prompt_tokens", "gen_ai.usage.completion_tokens",
                        "gen_ai.request.max_tokens", "gen_ai.request.n"}) {
    EXPECT_EQ(Attr(s, k).value_case(), AnyValue::kIntValue) << k;
  }
  const double e2e = Attr(s, "gen_ai.latency.e2e").double_value();
  const double ttft = Attr(s, "gen_ai.latency.time_to_first_token").double_value();
  const double queue = Attr(s, "gen_ai.latency.time_in_queue").double_value();
  const double prefill = Attr(s, "gen_ai.latency.time_in_model_prefill").double_value();
  const double decode = Attr(s, "gen_ai.latency.time_in_model_decode").double_value();
  const double inference = Attr(s, "gen_ai.latency.time_in_model_inference").double_value();
  EXPECT_NEAR(e2e, (s.end_time_unix_nano() - s.start_time_unix_nano()) / 1e9, 1e-6);
  EXPECT_NEAR(prefill + decode, inference, 1e-9);
  EXPECT_GT(ttft, 0);
  EXPECT_LE(ttft, e2e);
  EXPECT_GE(queue, 0);
  EXPECT_GT(prefill, 0);
  EXPECT_GT(decode, 0);  // 8 tokens: seven decode steps
  EXPECT_LE(queue + inference, e2e);
  Usage u = UsageOf(res.body);
  EXPECT_EQ(Attr(s, "gen_ai.usage.prompt_tokens").int_value(), u.prompt);
  EXPECT_EQ(Attr(s, "gen_ai.usage.completion_tokens").int_value(), 8);
  EXPECT_EQ(u.completion, 8);
  EXPECT_EQ(Attr(s, "gen_ai.request.id").string_value(), "chatcmpl-abc");
  EXPECT_DOUBLE_EQ(Attr(s, "gen_ai.request.top_p").double_value(), 0.9);
  EXPECT_EQ(Attr(s, "gen_ai.request.max_tokens").int_value(), 8);
  EXPECT_EQ(Attr(s, "gen_ai.request.n").int_value(), 1);
}

TEST_F(VllmSpansTest, TraceContextAbsentMalformedOrUnsampled) {
  auto server = Start(SimOptions{});
  ASSERT_TRUE(server);
  ASSERT_EQ(SimPost(server->port(), "/v1/completions", R"({"prompt":"a b c","max_tokens":3})",
                    {{"X-Request-Id", "none"}})
                .status,
            200);
  ASSERT_EQ(SimPost(server->port(), "/v1/completions", R"({"prompt":"a b c","max_tokens":3})",
                    {{"X-Request-Id", "bad"}, {"traceparent", "00-nothex-00f067aa0ba902b7-01"}})
                .status,
            200);
  // sampled flag off: vLLM's ParentBased sampler records nothing.
  ASSERT_EQ(SimPost(server->port(), "/v1/completions", R"({"prompt":"a b c","max_tokens":3})",
                    {{"X-Request-Id", "unsampled"},
                     {"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"}})
                .status,
            200);
  ASSERT_TRUE(WaitFor([&] { return collector_.got.count() >= 2; }));
  std::this_thread::sleep_for(100ms);
  auto spans = collector_.got.spans();
  ASSERT_EQ(spans.size(), 2u);
  std::set<std::string> ids, traces;
  for (const auto& r : spans) {
    ids.insert(FindAttr(r.span.attributes(), "gen_ai.request.id")->string_value());
    traces.insert(r.span.trace_id());
    EXPECT_EQ(r.span.trace_id().size(), 16u);
    EXPECT_TRUE(r.span.parent_span_id().empty());
    EXPECT_EQ(ResAttr(r.resource, "service.name"), "unknown_service");
  }
  EXPECT_EQ(ids, (std::set<std::string>{"cmpl-none", "cmpl-bad"}));
  EXPECT_EQ(traces.size(), 2u);  // each a new root trace
}

TEST_F(VllmSpansTest, NoSpanForClientAbort) {
  SimOptions o;
  auto server = Start(o);
  ASSERT_TRUE(server);
  testing::SimStreamThenDisconnect(
      server->port(),
      R"({"messages":[{"role":"user","content":"go"}],"max_tokens":4000,"ignore_eos":true,"stream":true})");
  ASSERT_TRUE(WaitFor([&] { return server->engine().Stats().aborted == 1; }));
  ASSERT_EQ(SimPost(server->port(), "/v1/chat/completions", ChatBody(R"(,"max_tokens":2)"),
                    {{"X-Request-Id", "kept"}})
                .status,
            200);
  ASSERT_TRUE(WaitFor([&] { return collector_.got.count() >= 1; }));
  std::this_thread::sleep_for(100ms);
  auto spans = collector_.got.spans();
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(FindAttr(spans[0].span.attributes(), "gen_ai.request.id")->string_value(),
            "chatcmpl-kept");
}

TEST_F(VllmSpansTest, OneSpanPerChildSequence) {
  auto server = Start(SimOptions{});
  ASSERT_TRUE(server);
  auto res =
      SimPost(server->port(), "/v1/chat/completions",
              ChatBody(R"(,"n":2,"max_tokens":5,"temperature":0.7)"), {{"X-Request-Id", "two"}});
  ASSERT_EQ(res.status, 200);
  ASSERT_TRUE(WaitFor([&] { return collector_.got.count() >= 2; }));
  auto spans = collector_.got.spans();
  ASSERT_EQ(spans.size(), 2u);
  std::int64_t completion = 0;
  for (const auto& r : spans) {
    EXPECT_EQ(Attr(r.span, "gen_ai.request.id").string_value(), "chatcmpl-two");
    EXPECT_EQ(Attr(r.span, "gen_ai.request.n").int_value(), 1);
    EXPECT_DOUBLE_EQ(Attr(r.span, "gen_ai.request.temperature").double_value(), 0.7);
    completion += Attr(r.span, "gen_ai.usage.completion_tokens").int_value();
  }
  EXPECT_NE(spans[0].span.span_id(), spans[1].span.span_id());
  EXPECT_EQ(completion, UsageOf(res.body).completion);
}

TEST_F(VllmSpansTest, V0ShapeIsOneSpanPerRequestWithV0Keys) {
  SimOptions o;
  o.engine_version = "v0";
  o.model = "Qwen/Qwen2.5-1.5B";
  auto server = Start(o);
  ASSERT_TRUE(server);
  auto res = SimPost(
      server->port(), "/v1/chat/completions",
      R"({"messages":[{"role":"user","content":"hi"}],"n":2,"max_tokens":4,"temperature":0})",
      {{"X-Request-Id", "old"}});
  ASSERT_EQ(res.status, 200);
  ASSERT_TRUE(WaitFor([&] { return collector_.got.count() >= 1; }));
  std::this_thread::sleep_for(100ms);
  auto spans = collector_.got.spans();
  ASSERT_EQ(spans.size(), 1u);
  const Span& s = spans[0].span;
  EXPECT_EQ(spans[0].scope, "vllm.llm_engine");
  EXPECT_EQ(s.kind(), otlp_trace::Span::SPAN_KIND_SERVER);
  EXPECT_EQ(Keys(s), (std::set<std::string>{
                         "gen_ai.response.model", "gen_ai.request.id", "gen_ai.request.temperature",
                         "gen_ai.request.top_p", "gen_ai.request.max_tokens", "gen_ai.request.n",
                         "gen_ai.usage.num_sequences", "gen_ai.usage.prompt_tokens",
                         "gen_ai.usage.completion_tokens", "gen_ai.latency.time_in_queue",
                         "gen_ai.latency.time_to_first_token", "gen_ai.latency.e2e"}));
  EXPECT_EQ(Attr(s, "gen_ai.response.model").string_value(), "Qwen/Qwen2.5-1.5B");
  EXPECT_EQ(Attr(s, "gen_ai.request.id").string_value(), "chatcmpl-old");
  EXPECT_EQ(Attr(s, "gen_ai.request.temperature").value_case(), AnyValue::kDoubleValue);
  EXPECT_EQ(Attr(s, "gen_ai.request.temperature").double_value(), 0.0);
  EXPECT_EQ(Attr(s, "gen_ai.request.n").int_value(), 2);
  EXPECT_EQ(Attr(s, "gen_ai.usage.num_sequences").int_value(), 2);
  EXPECT_EQ(Attr(s, "gen_ai.usage.completion_tokens").int_value(), UsageOf(res.body).completion);
  const double e2e = Attr(s, "gen_ai.latency.e2e").double_value();
  EXPECT_NEAR(e2e, (s.end_time_unix_nano() - s.start_time_unix_nano()) / 1e9, 1e-6);
  EXPECT_LE(Attr(s, "gen_ai.latency.time_in_queue").double_value(),
            Attr(s, "gen_ai.latency.time_to_first_token").double_value());
  EXPECT_LE(Attr(s, "gen_ai.latency.time_to_first_token").double_value(), e2e);
}

TEST_F(VllmSpansTest, V0DetailedTracesAddSchedulerForwardExecute) {
  SimOptions o;
  o.engine_version = "v0";
  o.collect_detailed_traces = "all";
  auto server = Start(o);
  ASSERT_TRUE(server);
  ASSERT_EQ(SimPost(server->port(), "/v1/completions", R"({"prompt":"x y","max_tokens":3})").status,
            200);
  ASSERT_TRUE(WaitFor([&] { return collector_.got.count() >= 1; }));
  const Span s = collector_.got.spans()[0].span;
  const double fwd = Attr(s, "gen_ai.latency.time_in_model_forward").double_value();
  const double exe = Attr(s, "gen_ai.latency.time_in_model_execute").double_value();
  EXPECT_GT(exe, 0);
  EXPECT_LE(fwd, exe);
  EXPECT_GE(Attr(s, "gen_ai.latency.time_in_scheduler").double_value(), 0);
  EXPECT_LE(exe, Attr(s, "gen_ai.latency.e2e").double_value());
}

TEST_F(VllmSpansTest, HttpProtobufGoesToTheExactUrl) {
  std::mutex mu;
  std::vector<std::pair<std::string, std::string>> seen;  // target, content type
  Collector got;
  std::string error;
  auto receiver = http::SimpleServer::Start(
      http::HostPort{"127.0.0.1", 0},
      [&](const http::StringRequest& req) {
        {
          std::lock_guard lk(mu);
          seen.emplace_back(std::string(req.target()),
                            std::string(req[boost::beast::http::field::content_type]));
        }
        TracesRequest tr;
        if (!tr.ParseFromString(req.body())) return http::MakeResponse(400, "bad");
        got.Add(tr);
        return http::MakeResponse(200, "", "application/x-protobuf");
      },
      &error);
  ASSERT_TRUE(receiver) << error;
  SimOptions o;
  o.otlp_traces_endpoint = "http://127.0.0.1:" + std::to_string(receiver->port()) + "/v1/traces";
  auto server = Start(o, {{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf"}});
  ASSERT_TRUE(server);
  ASSERT_EQ(SimPost(server->port(), "/v1/completions", R"({"prompt":"x","max_tokens":2})",
                    {{"X-Request-Id", "h"}})
                .status,
            200);
  ASSERT_TRUE(WaitFor([&] { return got.count() == 1; }));
  {
    std::lock_guard lk(mu);
    ASSERT_FALSE(seen.empty());
    EXPECT_EQ(seen[0].first, "/v1/traces");
    EXPECT_EQ(seen[0].second, "application/x-protobuf");
  }
  EXPECT_EQ(got.spans()[0].span.name(), "llm_request");
  EXPECT_EQ(FindAttr(got.spans()[0].span.attributes(), "gen_ai.request.id")->string_value(),
            "cmpl-h");
  EXPECT_EQ(collector_.got.count(), 0u);
  server->Stop();
  receiver->Stop();
}

TEST_F(VllmSpansTest, EndpointFormsForGrpc) {
  for (const std::string& ep :
       {collector_.endpoint("grpc://"), collector_.endpoint("http://"), collector_.endpoint("")}) {
    SimOptions o;
    o.otlp_traces_endpoint = ep;
    auto server = Start(o);
    ASSERT_TRUE(server) << ep;
    std::size_t before = collector_.got.count();
    ASSERT_EQ(SimPost(server->port(), "/v1/completions", R"({"prompt":"x","max_tokens":1})").status,
              200);
    EXPECT_TRUE(WaitFor([&] { return collector_.got.count() == before + 1; })) << ep;
  }
}

TEST_F(VllmSpansTest, BadConfigurationRefusesToStart) {
  SimOptions o;
  o.otlp_traces_endpoint = collector_.endpoint();
  o.env = MapEnv({{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json"}});
  std::string error;
  EXPECT_FALSE(SimServer::Start(o, &error));
  EXPECT_NE(error.find("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"), std::string::npos) << error;

  SimOptions d;
  d.collect_detailed_traces = "model";
  error.clear();
  EXPECT_FALSE(SimServer::Start(d, &error));
  EXPECT_NE(error.find("--otlp-traces-endpoint"), std::string::npos) << error;

  SimOptions k;
  k.kv_transfer_config = R"({"kv_connector":"NixlConnector","kv_role":"kv_producer"})";
  error.clear();
  auto server = SimServer::Start(k, &error);
  ASSERT_TRUE(server) << error;
  EXPECT_EQ(server->kv_role(), "kv_producer");
  k.kv_transfer_config = R"({"kv_role":"kv_sideways"})";
  EXPECT_FALSE(SimServer::Start(k, &error));
}

TEST_F(VllmSpansTest, ScheduleDelayIsHonouredAndFullBatchGoesAtOnce) {
  {
    auto server = Start(SimOptions{}, {{"OTEL_BSP_SCHEDULE_DELAY", "600"}});
    ASSERT_TRUE(server);
    ASSERT_EQ(SimPost(server->port(), "/v1/completions", R"({"prompt":"x","max_tokens":1})").status,
              200);
    ASSERT_TRUE(WaitFor([&] { return collector_.got.count() == 1; }, 3000ms));
    // The next export is a whole delay after this one.
    const auto first = std::chrono::steady_clock::now();
    ASSERT_EQ(SimPost(server->port(), "/v1/completions", R"({"prompt":"x","max_tokens":1})").status,
              200);
    std::this_thread::sleep_for(200ms);
    EXPECT_EQ(collector_.got.count(), 1u) << "exported before OTEL_BSP_SCHEDULE_DELAY";
    ASSERT_TRUE(WaitFor([&] { return collector_.got.count() == 2; }, 3000ms));
    EXPECT_GE(std::chrono::steady_clock::now() - first, 400ms);
  }
  {
    // A full batch (size 2) goes out long before the 60 s delay.
    auto server = Start(SimOptions{}, {{"OTEL_BSP_SCHEDULE_DELAY", "60000"},
                                       {"OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "2"}});
    ASSERT_TRUE(server);
    const int before = collector_.got.requests();
    for (int i = 0; i < 2; ++i)
      ASSERT_EQ(
          SimPost(server->port(), "/v1/completions", R"({"prompt":"x","max_tokens":1})").status,
          200);
    ASSERT_TRUE(WaitFor([&] { return collector_.got.requests() == before + 1; }, 3000ms));
    EXPECT_EQ(collector_.got.count(), 4u);
    // One more stays queued until shutdown flushes it.
    ASSERT_EQ(SimPost(server->port(), "/v1/completions", R"({"prompt":"x","max_tokens":1})").status,
              200);
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(collector_.got.count(), 4u);
    server->Stop();
    EXPECT_EQ(collector_.got.count(), 5u);
  }
}

// Blocks its first export until released, so the queue's state is known to the test.
class GatedExporter : public SpanExporter {
 public:
  bool Export(const TracesRequest& r, std::string*) override {
    std::unique_lock lk(mu);
    ++calls;
    cv.notify_all();
    cv.wait(lk, [&] { return open; });
    spans += static_cast<int>(CountSpans(r));
    return true;
  }
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  int calls = 0;
  int spans = 0;
};

TEST(BatchSpanProcessorTest, DropsWhenQueueIsFullAndFlushesOnShutdown) {
  auto owned = std::make_unique<GatedExporter>();
  GatedExporter* ex = owned.get();
  BatchOptions b;
  b.schedule_delay = 60s;
  b.max_queue_size = 2;
  b.max_export_batch_size = 2;
  BatchSpanProcessor p(std::move(owned), Resource(), "s", b);
  p.OnEnd(Span());
  p.OnEnd(Span());  // a full batch: the worker takes both and blocks in Export
  {
    std::unique_lock lk(ex->mu);
    ASSERT_TRUE(ex->cv.wait_for(lk, 5s, [&] { return ex->calls == 1; }));
  }
  for (int i = 0; i < 5; ++i) p.OnEnd(Span());  // two fit, three are dropped
  EXPECT_EQ(p.dropped(), 3u);
  {
    std::lock_guard lk(ex->mu);
    ex->open = true;
  }
  ex->cv.notify_all();
  p.Shutdown();
  EXPECT_EQ(p.exported(), 4u);
  EXPECT_EQ(ex->spans, 4);
  EXPECT_EQ(ex->calls, 2);
}

}  // namespace
}  // namespace infertel::sim
