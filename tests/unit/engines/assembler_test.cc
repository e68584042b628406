#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "core/semconv.h"
#include "engines/assembler.h"
#include "pipeline/batch_processor.h"

namespace infertel::engines {
namespace {
namespace sc = semconv;

class CollectingSink : public pipeline::TraceSink {
 public:
  void Submit(TracesRequest&& r) noexcept override {
    std::lock_guard lock(mu_);
    for (auto& rs : r.resource_spans())
      for (auto& ss : rs.scope_spans())
        for (auto& s : ss.spans()) spans_.push_back({rs.resource(), ss.scope().name(), s});
    cv_.notify_all();
  }
  // Saturated when told so, or when the spans it holds and those coming reach saturated_at
  // (a queue that never drains).
  bool Saturated(std::size_t coming) const noexcept override {
    last_coming = coming;
    std::lock_guard lock(mu_);
    return saturated || spans_.size() + coming >= saturated_at;
  }
  std::atomic<bool> saturated{false};
  std::atomic<std::size_t> saturated_at{SIZE_MAX};
  mutable std::atomic<std::size_t> last_coming{0};
  pipeline::RoomBell* Room() noexcept override { return &bell; }
  pipeline::RoomBell bell;
  struct Item {
    Resource resource;
    std::string scope;
    Span span;
  };
  std::vector<Item> WaitFor(std::size_t n,
                            std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return spans_.size() >= n; });
    return spans_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Item> spans_;
};

TracesRequest EngineRequest(std::string_view request_id, std::string_view extra_span = "") {
  TracesRequest req;
  auto* rs = req.add_resource_spans();
  AddAttr(rs->mutable_resource()->mutable_attributes(), "service.name", "vllm-server");
  auto* ss = rs->add_scope_spans();
  ss->mutable_scope()->set_name("vllm.tracing.otel");
  Span* s = ss->add_spans();
  s->set_name("llm_request");
  s->set_kind(otlp_trace::Span::SPAN_KIND_SERVER);
  TraceId t = NewTraceId();
  SpanId id = NewSpanId();
  s->set_trace_id(std::string(AsBytes(t)));
  s->set_span_id(std::string(AsBytes(id)));
  s->set_start_time_unix_nano(1'000'000'000);
  s->set_end_time_unix_nano(1'200'000'000);
  AddAttr(s->mutable_attributes(), sc::kGenAiRequestId,
          std::string("chatcmpl-") + std::string(request_id));
  AddAttr(s->mutable_attributes(), sc::kGenAiLatencyTimeToFirstToken, 0.05);
  AddAttr(s->mutable_attributes(), sc::kGenAiLatencyTimeInQueue, 0.01);
  AddAttr(s->mutable_attributes(), sc::kGenAiLatencyTimeInModelPrefill, 0.02);
  AddAttr(s->mutable_attributes(), sc::kGenAiLatencyTimeInModelDecode, 0.1);
  if (!extra_span.empty()) {
    Span* o = ss->add_spans();
    o->set_name(std::string(extra_span));
    o->set_trace_id(s->trace_id());
    o->set_span_id(std::string(AsBytes(NewSpanId())));
  }
  return req;
}

openai::Exchange FinishedExchange(std::string request_id) {
  openai::Exchange ex;
  ex.request_id = std::move(request_id);
  ex.trace_id = NewTraceId();
  ex.span_id = NewSpanId();
  ex.start = Stopwatch::Start();
  ex.request.model = "llama";
  ex.response.usage.cached_tokens = 12;
  ex.tracing_level = 1;
  ex.engine_index = 0;
  return ex;
}

class AssemblerTest : public ::testing::Test {
 protected:
  AssemblerTest()
      : config_(std::make_shared<config::ConfigStore>(config::Resolve(nullptr).settings)) {}
  std::unique_ptr<Assembler> Make(std::chrono::milliseconds window) {
    AssemblerOptions o;
    o.join_window = window;
    return std::make_unique<Assembler>(o, &sink_, config_);
  }
  CollectingSink sink_;
  std::shared_ptr<config::ConfigStore> config_;
};

// The receiver asks the assembler before decoding: it is saturated when its output is, with
// what the caller says is coming. Spans that merely wait are not counted against the output:
// they leave as their deadlines pass, into the room the lanes have made by then.
TEST_F(AssemblerTest, SaturatedIsItsOutputsAndNotTheSpansWaiting) {
  auto a = Make(std::chrono::seconds(10));
  EXPECT_FALSE(a->Saturated());
  a->Submit(EngineRequest("waits-1"));
  a->Submit(EngineRequest("waits-2"));
  EXPECT_FALSE(a->Saturated());
  EXPECT_EQ(sink_.last_coming.load(), 0u);
  EXPECT_FALSE(a->Saturated(5));
  EXPECT_EQ(sink_.last_coming.load(), 5u);
  sink_.saturated = true;
  EXPECT_TRUE(a->Saturated());
  sink_.saturated = false;
  EXPECT_FALSE(a->Saturated());
}

// Beyond its bound the waiting table sends its oldest span out early, whether the output has
// room or not; from three quarters of it on the assembler refuses more.
TEST_F(AssemblerTest, SaturatedFromThreeQuartersOfTheWaitingTable) {
  AssemblerOptions o;
  o.join_window = std::chrono::seconds(10);
  o.max_waiting_spans = 4;
  Assembler a(o, &sink_, config_);
  a.Submit(EngineRequest("w-1"));
  a.Submit(EngineRequest("w-2"));
  EXPECT_FALSE(a.Saturated());  // 2 of 4
  a.Submit(EngineRequest("w-3"));
  EXPECT_TRUE(a.Saturated());  // 3 of 4
  EXPECT_EQ(a.stats().released_early.load(), 0u);
  a.FlushWaiting();
  EXPECT_FALSE(a.Saturated());
}

// Spans whose wait ran out leave only into room: with the output full they stay here (the
// assembler is then saturated, and waits on the output's bell) and leave, all of them, once a
// ring finds room. Released into a full queue they would push queued spans out of it.
TEST_F(AssemblerTest, DueSpansLeaveOnlyIntoRoom) {
  auto a = Make(std::chrono::milliseconds(50));
  sink_.saturated_at = 1200;  // saturated from 1,200 spans held, and it never drains
  for (int i = 0; i < 600; ++i) a->Submit(EngineRequest("late-" + std::to_string(i)));
  ASSERT_GE(sink_.WaitFor(1100).size(), 1100u);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // every wait has run out
  // Room is reserved before spans leave (five per span: the span and at most four phases):
  // never one span beyond it.
  const std::size_t out = sink_.WaitFor(0).size();
  EXPECT_LE(out, 1200u - 4u);
  EXPECT_TRUE(a->Saturated());
  EXPECT_EQ(sink_.bell.waiters(), 1u);
  EXPECT_EQ(a->stats().waiting.load(), 600u - out / 4);
  sink_.saturated_at = SIZE_MAX;
  sink_.bell.Ring();
  EXPECT_EQ(sink_.WaitFor(2400).size(), 2400u);
  EXPECT_GE(a->stats().held_for_room.load(), 600u - out / 4);
  for (int i = 0; i < 100 && a->Saturated(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_FALSE(a->Saturated());
  EXPECT_EQ(sink_.bell.waiters(), 0u);
  EXPECT_EQ(a->stats().unmatched.load(), 600u);
}

// With a real batch processor whose queue is much smaller than what comes due at once: the
// spans leave as the lane makes room, the queue never overflows, and every span is exported.
TEST_F(AssemblerTest, ASmallQueueTakesEveryDueSpanWithoutDropping) {
  struct SlowExporter : pipeline::TraceExporter {
    std::string_view Name() const noexcept override { return "slow"; }
    pipeline::ExportResult Export(const TracesRequest& r) noexcept override {
      // Slower than the spans come due, so that some of them must wait for room.
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      spans.fetch_add(CountSpans(r));
      return pipeline::ExportResult::Ok();
    }
    std::atomic<std::size_t> spans{0};
  };
  auto exporter = std::make_unique<SlowExporter>();
  SlowExporter* counted = exporter.get();
  std::vector<std::unique_ptr<pipeline::TraceExporter>> exporters;
  exporters.push_back(std::move(exporter));
  pipeline::BatchOptions bo;
  bo.max_queue_items = 64;
  bo.max_batch_items = 16;
  bo.max_delay = std::chrono::milliseconds(1);
  pipeline::BatchProcessor<TracesRequest> processor(std::move(exporters), bo);
  {
    AssemblerOptions o;
    o.join_window = std::chrono::milliseconds(20);
    Assembler a(o, &processor, config_);
    for (int i = 0; i < 100; ++i) a.Submit(EngineRequest("small-" + std::to_string(i)));
    for (int i = 0; i < 1000 && counted->spans.load() < 400; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_EQ(counted->spans.load(), 400u);
    EXPECT_GT(a.stats().held_for_room.load(), 0u);
  }
  EXPECT_EQ(processor.Stats(0).dropped_queue_full.load(), 0u);
  processor.Shutdown();
}

// Spans leave the assembler into its output's queues, so only those free room: a receiver
// waiting for room listens to the output's bell.
TEST_F(AssemblerTest, RoomIsTheOutputsBell) {
  Assembler a(AssemblerOptions{}, &sink_, config_);
  EXPECT_EQ(a.Room(), &sink_.bell);
}

TEST_F(AssemblerTest, EngineSpanAfterExchangeIsJoinedAtOnce) {
  auto a = Make(std::chrono::seconds(5));
  auto ex = FinishedExchange("req-1");
  a->OnExchangeFinished(ex);
  a->Submit(EngineRequest("req-1"));
  auto items = sink_.WaitFor(4, std::chrono::seconds(1));
  ASSERT_EQ(items.size(), 4u);  // llm_request + wait + prefill + decode
  const Span& s = items[0].span;
  EXPECT_EQ(s.name(), "llm_request");
  EXPECT_EQ(s.trace_id(), std::string(AsBytes(ex.trace_id)));
  EXPECT_EQ(s.parent_span_id(), std::string(AsBytes(ex.span_id)));
  EXPECT_EQ(FindAttr(s.attributes(), sc::kGenAiUsageCacheReadInputTokens)->int_value(), 12);
  EXPECT_EQ(FindAttr(s.attributes(), sc::kGenAiRequestModelName)->string_value(), "llama");
  EXPECT_EQ(items[0].scope, "vllm.tracing.otel");  // the engine's own scope and resource stay
  EXPECT_EQ(FindAttr(items[0].resource.attributes(), "service.name")->string_value(),
            "vllm-server");
  EXPECT_EQ(a->stats().joined.load(), 1u);
}

// Join records are bounded: beyond max_records the oldest goes first (counted), and only the
// records kept still join a span that arrives after its exchange. 1,000 exchanges through a
// bound of 100 evict 900; the newest 100 join at once, the oldest waits for the window.
TEST_F(AssemblerTest, JoinRecordsKeepTheNewestUpToTheirBound) {
  AssemblerOptions o;
  o.join_window = std::chrono::seconds(30);
  o.max_records = 100;
  Assembler a(o, &sink_, config_);
  for (int i = 0; i < 1000; ++i) a.OnExchangeFinished(FinishedExchange(fmt::format("r-{}", i)));
  EXPECT_EQ(a.stats().records.load(), 100u);
  EXPECT_EQ(a.stats().records_evicted.load(), 900u);
  for (int i = 900; i < 1000; ++i) a.Submit(EngineRequest(fmt::format("r-{}", i)));
  EXPECT_EQ(sink_.WaitFor(400, std::chrono::seconds(2)).size(), 400u);
  EXPECT_EQ(a.stats().joined.load(), 100u);
  a.Submit(EngineRequest("r-899"));
  a.Submit(EngineRequest("r-0"));
  EXPECT_EQ(a.stats().waiting.load(), 2u);
  EXPECT_EQ(a.stats().joined.load(), 100u);
}

// A record leaves after record_ttl, so a span of that request arriving later waits instead of
// joining; an exchange finishing again for the same id makes a fresh record.
TEST_F(AssemblerTest, JoinRecordsExpireAfterTheirTtl) {
  AssemblerOptions o;
  o.join_window = std::chrono::seconds(30);
  o.record_ttl = std::chrono::seconds(1);
  Assembler a(o, &sink_, config_);
  a.OnExchangeFinished(FinishedExchange("old"));
  EXPECT_EQ(a.stats().records.load(), 1u);
  // The timer looks at the records every 100 ms.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (a.stats().records.load() != 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(a.stats().records.load(), 0u);
  a.Submit(EngineRequest("old"));
  EXPECT_EQ(a.stats().waiting.load(), 1u);
  EXPECT_EQ(a.stats().joined.load(), 0u);
  a.OnExchangeFinished(FinishedExchange("old"));
  EXPECT_EQ(sink_.WaitFor(4, std::chrono::seconds(1)).size(), 4u);
  EXPECT_EQ(a.stats().joined.load(), 1u);
}

TEST_F(AssemblerTest, EngineSpanBeforeExchangeWaitsForIt) {
  auto a = Make(std::chrono::seconds(5));
  a->Submit(EngineRequest("req-2"));
  EXPECT_EQ(sink_.WaitFor(1, std::chrono::milliseconds(200)).size(), 0u);
  EXPECT_EQ(a->stats().waiting.load(), 1u);
  auto ex = FinishedExchange("req-2");
  a->OnExchangeFinished(ex);
  auto items = sink_.WaitFor(4, std::chrono::seconds(1));
  ASSERT_GE(items.size(), 1u);
  EXPECT_EQ(items[0].span.parent_span_id(), std::string(AsBytes(ex.span_id)));
  EXPECT_EQ(a->stats().joined.load(), 1u);
}

// A finished exchange takes its own spans out of a large waiting table (found through the
// key index, not by a walk) and leaves every other span waiting; a span taken is not sent
// again when the table is flushed.
TEST_F(AssemblerTest, ExchangeTakesOnlyItsSpansFromAFullTable) {
  auto a = Make(std::chrono::seconds(30));
  for (int i = 0; i < 1000; ++i) a->Submit(EngineRequest("bypass-" + std::to_string(i)));
  EXPECT_EQ(a->stats().waiting.load(), 1000u);
  a->OnExchangeFinished(FinishedExchange("bypass-500"));
  a->OnExchangeFinished(FinishedExchange("bypass-999"));
  a->OnExchangeFinished(FinishedExchange("nobody"));
  EXPECT_EQ(a->stats().joined.load(), 2u);
  EXPECT_EQ(a->stats().waiting.load(), 998u);
  a->FlushWaiting();
  EXPECT_EQ(a->stats().unmatched.load(), 998u);
  EXPECT_EQ(a->stats().waiting.load(), 0u);
  // 1000 llm_request spans, each with its wait, prefill and decode phases.
  EXPECT_EQ(sink_.WaitFor(4000).size(), 4000u);
}

// The table's bound counts the slots of spans already matched only until they leave: they
// are skipped, not sent a second time, and not counted as released early.
TEST_F(AssemblerTest, BoundSkipsTheSlotsOfMatchedSpans) {
  AssemblerOptions o;
  o.join_window = std::chrono::seconds(30);
  o.max_waiting_spans = 3;
  Assembler a(o, &sink_, config_);
  for (const char* id : {"a", "b", "c"}) a.Submit(EngineRequest(id));
  a.OnExchangeFinished(FinishedExchange("b"));  // "b" joined; its slot stays until the front
  a.Submit(EngineRequest("d"));                 // full: "a" leaves unmatched
  EXPECT_EQ(a.stats().released_early.load(), 1u);
  a.Submit(EngineRequest("e"));  // full again: "b"'s empty slot goes, nothing is released
  EXPECT_EQ(a.stats().released_early.load(), 1u);
  EXPECT_EQ(a.stats().waiting.load(), 3u);  // c, d, e
  a.OnExchangeFinished(FinishedExchange("d"));
  EXPECT_EQ(a.stats().joined.load(), 2u);
  a.FlushWaiting();
  EXPECT_EQ(a.stats().unmatched.load(), 3u);  // a, then c and e
  EXPECT_EQ(sink_.WaitFor(20).size(), 20u);   // 5 engine spans × 4, none twice
}

// The key index keeps spans that have left until their whole generation has
// (waiting_index.h): an exchange whose span left already, released early or matched, finds
// nothing, and a span that waits is still found among thousands that left.
TEST_F(AssemblerTest, SpansThatLeftAreNotFoundAgain) {
  AssemblerOptions o;
  o.join_window = std::chrono::seconds(30);
  o.max_waiting_spans = 3000;
  Assembler a(o, &sink_, config_);
  for (int i = 0; i < 5000; ++i) a.Submit(EngineRequest("r-" + std::to_string(i)));
  EXPECT_EQ(a.stats().released_early.load(), 2000u);  // r-0 … r-1999, in order
  a.OnExchangeFinished(FinishedExchange("r-10"));
  a.OnExchangeFinished(FinishedExchange("r-1999"));
  EXPECT_EQ(a.stats().joined.load(), 0u);
  a.OnExchangeFinished(FinishedExchange("r-2000"));
  a.OnExchangeFinished(FinishedExchange("r-4999"));
  EXPECT_EQ(a.stats().joined.load(), 2u);
  a.OnExchangeFinished(FinishedExchange("r-4999"));  // matched already
  EXPECT_EQ(a.stats().joined.load(), 2u);
  EXPECT_EQ(a.stats().waiting.load(), 2998u);
  a.FlushWaiting();
  EXPECT_EQ(a.stats().unmatched.load(), 2000u + 2998u);
  EXPECT_EQ(sink_.WaitFor(20000).size(), 20000u);  // 5000 engine spans × 4, none twice
}

TEST_F(AssemblerTest, UnmatchedSpanIsExportedNormalizedAfterTheWindowAndCounted) {
  auto a = Make(std::chrono::milliseconds(150));
  auto req = EngineRequest("nobody");
  std::string original_trace = req.resource_spans(0).scope_spans(0).spans(0).trace_id();
  a->Submit(std::move(req));
  auto items = sink_.WaitFor(1, std::chrono::seconds(3));
  ASSERT_GE(items.size(), 1u);
  EXPECT_EQ(items[0].span.kind(), otlp_trace::Span::SPAN_KIND_INTERNAL);
  EXPECT_EQ(items[0].span.trace_id(), original_trace);
  EXPECT_EQ(FindAttr(items[0].span.attributes(), sc::kGenAiLatencyTimeInQueue)->int_value(),
            10'000'000);
  EXPECT_EQ(a->stats().unmatched.load(), 1u);
}

TEST_F(AssemblerTest, UnrelatedSpansPassThroughUntouched) {
  auto a = Make(std::chrono::seconds(5));
  TracesRequest other;
  auto* s = other.add_resource_spans()->add_scope_spans()->add_spans();
  s->set_name("GET /api");
  s->set_kind(otlp_trace::Span::SPAN_KIND_SERVER);
  AddAttr(s->mutable_attributes(), "http.route", "/api");
  std::string before = other.SerializeAsString();
  a->Submit(std::move(other));
  auto items = sink_.WaitFor(1, std::chrono::seconds(1));
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].span.kind(), otlp_trace::Span::SPAN_KIND_SERVER);
  TracesRequest again;
  *again.add_resource_spans()->add_scope_spans()->add_spans() = items[0].span;
  EXPECT_EQ(again.SerializeAsString(), before);
  EXPECT_EQ(a->stats().passthrough.load(), 1u);
}

// SGLang's spans are recognised by their marks even under another scope name, but vLLM's own
// scopes are not searched: a span there that carries SGLang's marks stays where it is.
TEST_F(AssemblerTest, VllmScopesAreNotSearchedForSglangSpans) {
  auto a = Make(std::chrono::seconds(5));
  for (std::string_view scope : {"vllm.tracing.otel", "vllm.llm_engine", "relabelled"}) {
    TracesRequest req;
    auto* ss = req.add_resource_spans()->add_scope_spans();
    ss->mutable_scope()->set_name(std::string(scope));
    Span* s = ss->add_spans();
    s->set_name("Scheduler");
    s->set_trace_id(std::string(AsBytes(NewTraceId())));
    s->set_span_id(std::string(AsBytes(NewSpanId())));
    AddAttr(s->mutable_attributes(), sc::kSglThreadLabel, "scheduler");
    AddAttr(s->mutable_attributes(), sc::kSglHostId, "host-1");
    a->Submit(std::move(req));
  }
  EXPECT_EQ(a->stats().sglang_spans.load(), 1u);  // the relabelled scope only
  EXPECT_EQ(a->stats().passthrough.load(), 2u);
}

TEST_F(AssemblerTest, MixedRequestSplitsEngineSpanFromOthers) {
  auto a = Make(std::chrono::seconds(5));
  a->OnExchangeFinished(FinishedExchange("req-3"));
  a->Submit(EngineRequest("req-3", "Load model"));
  auto items = sink_.WaitFor(5, std::chrono::seconds(1));
  ASSERT_EQ(items.size(), 5u);
  int llm = 0, other = 0;
  for (auto& it : items) {
    if (it.span.name() == "llm_request") ++llm;
    if (it.span.name() == "Load model") ++other;
  }
  EXPECT_EQ(llm, 1);
  EXPECT_EQ(other, 1);
}

TEST_F(AssemblerTest, TwoChildSequencesOfOneRequestJoinTheSameExchange) {
  auto a = Make(std::chrono::seconds(5));
  auto ex = FinishedExchange("req-n2");
  a->OnExchangeFinished(ex);
  a->Submit(EngineRequest("req-n2"));
  a->Submit(EngineRequest("req-n2"));
  auto items = sink_.WaitFor(8, std::chrono::seconds(1));
  int joined = 0;
  for (auto& it : items)
    if (it.span.name() == "llm_request" &&
        it.span.parent_span_id() == std::string(AsBytes(ex.span_id)))
      ++joined;
  EXPECT_EQ(joined, 2);
}

// Spans released together that arrived under one resource and scope leave under one
// ResourceSpans/ScopeSpans (in arrival order), with that resource and scope.
TEST_F(AssemblerTest, SpansReleasedTogetherShareTheirResourceAndScope) {
  class RequestSink : public pipeline::TraceSink {
   public:
    void Submit(TracesRequest&& r) noexcept override { requests.push_back(std::move(r)); }
    std::vector<TracesRequest> requests;
  } out;
  AssemblerOptions o;
  o.join_window = std::chrono::hours(1);
  Assembler a(o, &out, config_);
  TracesRequest req = EngineRequest("g-0");
  TracesRequest more = EngineRequest("g-1");
  auto* spans = req.mutable_resource_spans(0)->mutable_scope_spans(0)->mutable_spans();
  *spans->Add() = more.resource_spans(0).scope_spans(0).spans(0);
  TracesRequest other_scope = EngineRequest("g-2");
  other_scope.mutable_resource_spans(0)->mutable_scope_spans(0)->mutable_scope()->set_name("x");
  *req.add_resource_spans() = other_scope.resource_spans(0);
  a.Submit(std::move(req));
  EXPECT_TRUE(out.requests.empty());
  a.FlushWaiting();
  ASSERT_EQ(out.requests.size(), 1u);
  const TracesRequest& got = out.requests[0];
  ASSERT_EQ(got.resource_spans_size(), 2);
  for (const auto& rs : got.resource_spans()) {
    ASSERT_EQ(rs.scope_spans_size(), 1);
    EXPECT_EQ(FindAttr(rs.resource().attributes(), "service.name")->string_value(), "vllm-server");
  }
  const auto& first = got.resource_spans(0).scope_spans(0);
  EXPECT_EQ(first.scope().name(), "vllm.tracing.otel");
  ASSERT_EQ(first.spans_size(), 8);  // two request spans, each followed by its three phases
  EXPECT_EQ(first.spans(0).name(), "llm_request");
  EXPECT_EQ(first.spans(4).name(), "llm_request");
  EXPECT_EQ(FindAttr(first.spans(4).attributes(), sc::kGenAiRequestId)->string_value(),
            "chatcmpl-g-1");
  const auto& second = got.resource_spans(1).scope_spans(0);
  EXPECT_EQ(second.scope().name(), "x");
  EXPECT_EQ(second.spans_size(), 4);
  EXPECT_EQ(a.stats().unmatched.load(), 3u);
  EXPECT_EQ(a.stats().derived_spans.load(), 9u);
}

// A request received onto an arena leaves without a copy: the pass-through span, the waiting
// engine span and its phases all stay on the receive arena, and the views that carry them keep
// that arena alive until the last of them is gone, however long the span waited.
TEST_F(AssemblerTest, HeldRequestsLeaveWithoutCopiesAndKeepTheirArena) {
  class HeldSink : public pipeline::TraceSink {
   public:
    void Submit(TracesRequest&&) noexcept override { ++heap_submits; }
    void SubmitHeld(pipeline::Held<TracesRequest>&& r) noexcept override {
      held.push_back(std::move(r));
    }
    int heap_submits = 0;
    std::vector<pipeline::Held<TracesRequest>> held;
  } out;
  AssemblerOptions o;
  o.join_window = std::chrono::hours(1);
  Assembler a(o, &out, config_);
  auto in = pipeline::Held<TracesRequest>::Make();
  ASSERT_TRUE(in.request->ParseFromString(EngineRequest("h-1", "Load model").SerializeAsString()));
  const auto& received = in.request->resource_spans(0).scope_spans(0);
  const Span* engine_span = &received.spans(0);
  const Span* other_span = &received.spans(1);
  const google::protobuf::Arena* arena = in.memory->arena();
  std::weak_ptr<pipeline::Memory> memory = in.memory;
  a.SubmitHeld(std::move(in));

  ASSERT_EQ(out.held.size(), 1u);  // the pass-through part, at once
  ASSERT_EQ(CountSpans(*out.held[0].request), 1u);
  EXPECT_EQ(&out.held[0].request->resource_spans(0).scope_spans(0).spans(0), other_span);
  out.held.clear();
  EXPECT_FALSE(memory.expired());  // the waiting span keeps it

  a.FlushWaiting();
  ASSERT_EQ(out.held.size(), 1u);
  const auto& ss = out.held[0].request->resource_spans(0).scope_spans(0);
  ASSERT_EQ(ss.spans_size(), 4);
  EXPECT_EQ(&ss.spans(0), engine_span);  // normalized in place
  EXPECT_EQ(ss.spans(0).kind(), otlp_trace::Span::SPAN_KIND_INTERNAL);
  for (int i = 1; i < 4; ++i) EXPECT_EQ(ss.spans(i).GetArena(), arena) << ss.spans(i).name();
  EXPECT_EQ(ss.scope().name(), "vllm.tracing.otel");
  EXPECT_EQ(FindAttr(out.held[0].request->resource_spans(0).resource().attributes(), "service.name")
                ->string_value(),
            "vllm-server");
  EXPECT_EQ(out.heap_submits, 0);
  out.held.clear();
  EXPECT_TRUE(memory.expired());
}

// A joined engine span tells the listener (the metrics) what the engine measured, with the
// exchange's record; an unmatched one does not (no exchange to count it under).
TEST_F(AssemblerTest, JoinedSpansTellTheListenerTheEnginesTimings) {
  struct Listener : EngineSpanListener {
    void OnEngineSpanJoined(const JoinRecord& r, const EngineTimings& t) noexcept override {
      std::lock_guard lock(mu);
      seen.emplace_back(r.request_id, t);
    }
    std::mutex mu;
    std::vector<std::pair<std::string, EngineTimings>> seen;
  } listener;
  auto a = Make(std::chrono::milliseconds(50));
  a->SetSpanListener(&listener);
  auto ex = FinishedExchange("timed-1");
  ex.streamed = false;
  ex.response.usage.output_tokens = 11;
  a->OnExchangeFinished(ex);
  a->Submit(EngineRequest("timed-1"));
  a->Submit(EngineRequest("never-finished"));
  ASSERT_EQ(sink_.WaitFor(8).size(), 8u);  // both spans, with their phases
  a->FlushWaiting();
  std::lock_guard lock(listener.mu);
  ASSERT_EQ(listener.seen.size(), 1u);
  EXPECT_EQ(listener.seen[0].first, "timed-1");
  const EngineTimings& t = listener.seen[0].second;
  EXPECT_DOUBLE_EQ(t.ttft_s.value_or(-1), 0.05);
  EXPECT_DOUBLE_EQ(t.queue_s.value_or(-1), 0.01);
  EXPECT_DOUBLE_EQ(t.prefill_s.value_or(-1), 0.02);
  EXPECT_DOUBLE_EQ(t.decode_s.value_or(-1), 0.1);
  EXPECT_FALSE(t.e2e_s);
}

// Spec C1: with the plugin off there are no traces for the engine: its request spans are
// dropped (counted), not passed on raw; other spans of the same scope pass.
TEST_F(AssemblerTest, RequestSpansOfAPluginSwitchedOffAreDropped) {
  auto off = std::make_shared<config::ConfigStore>(
      config::Resolve([](std::string_view name) -> std::optional<std::string> {
        if (name == "OTEL_INSTRUMENTATION_VLLM_ENABLED") return "false";
        return std::nullopt;
      }).settings);
  Assembler a(AssemblerOptions{}, &sink_, off);
  a.Submit(EngineRequest("off-1", "tokenizer"));
  const auto items = sink_.WaitFor(1);
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].span.name(), "tokenizer");
  EXPECT_EQ(a.stats().plugin_off_dropped.load(), 1u);
  EXPECT_EQ(a.stats().engine_spans.load(), 0u);
  a.FlushWaiting();
  EXPECT_EQ(sink_.WaitFor(2, std::chrono::milliseconds(100)).size(), 1u);  // nothing waited
}

// An engine span that matches no exchange still gets the model and engine index where the
// engine's own data names them: the single upstream's one served model and its one engine.
TEST_F(AssemblerTest, UnmatchedSpansGetTheSingleUpstreamsModelAndEngineIndex) {
  AssemblerOptions o;
  o.join_window = std::chrono::milliseconds(20);
  o.default_engine_index = 0;
  Assembler a(o, &sink_, config_);
  a.SetDefaultModel("served-model");
  a.Submit(EngineRequest("nobody-sent-this"));
  a.FlushWaiting();
  const auto items = sink_.WaitFor(1);
  ASSERT_GE(items.size(), 1u);
  const Span& s = items[0].span;
  ASSERT_EQ(s.name(), "llm_request");
  const AnyValue* model = FindAttr(s.attributes(), sc::kGenAiRequestModelName);
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(model->string_value(), "served-model");
  const AnyValue* index = FindAttr(s.attributes(), sc::kGenAiEngineIndex);
  ASSERT_NE(index, nullptr);
  EXPECT_EQ(index->int_value(), 0);
  EXPECT_EQ(a.stats().unmatched.load(), 1u);
}

// An engine whose clock is off (here by decades) would make a trace as long as the error:
// a joined span that starts before the gateway sent its request moves to the gateway's clock,
// keeping its length, with its phases, and says by how much.
TEST_F(AssemblerTest, AJoinedSpanFromAnEngineClockThatIsOffMovesToTheGatewaysClock) {
  auto a = Make(std::chrono::seconds(10));
  auto ex = FinishedExchange("skewed-1");
  ex.upstream_sent_mono_ns = ex.start.mono_start_ns + 1'000'000;
  ex.end_mono_ns = ex.start.mono_start_ns + 300'000'000;
  a->OnExchangeFinished(ex);
  a->Submit(EngineRequest("skewed-1"));  // 1970-01-01T00:00:01Z, 200 ms long
  const auto items = sink_.WaitFor(4);
  ASSERT_EQ(items.size(), 4u);
  const std::uint64_t sent = ex.start.WallAt(ex.upstream_sent_mono_ns);
  for (const auto& it : items) {
    EXPECT_GE(it.span.start_time_unix_nano(), sent) << it.span.name();
    EXPECT_LE(it.span.end_time_unix_nano(), sent + 200'000'000) << it.span.name();
  }
  const Span& llm = items[0].span.name() == "llm_request" ? items[0].span : items[3].span;
  ASSERT_EQ(llm.name(), "llm_request");
  EXPECT_EQ(llm.start_time_unix_nano(), sent);
  EXPECT_EQ(llm.end_time_unix_nano() - llm.start_time_unix_nano(), 200'000'000u);
  const AnyValue* moved = FindAttr(llm.attributes(), sc::kInfertelClockCorrection);
  ASSERT_NE(moved, nullptr);
  EXPECT_EQ(moved->int_value(), static_cast<std::int64_t>(sent) - 1'000'000'000);
  EXPECT_EQ(a->stats().clock_corrected.load(), 1u);
}

// A span whose times fit what the gateway saw is left as the engine dated it.
TEST_F(AssemblerTest, AJoinedSpanOnTheGatewaysClockIsNotMoved) {
  auto a = Make(std::chrono::seconds(10));
  auto ex = FinishedExchange("on-time-1");
  ex.upstream_sent_mono_ns = ex.start.mono_start_ns + 1'000'000;
  ex.end_mono_ns = ex.start.mono_start_ns + 300'000'000;
  a->OnExchangeFinished(ex);
  TracesRequest req = EngineRequest("on-time-1");
  Span* s = req.mutable_resource_spans(0)->mutable_scope_spans(0)->mutable_spans(0);
  const std::uint64_t sent = ex.start.WallAt(ex.upstream_sent_mono_ns);
  s->set_start_time_unix_nano(sent + 2'000'000);
  s->set_end_time_unix_nano(sent + 202'000'000);
  a->Submit(std::move(req));
  const auto items = sink_.WaitFor(4);
  ASSERT_EQ(items.size(), 4u);
  for (const auto& it : items) {
    if (it.span.name() != "llm_request") continue;
    EXPECT_EQ(it.span.start_time_unix_nano(), sent + 2'000'000);
    EXPECT_EQ(FindAttr(it.span.attributes(), sc::kInfertelClockCorrection), nullptr);
  }
  EXPECT_EQ(a->stats().clock_corrected.load(), 0u);
}

// The gateway reads its clock for the dispatch once its write returned; an engine on the same
// host may start the request before that (the gateway thread waiting for a core in between):
// a span starting after the request's arrival but before the recorded dispatch is not moved.
TEST_F(AssemblerTest, ASpanStartingBeforeTheRecordedDispatchButAfterArrivalIsNotMoved) {
  auto a = Make(std::chrono::seconds(10));
  auto ex = FinishedExchange("late-stamp-1");
  ex.upstream_sent_mono_ns = ex.start.mono_start_ns + 40'000'000;
  ex.end_mono_ns = ex.start.mono_start_ns + 300'000'000;
  a->OnExchangeFinished(ex);
  TracesRequest req = EngineRequest("late-stamp-1");
  Span* s = req.mutable_resource_spans(0)->mutable_scope_spans(0)->mutable_spans(0);
  const std::uint64_t arrived = ex.start.wall_start_ns;
  s->set_start_time_unix_nano(arrived + 10'000'000);
  s->set_end_time_unix_nano(arrived + 210'000'000);
  a->Submit(std::move(req));
  const auto items = sink_.WaitFor(4);
  ASSERT_EQ(items.size(), 4u);
  for (const auto& it : items)
    EXPECT_EQ(FindAttr(it.span.attributes(), sc::kInfertelClockCorrection), nullptr)
        << it.span.name();
  EXPECT_EQ(a->stats().clock_corrected.load(), 0u);
}

// An engine request span of `request_id` from `start` s to `end` s with its latencies (s) and
// prompt tokens, as vLLM sends them.
TracesRequest TimedEngineRequest(std::string_view request_id, double start, double end, double ttft,
                                 double queue, double prefill, double decode, std::int64_t prompt) {
  TracesRequest req = EngineRequest(request_id);
  Span* s = req.mutable_resource_spans(0)->mutable_scope_spans(0)->mutable_spans(0);
  s->set_start_time_unix_nano(static_cast<std::uint64_t>(start * 1e9));
  s->set_end_time_unix_nano(static_cast<std::uint64_t>(end * 1e9));
  s->clear_attributes();
  auto* a = s->mutable_attributes();
  AddAttr(a, sc::kGenAiRequestId, std::string("chatcmpl-") + std::string(request_id));
  AddAttr(a, sc::kGenAiLatencyTimeToFirstToken, ttft);
  AddAttr(a, sc::kGenAiLatencyTimeInQueue, queue);
  AddAttr(a, sc::kGenAiLatencyTimeInModelPrefill, prefill);
  AddAttr(a, sc::kGenAiLatencyTimeInModelDecode, decode);
  AddAttr(a, sc::kGenAiUsagePromptTokens, prompt);
  return req;
}

const Span* Named(const std::vector<CollectingSink::Item>& items, std::string_view id) {
  for (const auto& it : items) {
    const AnyValue* v = FindAttr(it.span.attributes(), sc::kGenAiRequestId);
    if (it.span.name() == "llm_request" && v && v->string_value() == id) return &it.span;
  }
  return nullptr;
}

// A joined span of a request that missed an objective gets its cause and the evidence: here
// another request's 3,000-token prefill ran while it decoded (interference), linked; every
// joined span gets the cache hit ratio, and one that met its objectives no cause.
TEST_F(AssemblerTest, AJoinedSpanThatMissedGetsItsCauseAndEvidence) {
  auto a = Make(std::chrono::seconds(10));
  auto other = FinishedExchange("prefill-1");
  other.slo.judged = true;  // met
  a->OnExchangeFinished(other);
  a->Submit(TimedEngineRequest("prefill-1", 1.5, 1.9, 0.3, 0.0, 0.25, 0.1, 3000));
  ASSERT_EQ(sink_.WaitFor(4).size(), 4u);
  auto slow = FinishedExchange("slow-1");
  slow.slo = {true, openai::kSloMissE2e};
  slow.client_wait_ns = 1'000'000;  // 1 ms of the client's
  a->OnExchangeFinished(slow);
  a->Submit(TimedEngineRequest("slow-1", 1.0, 3.0, 0.2, 0.05, 0.1, 1.8, 100));
  const auto items = sink_.WaitFor(8);
  ASSERT_EQ(items.size(), 8u);
  const Span* met = Named(items, "chatcmpl-prefill-1");
  ASSERT_NE(met, nullptr);
  EXPECT_EQ(FindAttr(met->attributes(), sc::kInfertelLatencyCause), nullptr);
  EXPECT_NEAR(FindAttr(met->attributes(), sc::kInfertelCacheHitRatio)->double_value(), 12.0 / 3000,
              1e-12);
  const Span* s = Named(items, "chatcmpl-slow-1");
  ASSERT_NE(s, nullptr);
  const auto& attrs = s->attributes();
  ASSERT_NE(FindAttr(attrs, sc::kInfertelLatencyCause), nullptr);
  EXPECT_EQ(FindAttr(attrs, sc::kInfertelLatencyCause)->string_value(),
            sc::kLatencyCauseInterference);
  EXPECT_EQ(FindAttr(attrs, sc::kInfertelInterferencePrefillTokens)->int_value(), 3000);
  EXPECT_NEAR(FindAttr(attrs, sc::kInfertelCacheHitRatio)->double_value(), 0.12, 1e-12);
  EXPECT_NEAR(FindAttr(attrs, sc::kInfertelLatencyClient)->double_value(), 0.001, 1e-12);
  EXPECT_EQ(FindAttr(attrs, sc::kInfertelQueueRequestsAhead)->int_value(), 0);
  ASSERT_EQ(s->links_size(), 1);
  EXPECT_EQ(s->links(0).span_id(), met->span_id());
  EXPECT_EQ(FindAttr(s->links(0).attributes(), sc::kInfertelInterferencePrefillTokens)->int_value(),
            3000);
}

// The gateway's view alone: a request that missed and whose engine failed it is engine_error.
TEST_F(AssemblerTest, AJoinedSpanOfAFailedRequestIsAnEngineError) {
  auto a = Make(std::chrono::seconds(10));
  auto ex = FinishedExchange("failed-1");
  ex.slo = {true, openai::kSloMissError};
  ex.outcome = openai::Outcome::kEngineError;
  a->OnExchangeFinished(ex);
  a->Submit(TimedEngineRequest("failed-1", 1.0, 1.5, 0.2, 0.1, 0.1, 0.3, 10));
  const auto items = sink_.WaitFor(4);
  const Span* s = Named(items, "chatcmpl-failed-1");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(FindAttr(s->attributes(), sc::kInfertelLatencyCause)->string_value(),
            sc::kLatencyCauseEngineError);
}

}  // namespace
}  // namespace infertel::engines
