// EntrySpanEmitter: each entry span leaves as its own held request, built on that request's
// arena under the one resource and scope the emitter made, which every request borrows.

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "core/ids.h"
#include "core/semconv.h"
#include "core/static_key.h"
#include "gateway/entry_span.h"
#include "pipeline/held.h"

namespace infertel::gateway {

using openai::Exchange;
using openai::ExchangeListener;
using openai::Outcome;

namespace {
namespace sc = semconv;

class HeldSink final : public pipeline::TraceSink {
 public:
  void Submit(TracesRequest&&) noexcept override { ++heap_requests; }
  void SubmitHeld(pipeline::Held<TracesRequest>&& r) noexcept override {
    held.push_back(std::move(r));
  }
  std::vector<pipeline::Held<TracesRequest>> held;
  int heap_requests = 0;
};

Exchange ChatExchange(const std::string& model) {
  openai::Exchange ex;
  ex.op = openai::Operation::kChat;
  ex.request.op = openai::Operation::kChat;
  ex.request.parsed = true;
  ex.request.model = model;
  ex.trace_id = NewTraceId();
  ex.span_id = NewSpanId();
  ex.start = Stopwatch::Start();
  ex.end_mono_ns = ex.start.mono_start_ns + 1'000'000;
  ex.http_status = 200;
  return ex;
}

Resource AgentResource() {
  Resource r;
  AddAttr(r.mutable_attributes(), sc::kServiceName, "infertel-test");
  AddAttr(r.mutable_attributes(), "deployment.environment.name", "prod");
  return r;
}

TEST(EntrySpanEmitterTest, EachSpanIsHeldOnItsArenaUnderOneSharedResource) {
  HeldSink sink;
  auto emitter = std::make_unique<EntrySpanEmitter>(&sink, AgentResource());
  for (const char* model : {"m-a", "m-b", "m-c"}) emitter->OnExchangeFinished(ChatExchange(model));
  ASSERT_EQ(sink.held.size(), 3u);
  EXPECT_EQ(sink.heap_requests, 0);
  const Resource* shared = nullptr;
  for (std::size_t i = 0; i < sink.held.size(); ++i) {
    const auto& h = sink.held[i];
    ASSERT_EQ(h.request->resource_spans_size(), 1);
    const auto& rs = h.request->resource_spans(0);
    EXPECT_EQ(rs.resource().SerializeAsString(), AgentResource().SerializeAsString());
    ASSERT_EQ(rs.scope_spans_size(), 1);
    EXPECT_EQ(rs.scope_spans(0).scope().name(), sc::kAgentScopeName);
    ASSERT_EQ(rs.scope_spans(0).spans_size(), 1);
    const Span& span = rs.scope_spans(0).spans(0);
    EXPECT_EQ(span.name(), std::string("chat m-") + static_cast<char>('a' + i));
    // The span on the request's own arena; the resource borrowed, the same object each time.
    EXPECT_EQ(span.GetArena(), h.memory->arena());
    if (shared == nullptr) shared = &rs.resource();
    EXPECT_EQ(&rs.resource(), shared);
  }

  // A batch of them folds into one resource block and one scope block, and outlives the
  // emitter: the requests keep the shared header alive.
  emitter.reset();
  pipeline::HeldMerger<TracesRequest> merger;
  for (const auto& h : sink.held) merger.Add(h);
  pipeline::Held<TracesRequest> batch = std::move(merger).Finish();
  sink.held.clear();
  ASSERT_EQ(batch.request->resource_spans_size(), 1);
  ASSERT_EQ(batch.request->resource_spans(0).scope_spans_size(), 1);
  const auto& spans = batch.request->resource_spans(0).scope_spans(0).spans();
  ASSERT_EQ(spans.size(), 3);
  EXPECT_EQ(spans[2].name(), "chat m-c");
  TracesRequest copy;
  ASSERT_TRUE(copy.ParseFromString(batch.request->SerializeAsString()));
  EXPECT_EQ(copy.resource_spans(0).resource().SerializeAsString(),
            AgentResource().SerializeAsString());
}

// Every key of an entry span points at the model's one copy of it (core/static_key.h): an
// entry span's keys cost no allocation and no free per request.
TEST(EntrySpanEmitterTest, EveryAttributeKeyIsTheModelsOwn) {
  if (!StaticKeysShared()) GTEST_SKIP() << "this protobuf copies keys";
  openai::Exchange ex = ChatExchange("a-model-name-longer-than-fifteen");
  ex.request.temperature = 0.5;
  ex.request.max_tokens = 16;
  ex.response.id = "chatcmpl-0123456789abcdef";
  ex.response.model = "a-model-name-longer-than-fifteen";
  ex.response.finish_reasons = {"stop"};
  ex.response.usage.input_tokens = 3;
  ex.response.usage.output_tokens = 2;
  ex.response.usage.total_tokens = 5;
  HeldSink sink;
  EntrySpanEmitter(&sink, AgentResource()).OnExchangeFinished(ex);
  ASSERT_EQ(sink.held.size(), 1u);
  const Span& span = sink.held[0].request->resource_spans(0).scope_spans(0).spans(0);
  const std::vector<const StaticKey*> keys = {&Key<sc::kGenAiSpanKind>(),
                                              &Key<sc::kGenAiOperationName>(),
                                              &Key<sc::kGenAiRequestModel>(),
                                              &Key<sc::kGenAiRequestTemperature>(),
                                              &Key<sc::kGenAiRequestMaxTokens>(),
                                              &Key<sc::kGenAiRequestIsStream>(),
                                              &Key<sc::kGenAiResponseId>(),
                                              &Key<sc::kGenAiResponseModel>(),
                                              &Key<sc::kGenAiResponseFinishReasons>(),
                                              &Key<sc::kGenAiUsageInputTokens>(),
                                              &Key<sc::kGenAiUsageOutputTokens>(),
                                              &Key<sc::kGenAiUsageTotalTokens>()};
  ASSERT_EQ(span.attributes_size(), static_cast<int>(keys.size()));
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const KeyValue& kv = span.attributes(static_cast<int>(i));
    EXPECT_EQ(kv.key(), keys[i]->str());
    EXPECT_EQ(&kv.key(), &keys[i]->str()) << kv.key() << " is a copy";
  }
  EXPECT_EQ(FindAttr(span.attributes(), sc::kGenAiResponseFinishReasons)
                ->array_value()
                .values(0)
                .string_value(),
            "stop");
}

}  // namespace
}  // namespace infertel::gateway
