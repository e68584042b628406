// The gateway's per-request and per-chunk hot paths, each in isolation: request parsing,
// stream chunk observation, SSE relaying, entry span building, holding it for the export queue
// the request metrics, the OTLP encoding of a full export batch, and the embedded store's
// insert of one. Run:
// build-*/bench/hot_paths_bench
// [--benchmark_filter=...]

#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/hex.h"
#include "core/ids.h"
#include "core/resource.h"
#include "core/telemetry.h"
#include "encoding_exporter.h"
#include "engines/registry.h"
#include "export/sqlite/sqlite_store.h"
#include "gateway/entry_span.h"
#include "gateway/sse_relay.h"
#include "metrics/request_metrics.h"
#include "metrics/store.h"
#include "openai/exchange.h"
#include "openai/openai.h"
#include "otlp/json_util.h"
#include "pipeline/batch_processor.h"
#include "pipeline/held.h"

namespace {

namespace oa = infertel::openai;
using infertel::openai::Exchange;

const std::string kChatRequest =
    R"({"model":"meta-llama/Llama-3.1-8B-Instruct","messages":[{"role":"system","content":"You are a helpful assistant. Answer briefly and precisely."},)"
    R"({"role":"user","content":"Summarise the benefits of continuous batching for LLM inference servers in two sentences."},)"
    R"({"role":"assistant","content":"Continuous batching keeps the GPU busy by adding new requests as soon as others finish."},)"
    R"({"role":"user","content":"And the costs?"}],"temperature":0.7,"top_p":0.95,"max_tokens":256,"stream":true,"user":"bench"})";

const std::string kChunk =
    R"({"id":"chatcmpl-8f3a2c1d9e7b4a6f8c2d1e0f9a8b7c6d","object":"chat.completion.chunk","created":1764500000,)"
    R"("model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{"content":" batching"},"logprobs":null,"finish_reason":null}]})";

const std::string kUsageChunk =
    R"({"id":"chatcmpl-8f3a2c1d9e7b4a6f8c2d1e0f9a8b7c6d","object":"chat.completion.chunk","created":1764500000,)"
    R"("model":"meta-llama/Llama-3.1-8B-Instruct","choices":[],"usage":{"prompt_tokens":64,"total_tokens":320,"completion_tokens":256}})";

void BM_ParseRequest(benchmark::State& state) {
  oa::CaptureOptions capture;
  capture.capture_content = state.range(0) != 0;
  for (auto _ : state) {
    auto info = oa::ParseRequest(oa::Operation::kChat, kChatRequest, capture);
    benchmark::DoNotOptimize(info);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kChatRequest.size()));
}
BENCHMARK(BM_ParseRequest)->ArgName("capture")->Arg(1)->Arg(0);

// One content chunk observed, per iteration; the observer is renewed every 256 chunks so the
// accumulated output stays the size of a real answer.
void BM_StreamObserverOnData(benchmark::State& state) {
  oa::StreamObserver::Options opts;
  opts.capture.capture_content = state.range(0) != 0;
  opts.drop_injected_usage = true;
  std::string rewritten;
  int n = 0;
  auto obs = std::make_unique<oa::StreamObserver>(oa::Operation::kChat, opts);
  for (auto _ : state) {
    if (++n == 256) {
      state.PauseTiming();
      obs = std::make_unique<oa::StreamObserver>(oa::Operation::kChat, opts);
      n = 0;
      state.ResumeTiming();
    }
    benchmark::DoNotOptimize(obs->OnData(kChunk, &rewritten));
  }
}
BENCHMARK(BM_StreamObserverOnData)->ArgName("capture")->Arg(1)->Arg(0);

