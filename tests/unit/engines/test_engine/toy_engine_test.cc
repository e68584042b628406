// A third engine, defined in this folder only, plugs in through the registry: the gateway
// proxies to it, its entry spans carry its own attribute and facts, its spans reach the
// receiver and pass the assembler through its own span processor, and its request series are
// measured as its profile says. Nothing under src/ knows it.

#include "toy_engine.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>

#include "app/engine_probe.h"
#include "core/semconv.h"
#include "engines/assembler.h"
#include "engines/registry.h"
#include "gateway/entry_span.h"
#include "gateway/gateway.h"
#include "http/simple_server.h"
#include "http/sync_client.h"
#include "metrics/request_metrics.h"
#include "receiver/otlp_receiver.h"

namespace infertel::toy {
namespace {

EngineId ToyId() {
  static const EngineId id = [] {
    auto added = engines::AddEngine(MakeToyProfile());
    if (!added) std::abort();
    return *added;
  }();
  return id;
}

class SpanSink final : public pipeline::TraceSink {
 public:
  void Submit(TracesRequest&& r) noexcept override {
    std::lock_guard lock(mu_);
    for (auto& rs : r.resource_spans())
      for (auto& ss : rs.scope_spans())
        for (auto& s : ss.spans()) spans_.push_back(s);
    cv_.notify_all();
  }
  std::vector<Span> WaitFor(std::size_t n) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(10), [&] { return spans_.size() >= n; });
    return spans_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Span> spans_;
};

const AnyValue* Attr(const Span& s, std::string_view key) {
  for (const auto& kv : s.attributes())
    if (kv.key() == key) return &kv.value();
  return nullptr;
}

// The toy engine: answers a chat completion and, as an engine that continues the trace it is
// given, sends one span of that trace to the agent's OTLP/HTTP receiver.
http::StringResponse ToyAnswer(const http::StringRequest& req, std::uint16_t receiver_port) {
  const std::string tp(req["traceparent"]);  // 00-<trace id>-<span id>-01
  TracesRequest spans;
  auto* rs = spans.add_resource_spans();
  AddAttr(rs->mutable_resource()->mutable_attributes(), semconv::kServiceName, "toy-engine");
  auto* ss = rs->add_scope_spans();
  ss->mutable_scope()->set_name(std::string(kToyScope));
  auto* s = ss->add_spans();
  s->set_name("toy generate");
  if (tp.size() == 55) {
    std::string id;
    for (std::size_t i = 3; i < 35; i += 2) id.push_back(char(std::stoi(tp.substr(i, 2), 0, 16)));
    s->set_trace_id(id);
  }
  s->set_span_id(std::string(8, '\x07'));
  http::SyncClient client;
  http::SyncResponse out;
  std::string error;
  client.Send("POST", *http::ParseUrl(fmt::format("http://127.0.0.1:{}/v1/traces", receiver_port)),
              {}, "application/x-protobuf", spans.SerializeAsString(), &out, &error);

  http::StringResponse r{boost::beast::http::status::ok, 11};
  r.set(boost::beast::http::field::content_type, "application/json");
  r.body() = R"({"id":"toy-1","object":"chat.completion","model":"toy-model","choices":[)"
             R"({"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],)"
             R"("usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}})";
  r.prepare_payload();
  return r;
}

