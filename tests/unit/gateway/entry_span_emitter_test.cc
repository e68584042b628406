// EntrySpanEmitter: each entry span leaves as its own held request, built on that request's
// arena under the one resource and scope the emitter made, which every request borrows.

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "core/ids.h"
#include "core/semconv.h"
#include "gateway/entry_span.h"
#include "pipeline/held.h"

namespace infertel::gateway {
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
  Exchange ex;
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

}  // namespace
}  // namespace infertel::gateway