// The relay on whole SSE events as the engine writes them (one event per read), including the
// observer behind it.
void BM_SseRelayFeed(benchmark::State& state) {
  const std::string event = "data: " + kChunk + "\n\n";
  oa::StreamObserver::Options opts;
  opts.drop_injected_usage = true;
  std::string out;
  int n = 0;
  auto obs = std::make_unique<oa::StreamObserver>(oa::Operation::kChat, opts);
  auto relay = std::make_unique<infertel::gateway::SseRelay>(obs.get());
  for (auto _ : state) {
    if (++n == 256) {
      state.PauseTiming();
      obs = std::make_unique<oa::StreamObserver>(oa::Operation::kChat, opts);
      relay = std::make_unique<infertel::gateway::SseRelay>(obs.get());
      n = 0;
      state.ResumeTiming();
    }
    out.clear();
    relay->Feed(event, &out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * event.size()));
}
BENCHMARK(BM_SseRelayFeed);

// A finished streamed chat exchange as the gateway hands it to the span builder.
Exchange MakeExchange() {
  oa::CaptureOptions capture;
  Exchange ex;
  ex.op = oa::Operation::kChat;
  ex.request = oa::ParseRequest(oa::Operation::kChat, kChatRequest, capture);
  oa::StreamObserver::Options opts;
  opts.capture = capture;
  opts.drop_injected_usage = true;
  oa::StreamObserver obs(oa::Operation::kChat, opts);
  std::string rewritten;
  for (int i = 0; i < 64; ++i) obs.OnData(kChunk, &rewritten);
  obs.OnData(kUsageChunk, &rewritten);
  obs.OnData("[DONE]", &rewritten);
  ex.response = obs.Finish();
  ex.stream_deltas = obs.delta_count();
  ex.streamed = true;
  ex.trace_id = infertel::NewTraceId();
  ex.span_id = infertel::NewSpanId();
  ex.request_id = "bench-request-id";
  ex.start = infertel::Stopwatch::Start();
  ex.upstream_sent_mono_ns = ex.start.mono_start_ns + 50'000;
  ex.response_header_mono_ns = ex.start.mono_start_ns + 2'000'000;
  ex.first_token_mono_ns = ex.start.mono_start_ns + 30'000'000;
  for (int i = 0; i < 64; ++i)
    ex.delta_times.Add(ex.first_token_mono_ns + static_cast<std::uint64_t>(i) * 20'000'000, 1);
  ex.end_mono_ns = ex.delta_times.last_mono_ns + 1'000'000;
  ex.http_status = 200;
  return ex;
}

// Arg 0: on the heap; 1: on a fresh arena whose 4 KiB first block is inside its Memory, as
// EntrySpanEmitter builds it. All on one thread, so the allocator's cost for memory freed on
// another thread (an export lane) is not in these.
void BM_BuildEntrySpan(benchmark::State& state) {
  const Exchange ex = MakeExchange();
  for (auto _ : state) {
    if (state.range(0) == 1) {
      infertel::pipeline::MemoryWithBlock<4096> memory;
      auto* span = google::protobuf::Arena::CreateMessage<infertel::Span>(memory.arena());
      infertel::gateway::BuildEntrySpan(ex, span);
      benchmark::DoNotOptimize(span);
    } else {
      infertel::Span span;
      infertel::gateway::BuildEntrySpan(ex, &span);
      benchmark::DoNotOptimize(span);
    }
  }
}
BENCHMARK(BM_BuildEntrySpan)->ArgName("arena")->Arg(0)->Arg(1);

// The request metrics of one finished exchange, as RequestMetrics adds them: the counter
// deltas with their labels (MeasureExchange), then MetricStore::Add into series that exist
// already (every exchange after an upstream's first). Arg 0: measuring only; 1: both.
void BM_RequestMetrics(benchmark::State& state) {
  Exchange ex = MakeExchange();
  ex.upstream_name = "vllm-0";
  infertel::metrics::MetricStore store;
  store.AddSource("vllm-0", *infertel::engines::FindEngine("vllm"));
  const bool add = state.range(0) == 1;
  for (auto _ : state) {
    auto m = infertel::metrics::MeasureExchange(ex);
    if (add) store.Add(ex.upstream_name, m.labels, m.deltas);
    benchmark::DoNotOptimize(m);
  }
}
BENCHMARK(BM_RequestMetrics)->ArgName("add")->Arg(0)->Arg(1);