TEST(ToyEngineTest, PlugsInThroughTheRegistry) {
  const EngineId toy = ToyId();
  ASSERT_EQ(engines::FindEngine("toy"), toy);
  EXPECT_NE(toy, *engines::FindEngine("vllm"));
  EXPECT_NE(engines::EngineNames().find("toy"), std::string::npos);
  // A second engine of the same name is refused.
  EXPECT_FALSE(engines::AddEngine(MakeToyProfile()));

  auto config = std::make_shared<config::ConfigStore>(config::Resolve(nullptr).settings);
  SpanSink sink;
  engines::Assembler assembler({}, &sink, config);
  receiver::OtlpReceiverOptions ro;
  ro.grpc_address = "";
  ro.http_address = "127.0.0.1:0";
  receiver::OtlpReceiver receiver(ro, {&assembler, nullptr, nullptr});
  std::string error;
  ASSERT_TRUE(receiver.Start(&error)) << error;

  auto upstream = http::SimpleServer::Start(
      {"127.0.0.1", 0},
      [port = receiver.http_port()](const http::StringRequest& r) { return ToyAnswer(r, port); },
      &error);
  ASSERT_TRUE(upstream) << error;

  gateway::GatewayOptions gopts;
  gateway::UpstreamConfig uc;
  uc.name = "toy-0";
  uc.engine = toy;
  uc.url = *http::ParseUrl(fmt::format("http://127.0.0.1:{}", upstream->port()));
  uc.listen = {"127.0.0.1", 0};
  gopts.upstreams.push_back(uc);
  gopts.threads = 1;
  gateway::Gateway gw(gopts, config);
  gateway::EntrySpanEmitter entry_spans(&sink, Resource());
  // The toy's facts, read as the agent's probe reads them.
  auto facts = engines::Profile(toy).ReadFacts(uc.url, &error);
  ASSERT_TRUE(facts);
  entry_spans.SetEngineFacts(uc.name, *facts);
  metrics::MetricStore store;
  store.AddSource(uc.name, toy);
  metrics::RequestMetrics request_metrics(&store, config);
  request_metrics.AddUpstream(uc.name);
  // The metrics first: once the entry span is in the sink, the exchange has been measured.
  gw.AddListener(&request_metrics);
  gw.AddListener(&entry_spans);
  gw.AddListener(&assembler);
  ASSERT_TRUE(gw.Start(&error)) << error;

  http::SyncClient client;
  http::SyncResponse resp;
  ASSERT_TRUE(client.Send(
      "POST",
      *http::ParseUrl(fmt::format("http://127.0.0.1:{}/v1/chat/completions", gw.Ports()[0])), {},
      "application/json", R"({"model":"toy-model","messages":[{"role":"user","content":"hi"}]})",
      &resp, &error))
      << error;
  EXPECT_EQ(resp.status, 200);
  EXPECT_NE(resp.body.find("toy-1"), std::string::npos);

  // The entry span and the toy's own span, in one trace.
  auto spans = sink.WaitFor(2);
  ASSERT_EQ(spans.size(), 2u);
  const Span* entry = spans[0].name() == "toy generate" ? &spans[1] : &spans[0];
  const Span* engine = spans[0].name() == "toy generate" ? &spans[0] : &spans[1];
  EXPECT_EQ(entry->name(), "chat toy-model");
  EXPECT_EQ(engine->trace_id(), entry->trace_id());
  // The toy's span processor saw it, with the level the gateway recorded for its request.
  const AnyValue* level = Attr(*engine, kToyLevelAttr);
  ASSERT_NE(level, nullptr);
  EXPECT_EQ(level->int_value(), 1);
  const AnyValue* interval = Attr(*entry, kToyStreamIntervalAttr);
  ASSERT_NE(interval, nullptr);
  EXPECT_EQ(interval->int_value(), 7);
  // The common attributes, shaped by the profile's defaults (user and session kept).
  ASSERT_NE(Attr(*entry, semconv::kGenAiUsageInputTokens), nullptr);
  EXPECT_EQ(Attr(*entry, semconv::kGenAiUsageInputTokens)->int_value(), 3);

  // The toy's one request series, labelled as its profile says.
  bool measured = false;
  for (const auto& p : store.Snapshot()) {
    if (p.id != metrics::MetricId::kRequestDuration) continue;
    measured = true;
    ASSERT_EQ(p.labels.size(), 1u);
    EXPECT_EQ(p.labels[0].first, metrics::kDimModelName);
    EXPECT_EQ(p.labels[0].second, "toy-model");
  }
  EXPECT_TRUE(measured);

  gw.Stop();
  receiver.Stop();
}

}  // namespace
}  // namespace infertel::toy
