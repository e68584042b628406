// The engine-span path (receiver → assembler → batch processor → exporter encoding), stage by
// stage, on the requests bench/otlp_pipeline.sh sends: batches of 512 vLLM V1 `llm_request`
// spans as vLLM's frontend emits them. Per-span costs are CPU time per iteration / 512 (the
// items/s counters give spans per CPU-second). gRPC transport is not included; see
// docs/performance-history.md, "OTLP pipeline", for the end-to-end figures.
// Run: build-*/bench/otlp_normalize_bench [--benchmark_filter=...]

#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "config/settings.h"
#include "core/ids.h"
#include "core/semconv.h"
#include "core/telemetry.h"
#include "encoding_exporter.h"
#include "engines/assembler.h"
#include "engines/registry.h"
#include "engines/vllm/vllm_spans.h"
#include "pipeline/batch_processor.h"
#include "pipeline/encode.h"
#include "receiver/ingest.h"
#include "receiver/trace_decoder.h"
#include "vllm_bench_request.h"

namespace {

using infertel::Span;
using infertel::TracesRequest;
namespace sc = infertel::semconv;
namespace engines = infertel::engines;
namespace pipeline = infertel::pipeline;
namespace receiver = infertel::receiver;
namespace config = infertel::config;

constexpr int kBatch = 512;

// What infertel-otlp-bench sends, with distinct ids, request ids and times.
TracesRequest SenderRequest(int batch) {
  TracesRequest req = infertel::bench::VllmBenchRequest(batch);
  int i = 0;
  for (auto& s : *req.mutable_resource_spans(0)->mutable_scope_spans(0)->mutable_spans()) {
    s.set_trace_id(std::string(infertel::AsBytes(infertel::NewTraceId())));
    s.set_span_id(std::string(infertel::AsBytes(infertel::NewSpanId())));
    s.set_start_time_unix_nano(1'764'500'000'000'000'000ULL);
    s.set_end_time_unix_nano(1'764'500'001'203'400'000ULL);
    for (auto& kv : *s.mutable_attributes())
      if (kv.key() == sc::kGenAiRequestId)
        kv.mutable_value()->set_string_value("chatcmpl-bench-" + std::to_string(1'000'000'000 + i));
    ++i;
  }
  return req;
}

std::shared_ptr<config::ConfigStore> Config(bool vllm_on) {
  engines::RegisterEngines();  // the engines' keys and families, before any Settings
  auto env = [vllm_on](std::string_view name) -> std::optional<std::string> {
    if (name == "OTEL_INSTRUMENTATION_VLLM_ENABLED") return vllm_on ? "true" : "false";
    return std::nullopt;
  };
  return std::make_shared<config::ConfigStore>(config::Resolve(env).settings);
}

class CountingSink final : public pipeline::TraceSink {
 public:
  void Submit(TracesRequest&& r) noexcept override {
    spans += infertel::CountSpans(r);
    TracesRequest gone(std::move(r));  // freed here, as the next stage would
  }
  void SubmitHeld(pipeline::Held<TracesRequest>&& r) noexcept override {
    spans += infertel::CountSpans(*r.request);
    r = {};  // released here, as the next stage would
  }
  std::size_t spans = 0;
};

// Receiver: decoding one request of 512 spans from the wire.
void BM_OtlpParse512(benchmark::State& state) {
  const std::string wire = SenderRequest(kBatch).SerializeAsString();
  for (auto _ : state) {
    TracesRequest req;
    bool ok = req.ParseFromString(wire);
    benchmark::DoNotOptimize(ok);
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * wire.size()));
}
BENCHMARK(BM_OtlpParse512);

// The same as the receiver decodes since requests are held (pipeline/held.h): onto the arena
// of a fresh Memory, released whole.
void BM_OtlpParseArena512(benchmark::State& state) {
  const std::string wire = SenderRequest(kBatch).SerializeAsString();
  for (auto _ : state) {
    auto held = pipeline::Held<TracesRequest>::Make();
    bool ok = held.request->ParseFromString(wire);
    benchmark::DoNotOptimize(ok);
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}
BENCHMARK(BM_OtlpParseArena512);

// As the receiver decodes trace requests now (receiver/trace_decoder.h): keys interned, onto
// the arena of a fresh Memory, released whole. Against the one above: the keys' cost.
void BM_OtlpDecodeShared512(benchmark::State& state) {
  const std::string wire = SenderRequest(kBatch).SerializeAsString();
  for (auto _ : state) {
    pipeline::Held<TracesRequest> held;
    bool ok = receiver::DecodeProtobuf(wire, &held);
    benchmark::DoNotOptimize(ok);
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}
BENCHMARK(BM_OtlpDecodeShared512);

// Baseline for the next one: copying one engine span (what it starts from each time).
void BM_SpanCopy(benchmark::State& state) {
  const TracesRequest req = SenderRequest(1);
  const Span& tmpl = req.resource_spans(0).scope_spans(0).spans(0);
  for (auto _ : state) {
    Span s = tmpl;
    benchmark::DoNotOptimize(s);
  }
}
BENCHMARK(BM_SpanCopy);

// vllm::Normalize of one unmatched span (level 1: the span and its three phases), the span
// copy included (subtract BM_SpanCopy).
void BM_VllmNormalizeSpan(benchmark::State& state) {
  const TracesRequest req = SenderRequest(1);
  const Span& tmpl = req.resource_spans(0).scope_spans(0).spans(0);
  engines::vllm::NormalizeContext ctx;
  ctx.level = 1;
  std::vector<Span> phases;
  for (auto _ : state) {
    Span s = tmpl;
    phases.clear();
    engines::vllm::Normalize(&s, "vllm.tracing.otel", ctx, &phases);
    benchmark::DoNotOptimize(s);
    benchmark::DoNotOptimize(phases.data());
  }
}
BENCHMARK(BM_VllmNormalizeSpan);

// The join keys of one span (computed for every engine span on arrival).
void BM_VllmJoinKeys(benchmark::State& state) {
  const TracesRequest req = SenderRequest(1);
  const Span& tmpl = req.resource_spans(0).scope_spans(0).spans(0);
  for (auto _ : state) {
    auto keys = engines::vllm::JoinKeys(tmpl);
    benchmark::DoNotOptimize(keys.keys.data());
  }
}
BENCHMARK(BM_VllmJoinKeys);

// The assembler on one decoded request: split, wait, release unmatched (FlushWaiting stands in
// for the window's end), normalize and hand on. Arg: 1 = vLLM instrumentation on, 0 = off
// (pass-through). The request copy is included (subtract BM_RequestCopy512).
void BM_AssemblerSubmit512(benchmark::State& state) {
  const TracesRequest tmpl = SenderRequest(kBatch);
  CountingSink sink;
  engines::AssemblerOptions o;
  o.join_window = std::chrono::hours(1);  // released by FlushWaiting only
  engines::Assembler a(o, &sink, Config(state.range(0) != 0));
  for (auto _ : state) {
    TracesRequest req = tmpl;
    a.Submit(std::move(req));
    a.FlushWaiting();
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.counters["out_per_in"] =
      static_cast<double>(sink.spans) / static_cast<double>(state.iterations() * kBatch);
}
BENCHMARK(BM_AssemblerSubmit512)->ArgName("vllm")->Arg(1)->Arg(0);

// A gateway exchange finishing while `Arg` engine spans of other requests wait in the
// assembler (bypass traffic: spans of requests that never pass the gateway wait the whole join
// window, up to 50,000 of them). The gateway's worker runs this for every request.
void BM_ExchangeFinishedWithWaiting(benchmark::State& state) {
  CountingSink sink;
  engines::AssemblerOptions o;
  o.join_window = std::chrono::hours(1);
  engines::Assembler a(o, &sink, Config(true));
  const int waiting = static_cast<int>(state.range(0));
  for (int submitted = 0; submitted < waiting; submitted += kBatch) {
    TracesRequest req = SenderRequest(kBatch);
    int i = 0;
    for (auto& s : *req.mutable_resource_spans(0)->mutable_scope_spans(0)->mutable_spans())
      for (auto& kv : *s.mutable_attributes())
        if (kv.key() == sc::kGenAiRequestId)
          kv.mutable_value()->set_string_value("chatcmpl-bypass-" +
                                               std::to_string(submitted + i++));
    a.Submit(std::move(req));
  }
  infertel::openai::Exchange ex;
  ex.engine = *infertel::engines::FindEngine("vllm");
  std::uint64_t n = 0;
  for (auto _ : state) {
    ex.request_id = "gw-" + std::to_string(n++);
    a.OnExchangeFinished(ex);
  }
  state.counters["waiting"] = static_cast<double>(a.stats().waiting.load());
  a.FlushWaiting();
}
BENCHMARK(BM_ExchangeFinishedWithWaiting)->Arg(0)->Arg(3000)->Arg(50000);

// The join window at work: `Arg` spans of unmatched requests wait (the benchmark's 100 ms
// window at ~170k spans/s holds about 17,000; the default bound is 50,000), and each request
// of 512 more, with request ids never seen before, pushes the 512 oldest out (the bound
// releases them as the timer would at their deadline): 512 indexed, 512 released,
// normalized and handed on. Items = spans in; the copy onto an arena and the new ids are
// included (about the same for every Arg).
void BM_AssemblerWindowSteady(benchmark::State& state) {
  const TracesRequest tmpl = SenderRequest(kBatch);
  CountingSink sink;
  engines::AssemblerOptions o;
  o.join_window = std::chrono::hours(1);
  o.max_waiting_spans = static_cast<std::size_t>(state.range(0));
  engines::Assembler a(o, &sink, Config(true));
  std::uint64_t next_id = 0;
  auto submit = [&] {
    auto held = pipeline::Held<TracesRequest>::Make();
    held.request->CopyFrom(tmpl);
    for (auto& s :
         *held.request->mutable_resource_spans(0)->mutable_scope_spans(0)->mutable_spans())
      for (auto& kv : *s.mutable_attributes())
        if (kv.key() == sc::kGenAiRequestId)
          kv.mutable_value()->set_string_value("chatcmpl-bench-" + std::to_string(next_id++));
    a.SubmitHeld(std::move(held));
  };
  while (a.stats().waiting.load() + kBatch <= o.max_waiting_spans) submit();
  for (auto _ : state) submit();
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.counters["waiting"] = static_cast<double>(a.stats().waiting.load());
  a.FlushWaiting();
}
BENCHMARK(BM_AssemblerWindowSteady)->Arg(1024)->Arg(16384)->Arg(49152);

void BM_RequestCopy512(benchmark::State& state) {
  const TracesRequest tmpl = SenderRequest(kBatch);
  for (auto _ : state) {
    TracesRequest req = tmpl;
    benchmark::DoNotOptimize(req);
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}
BENCHMARK(BM_RequestCopy512);

// The whole path short of gRPC: wire bytes → decode → receiver checks → assembler →
// batch processor (cut, queue, merge) → encoding as the exporter sends it. Args: vLLM
// instrumentation on (1: 4 spans out per span in) or off (0: pass-through); the receivers'
// decoder (1) or protobuf's parser (0). Items = spans in.
void BM_PipelineNoTransport512(benchmark::State& state) {
  const std::string wire = SenderRequest(kBatch).SerializeAsString();
  std::vector<pipeline::TraceBatchProcessor::ExporterPtr> exporters;
  auto enc = std::make_unique<infertel::bench::EncodingExporter>();
  infertel::bench::EncodingExporter* encoder = enc.get();
  exporters.push_back(std::move(enc));
  pipeline::BatchOptions bo;
  bo.max_queue_items = 1 << 20;  // nothing dropped: every span is encoded
  pipeline::TraceBatchProcessor processor(std::move(exporters), bo);
  engines::AssemblerOptions o;
  o.join_window = std::chrono::hours(1);
  engines::Assembler a(o, &processor, Config(state.range(0) != 0));
  receiver::ReceiverStats stats;
  receiver::ReceiverSinks sinks;
  sinks.traces = &a;
  receiver::Ingestor ingestor(sinks, &stats);
  for (auto _ : state) {
    // As the receivers decode: onto the arena of a Held request, keys interned; or, for the
    // comparison, as they did before (receiver/trace_decoder.h), by protobuf alone.
    pipeline::Held<TracesRequest> req;
    if (state.range(1) != 0) {
      receiver::DecodeProtobuf(wire, &req);
    } else {
      req = pipeline::Held<TracesRequest>::Make();
      req.request->ParseFromString(wire);
    }
    ingestor.Accept(receiver::Transport::kGrpc, std::move(req));
    a.FlushWaiting();
    processor.Flush(std::chrono::seconds(10));
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.counters["out_bytes_per_in"] =
      static_cast<double>(encoder->bytes.load()) / static_cast<double>(state.iterations() * kBatch);
}
// Real time: the export runs on the processor's thread.
BENCHMARK(BM_PipelineNoTransport512)
    ->ArgNames({"vllm", "keys_shared"})
    ->Args({1, 1})
    ->Args({1, 0})
    ->Args({0, 1})
    ->Args({0, 0})
    ->UseRealTime();

// Normalized output of 512 spans in (2048 spans out) as one request, as the merged export
// batch holds it.
TracesRequest NormalizedOutput() {
  TracesRequest tmpl = SenderRequest(kBatch);
  TracesRequest out;
  auto* rs = out.add_resource_spans();
  *rs->mutable_resource() = tmpl.resource_spans(0).resource();
  auto* ss = rs->add_scope_spans();
  *ss->mutable_scope() = tmpl.resource_spans(0).scope_spans(0).scope();
  engines::vllm::NormalizeContext ctx;
  for (auto& s : *tmpl.mutable_resource_spans(0)->mutable_scope_spans(0)->mutable_spans()) {
    std::vector<Span> phases;
    engines::vllm::Normalize(&s, "vllm.tracing.otel", ctx, &phases);
    *ss->add_spans() = s;
    for (auto& p : phases) *ss->add_spans() = std::move(p);
  }
  return out;
}

// Encoding normalized output: 512 spans in → 2048 spans out.
void BM_OtlpEncodeNormalized512(benchmark::State& state) {
  const TracesRequest out = NormalizedOutput();
  std::string buf;
  for (auto _ : state) {
    buf.clear();
    out.SerializeToString(&buf);
    benchmark::DoNotOptimize(buf.data());
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * buf.size()));
}
BENCHMARK(BM_OtlpEncodeNormalized512);

// What a batch costs from Submit to the wire, in sizing and encoding only. Arg 0: as through
// the generated gRPC stub (the batch processor's size at Submit, then the codec's ByteSizeLong
// and protobuf's serializer, which sizes again). Arg 1: pipeline::Encode, which reuses the
// spans' sizes from Submit.
void BM_ExportEncode512(benchmark::State& state) {
  const bool cached = state.range(0) == 1;
  const TracesRequest out = NormalizedOutput();
  std::string buf;
  for (auto _ : state) {
    benchmark::DoNotOptimize(out.ByteSizeLong());  // BatchProcessor::SubmitOne
    buf.clear();
    if (cached) {
      pipeline::Encode(out, &buf);
    } else {
      benchmark::DoNotOptimize(out.ByteSizeLong());  // grpc::GenericSerialize
      out.SerializeToString(&buf);
    }
    benchmark::DoNotOptimize(buf.data());
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.counters["cached"] = cached ? 1 : 0;
}
BENCHMARK(BM_ExportEncode512)->Arg(0)->Arg(1);

}  // namespace

BENCHMARK_MAIN();