// `spans` entry spans of `ex` under the agent's resource and scope, as the export queue gets them.
infertel::TracesRequest EntrySpanRequest(const Exchange& ex, int spans) {
  infertel::TracesRequest req;
  auto* rs = req.add_resource_spans();
  infertel::AddAttr(rs->mutable_resource()->mutable_attributes(), "service.name", "infertel");
  auto* ss = rs->add_scope_spans();
  ss->mutable_scope()->set_name("infertel.gateway");
  for (int i = 0; i < spans; ++i) infertel::gateway::BuildEntrySpan(ex, ss->add_spans());
  return req;
}

// A full export batch (512 entry spans) encoded as an OTLP ExportTraceServiceRequest.
void BM_OtlpEncodeBatch512(benchmark::State& state) {
  const infertel::TracesRequest req = EntrySpanRequest(MakeExchange(), 512);
  std::string out;
  for (auto _ : state) {
    out.clear();
    req.SerializeToString(&out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * 512);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * out.size()));
}
BENCHMARK(BM_OtlpEncodeBatch512);

// What pipeline::Hold (a Memory, its arena and a view of the request) adds to a one-span heap
// request, over the request itself. Entry spans were held this way until EntrySpanEmitter
// built them on an arena directly (BM_EntrySpansThroughQueue).
// Arg 0: the one-span request copied and freed (the baseline); 1: the same, held and released.
void BM_HoldEntrySpanRequest(benchmark::State& state) {
  const infertel::TracesRequest tmpl = EntrySpanRequest(MakeExchange(), 1);
  const bool held = state.range(0) == 1;
  for (auto _ : state) {
    infertel::TracesRequest req = tmpl;
    if (held) {
      auto h = infertel::pipeline::Hold(std::move(req));
      benchmark::DoNotOptimize(h.request);
    } else {
      benchmark::DoNotOptimize(req);
    }
  }
}
BENCHMARK(BM_HoldEntrySpanRequest)->ArgName("held")->Arg(0)->Arg(1);

// The whole entry-span path after the exchange: EntrySpanEmitter builds each span under the
// agent's resource (as BuildResource makes it, with two OTEL_RESOURCE_ATTRIBUTES) and hands it
// to the batch processor, which queues, merges and encodes 512 of them per batch. Items are
// entry spans; real time, because the export runs on the processor's thread.
void BM_EntrySpansThroughQueue(benchmark::State& state) {
  const Exchange ex = MakeExchange();
  std::vector<infertel::pipeline::TraceBatchProcessor::ExporterPtr> exporters;
  exporters.push_back(std::make_unique<infertel::bench::EncodingExporter>());
  infertel::pipeline::BatchOptions bo;
  bo.max_queue_items = 1 << 20;  // nothing dropped: every span is encoded
  infertel::pipeline::TraceBatchProcessor processor(std::move(exporters), bo);
  auto env = [](std::string_view name) -> std::optional<std::string> {
    if (name == "OTEL_RESOURCE_ATTRIBUTES")
      return "deployment.environment.name=prod,k8s.pod.name=vllm-llama-8b-7c9f-x2k4q";
    return std::nullopt;
  };
  infertel::gateway::EntrySpanEmitter emitter(&processor, infertel::BuildResource(env, "infertel"));
  for (auto _ : state) {
    for (int i = 0; i < 512; ++i) emitter.OnExchangeFinished(ex);
    processor.Flush(std::chrono::seconds(10));
  }
  state.SetItemsProcessed(state.iterations() * 512);
}
BENCHMARK(BM_EntrySpansThroughQueue)->UseRealTime();

// The JSON text of an entry span's attributes (its captured messages among them), as the
// store writes it into a row's `attributes` column.
void BM_StoreAttributesJson(benchmark::State& state) {
  infertel::Span span;
  infertel::gateway::BuildEntrySpan(MakeExchange(), &span);
  std::string out;
  for (auto _ : state) {
    out.clear();
    infertel::otlp_json::AppendPlainAttributes(&out, span.attributes());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * out.size()));
}
BENCHMARK(BM_StoreAttributesJson);

