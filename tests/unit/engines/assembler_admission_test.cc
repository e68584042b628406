// Admission through the assembler (Sink::Offer from the receiver): a request is taken whole or
// refused whole; what is taken reaches the export queue however full it is, and the gateway's
// own spans, submitted meanwhile, never push it out.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "core/semconv.h"
#include "engines/assembler.h"
#include "pipeline/batch_processor.h"

namespace infertel::engines {
namespace {

using namespace std::chrono_literals;

// A vLLM llm_request span (request id `id`; three phases derived) and a pass-through span.
TracesRequest EngineAndOther(const std::string& id) {
  TracesRequest req;
  auto* rs = req.add_resource_spans();
  AddAttr(rs->mutable_resource()->mutable_attributes(), "service.name", "vllm-server");
  auto* ss = rs->add_scope_spans();
  ss->mutable_scope()->set_name("vllm.tracing.otel");
  for (const char* name : {"llm_request", "other"}) {
    Span* s = ss->add_spans();
    s->set_name(name);
    s->set_trace_id(std::string(AsBytes(NewTraceId())));
    s->set_span_id(std::string(AsBytes(NewSpanId())));
    s->set_start_time_unix_nano(1'000'000'000);
    s->set_end_time_unix_nano(1'200'000'000);
    if (std::string_view(name) != "llm_request") continue;
    AddAttr(s->mutable_attributes(), semconv::kGenAiRequestId, "chatcmpl-" + id);
    AddAttr(s->mutable_attributes(), semconv::kGenAiLatencyTimeToFirstToken, 0.05);
    AddAttr(s->mutable_attributes(), semconv::kGenAiLatencyTimeInQueue, 0.01);
    AddAttr(s->mutable_attributes(), semconv::kGenAiLatencyTimeInModelPrefill, 0.02);
    AddAttr(s->mutable_attributes(), semconv::kGenAiLatencyTimeInModelDecode, 0.1);
  }
  return req;
}
constexpr std::size_t kOutPerRequest = 5;  // llm_request, wait, prefill, decode, other

TracesRequest EntrySpan() {
  TracesRequest req;
  Span* s = req.add_resource_spans()->add_scope_spans()->add_spans();
  s->set_name("entry");
  return req;
}

struct CountingExporter : pipeline::TraceExporter {
  std::string_view Name() const noexcept override { return "counting"; }
  pipeline::ExportResult Export(const TracesRequest& r) noexcept override {
    std::this_thread::sleep_for(1ms);
    for (const auto& rs : r.resource_spans())
      for (const auto& ss : rs.scope_spans())
        for (const auto& s : ss.spans()) (s.name() == "entry" ? entries : engine).fetch_add(1);
    return pipeline::ExportResult::Ok();
  }
  std::atomic<std::size_t> engine{0}, entries{0};
};

class AssemblerAdmissionTest : public ::testing::Test {
 protected:
  AssemblerAdmissionTest()
      : config_(std::make_shared<config::ConfigStore>(config::Resolve(nullptr).settings)) {
    auto e = std::make_unique<CountingExporter>();
    exporter_ = e.get();
    std::vector<std::unique_ptr<pipeline::TraceExporter>> v;
    v.push_back(std::move(e));
    pipeline::BatchOptions o;
    o.max_queue_items = 128;
    o.max_batch_items = 16;
    o.max_delay = 1ms;
    processor_ = std::make_unique<pipeline::TraceBatchProcessor>(std::move(v), o);
  }
  std::shared_ptr<config::ConfigStore> config_;
  CountingExporter* exporter_;
  std::unique_ptr<pipeline::TraceBatchProcessor> processor_;
};

// Receiver threads offer engine spans (some waiting for their window, some joined at once)
// while a gateway thread submits entry spans: every span of every request taken is exported,
// with its phases; only entry spans are shed.
TEST_F(AssemblerAdmissionTest, EverySpanTakenIsExportedWhileEntrySpansAreShed) {
  std::atomic<std::size_t> taken{0}, refused{0};
  {
    AssemblerOptions o;
    o.join_window = 5ms;
    Assembler a(o, processor_.get(), config_);
    std::atomic<bool> done{false};
    std::thread gateway([&] {
      while (!done.load()) {
        processor_->Submit(EntrySpan());
        std::this_thread::sleep_for(50us);
      }
    });
    std::vector<std::thread> receivers;
    for (int t = 0; t < 4; ++t)
      receivers.emplace_back([&, t] {
        for (int i = 0; i < 300; ++i) {
          const std::string id = std::to_string(t) + "-" + std::to_string(i);
          if (i % 3 == 0) {  // the exchange finished first: joined at once
            openai::Exchange ex;
            ex.request_id = id;
            ex.trace_id = NewTraceId();
            ex.span_id = NewSpanId();
            ex.start = Stopwatch::Start();
            a.OnExchangeFinished(ex);
          }
          (a.Offer(pipeline::Hold(EngineAndOther(id))) ? taken : refused).fetch_add(1);
        }
      });
    for (auto& r : receivers) r.join();
    done = true;
    gateway.join();
    for (int i = 0; i < 500 && a.stats().waiting.load() > 0; ++i) std::this_thread::sleep_for(5ms);
    EXPECT_EQ(a.stats().waiting.load(), 0u);
    EXPECT_EQ(a.stats().released_early.load(), 0u);
  }
  ASSERT_TRUE(processor_->Flush(5s));
  EXPECT_GT(taken.load(), 0u);
  EXPECT_GT(refused.load(), 0u);  // the queue was full at times: else this proved nothing
  EXPECT_EQ(exporter_->engine.load(), taken.load() * kOutPerRequest);
}

// A full waiting table refuses the request instead of sending older spans out early.
TEST_F(AssemblerAdmissionTest, AFullWaitingTableRefuses) {
  AssemblerOptions o;
  o.join_window = 10s;
  o.max_waiting_spans = 4;
  Assembler a(o, processor_.get(), config_);
  for (int i = 0; i < 4; ++i)
    EXPECT_TRUE(a.Offer(pipeline::Hold(EngineAndOther("w" + std::to_string(i)))));
  EXPECT_FALSE(a.Offer(pipeline::Hold(EngineAndOther("w4"))));
  EXPECT_EQ(a.stats().released_early.load(), 0u);
  EXPECT_EQ(a.stats().waiting.load(), 4u);
  EXPECT_EQ(a.stats().engine_spans.load(), 4u);  // the refused one is not counted
  a.FlushWaiting();
}

}  // namespace
}  // namespace infertel::engines