// The embedded store's part of the store lane: entry spans (with their captured messages, each
// of its own trace) inserted as SqliteStore::InsertTraces runs for an export, one transaction
// per export, without the lane's pacer. Arg 0: rows per transaction, 4,096 as the lane asks
// for at saturation, about 200 at 1000 requests/s (cut by the 200 ms schedule delay); arg 1:
// rows in the store before the first timed one, since the trace index's random inserts touch
// more of its pages the larger it is. The file is on the disk of the agent's default store
// (a fresh directory under /tmp).
// A store in a fresh directory under /tmp, filled with entry spans in transactions of `rows`
// the way the lane writes them: new trace ids, start times advancing 33 µs apart (about 30,000
// requests per second), so that the indexes see what they would. Removed with the object.
class BenchStore {
 public:
  explicit BenchStore(int rows) : req_(EntrySpanRequest(MakeExchange(), rows)) {
    spans_ = req_.mutable_resource_spans(0)->mutable_scope_spans(0)->mutable_spans();
    start_ns_ = spans_->Get(0).start_time_unix_nano();
    char dir_template[] = "/tmp/infertel-store-bench.XXXXXX";
    dir_ = mkdtemp(dir_template);
    infertel::exporting::StoreOptions options;
    options.path = (dir_ / "bench.db").string();
    ok_ = store_.Open(options, &error_);
  }
  ~BenchStore() { std::filesystem::remove_all(dir_); }
  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  infertel::exporting::SqliteStore& store() { return store_; }
  // One transaction; the hex trace id of its last row into `*last_trace` when not null.
  bool Insert(std::string* last_trace = nullptr) {
    for (auto& span : *spans_) {
      const infertel::TraceId id = infertel::NewTraceId();
      span.set_trace_id(id.data(), id.size());
      start_ns_ += 33'000;
      span.set_start_time_unix_nano(start_ns_);
      span.set_end_time_unix_nano(start_ns_ + 1'000'000);
    }
    if (last_trace != nullptr) *last_trace = infertel::BytesToHex(spans_->rbegin()->trace_id());
    ok_ = store_.InsertTraces(req_, &error_);
    return ok_;
  }

 private:
  infertel::TracesRequest req_;
  google::protobuf::RepeatedPtrField<infertel::Span>* spans_ = nullptr;
  std::uint64_t start_ns_ = 0;
  std::filesystem::path dir_;
  infertel::exporting::SqliteStore store_;
  std::string error_;
  bool ok_ = false;
};

void BM_StoreInsertEntrySpans(benchmark::State& state) {
  const int rows = static_cast<int>(state.range(0));
  const int before = static_cast<int>(state.range(1));
  BenchStore b(rows);
  for (int n = 0; n < before && b.ok(); n += rows) b.Insert();
  for (auto _ : state)
    if (!b.Insert()) break;
  if (!b.ok()) state.SkipWithError(b.error().c_str());
  state.SetItemsProcessed(state.iterations() * rows);
}
BENCHMARK(BM_StoreInsertEntrySpans)
    ->ArgNames({"rows", "before"})
    ->Args({4096, 0})
    ->Args({200, 200000})
    ->Args({4096, 200000})
    ->Args({4096, 1000000})
    ->UseRealTime();

// `infertel traces --trace ID`: one trace's spans read back by its id (kTraceSpansSql), from a
// store of N rows, the ids taken from rows spread over the whole store.
void BM_StoreTraceLookup(benchmark::State& state) {
  const int before = static_cast<int>(state.range(0));
  BenchStore b(4096);
  std::vector<std::string> ids;
  for (int n = 0; n < before && b.ok(); n += 4096) b.Insert(&ids.emplace_back());
  if (!b.ok() || ids.empty()) {
    state.SkipWithError(b.ok() ? "no rows" : b.error().c_str());
    return;
  }
  std::size_t i = 0, found = 0;
  for (auto _ : state) {
    found += b.store().TraceSpans(ids[i++ % ids.size()]).size();
  }
  if (found != static_cast<std::size_t>(state.iterations())) state.SkipWithError("trace not found");
}
BENCHMARK(BM_StoreTraceLookup)->ArgNames({"before"})->Arg(200000)->Arg(1000000);

}  // namespace

BENCHMARK_MAIN();
