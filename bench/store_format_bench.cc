// The store's write rate and query times (bench/store_format.sh): writes `--spans` spans shaped
// like the agent's (an entry span with gen_ai attributes and, under it, an engine span and two
// phases per request) into a store directory in transactions of 4,096, on one thread, then
// times a trace by id and a filtered page of the newest 50 traces.
//
//   store_format_bench --dir DIR [--spans N] [--max-mb MB]
//
// Prints `RESULT key=value` lines: write_spans_per_s (wall and thread CPU), bytes_per_span,
// trace_by_id_ms (mean and max of 200 lookups), page_ms (mean and max, 4 filters x 10 runs).
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/hex.h"
#include "core/semconv.h"
#include "core/telemetry.h"
#include "export/sqlite/sqlite_store.h"

namespace {

using infertel::exporting::SqliteStore;

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

std::string RandomBytes(std::mt19937_64& rng, int n) {
  std::string out(static_cast<std::size_t>(n), '\0');
  for (auto& c : out) c = static_cast<char>(rng());
  return out;
}

template <typename T>
void Attr(infertel::Span* s, std::string_view key, T value) {
  infertel::AddAttr(s->mutable_attributes(), key, value);
}

// One request's four spans: entry (root), llm_request, prefill, decode.
void AddRequest(infertel::TracesRequest* req, std::mt19937_64& rng, std::uint64_t start,
                std::vector<std::string>* ids) {
  static const char* kModels[] = {"meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen2.5-7B-Instruct",
                                  "mistralai/Mistral-7B-Instruct-v0.3"};
  auto* ss = req->mutable_resource_spans(0)->mutable_scope_spans(0);
  const std::string trace = RandomBytes(rng, 16);
  const std::string entry = RandomBytes(rng, 8), llm = RandomBytes(rng, 8);
  const std::uint64_t dur = 20'000'000 + rng() % 2'000'000'000;
  const char* model = kModels[rng() % 3];
  infertel::Span* e = ss->add_spans();
  e->set_trace_id(trace);
  e->set_span_id(entry);
  e->set_name(fmt::format("chat {}", model));
  e->set_kind(infertel::otlp_trace::Span::SPAN_KIND_INTERNAL);
  e->set_start_time_unix_nano(start);
  e->set_end_time_unix_nano(start + dur);
  if (rng() % 50 == 0)
    e->mutable_status()->set_code(infertel::otlp_trace::Status::STATUS_CODE_ERROR);
  Attr(e, infertel::semconv::kGenAiOperationName, "chat");
  Attr(e, infertel::semconv::kGenAiRequestModel, model);
  Attr(e, "gen_ai.response.model", model);
  Attr(e, "gen_ai.span.kind", "LLM");
  Attr(e, "gen_ai.response.id", fmt::format("chatcmpl-{:016x}", rng()));
  Attr(e, "gen_ai.request.id", fmt::format("{:032x}-{:08x}", rng(), rng() % 100000));
  Attr(e, infertel::semconv::kGenAiUsageInputTokens, static_cast<std::int64_t>(rng() % 2000));
  Attr(e, infertel::semconv::kGenAiUsageOutputTokens, static_cast<std::int64_t>(rng() % 500));
  Attr(e, "gen_ai.request.max_tokens", std::int64_t{512});
  Attr(e, "gen_ai.request.temperature", 0.7);
  Attr(e, "gen_ai.request.is_stream", rng() % 2 == 0);
  Attr(e, "server.address", "127.0.0.1");
  Attr(e, "server.port", std::int64_t{8000});
  Attr(e, "http.response.status_code", std::int64_t{200});
  auto child = [&](const std::string& id, const std::string& parent, const char* name,
                   std::uint64_t s0, std::uint64_t s1) {
    infertel::Span* c = ss->add_spans();
    c->set_trace_id(trace);
    c->set_span_id(id);
    c->set_parent_span_id(parent);
    c->set_name(name);
    c->set_start_time_unix_nano(s0);
    c->set_end_time_unix_nano(s1);
    Attr(c, infertel::semconv::kGenAiRequestModel, model);
    Attr(c, "gen_ai.latency.time_in_queue", static_cast<double>(rng() % 1000) / 1e4);
    return c;
  };
  infertel::Span* l = child(llm, entry, "llm_request", start + 1'000'000, start + dur - 1'000'000);
  Attr(l, "gen_ai.request.id", fmt::format("chatcmpl-{:016x}", rng()));
  child(RandomBytes(rng, 8), llm, "prefill", start + 2'000'000, start + 12'000'000);
  child(RandomBytes(rng, 8), llm, "decode", start + 12'000'000, start + dur - 2'000'000);
  if (ids->size() < 100000 && rng() % 16 == 0) ids->push_back(infertel::BytesToHex(trace));
}

infertel::TracesRequest Batch(std::mt19937_64& rng, int requests, std::uint64_t* clock,
                              std::vector<std::string>* ids) {
  infertel::TracesRequest req;
  auto* rs = req.add_resource_spans();
  infertel::AddAttr(rs->mutable_resource()->mutable_attributes(), infertel::semconv::kServiceName,
                    "infertel");
  infertel::AddAttr(rs->mutable_resource()->mutable_attributes(), "host.name", "bench-host");
  rs->add_scope_spans()->mutable_scope()->set_name("infertel.gateway");
  for (int i = 0; i < requests; ++i) AddRequest(&req, rng, *clock += 33'000, ids);
  return req;
}

std::uint64_t DirBytes(const std::string& dir) {
  std::uint64_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.is_regular_file()) n += e.file_size();
  return n;
}

template <typename F>
void Time(const char* key, int runs, F&& f) {
  double sum = 0, max = 0;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f(i);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    sum += ms;
    max = std::max(max, ms);
  }
  std::printf("RESULT %s_mean_ms=%.3f\nRESULT %s_max_ms=%.3f\n", key, sum / runs, key, max);
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  std::int64_t spans = 1'000'000, max_mb = 4096;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--dir")) dir = argv[i + 1];
    if (!std::strcmp(argv[i], "--spans")) spans = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--max-mb")) max_mb = std::atoll(argv[i + 1]);
  }
  if (dir.empty()) {
    std::fprintf(stderr, "usage: store_format_bench --dir DIR [--spans N] [--max-mb MB]\n");
    return 2;
  }
  std::mt19937_64 rng(42);
  std::vector<std::string> ids;
  std::uint64_t clock = infertel::WallNanos();
  {
    infertel::exporting::StoreOptions o;
    o.path = dir;
    o.max_bytes = static_cast<std::uint64_t>(max_mb) << 20;
    o.max_age = std::chrono::seconds(0);
    SqliteStore store;
    std::string error;
    if (!store.Open(o, &error)) {
      std::fprintf(stderr, "store_format_bench: %s\n", error.c_str());
      return 1;
    }
    double write_s = 0, cpu_s = 0;
    for (std::int64_t done = 0; done < spans; done += 4096) {
      const auto req = Batch(rng, 1024, &clock, &ids);  // 4,096 spans, as the lane batches
      const auto t0 = std::chrono::steady_clock::now();
      const double c0 = ThreadCpuSeconds();
      if (!store.InsertTraces(req, &error)) {
        std::fprintf(stderr, "store_format_bench: %s\n", error.c_str());
        return 1;
      }
      cpu_s += ThreadCpuSeconds() - c0;
      write_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    std::printf(
        "RESULT spans=%lld\nRESULT write_spans_per_s=%.0f\nRESULT write_spans_per_cpu_s=%.0f\n",
        static_cast<long long>(spans), static_cast<double>(spans) / write_s,
        static_cast<double>(spans) / cpu_s);
  }
  SqliteStore reader;
  std::string error;
  if (!reader.Open(dir, &error)) return 1;
  const std::int64_t stored = reader.CountSpans();
  std::printf(
      "RESULT stored_spans=%lld\nRESULT bytes_per_span=%.1f\n", static_cast<long long>(stored),
      static_cast<double>(DirBytes(dir)) / static_cast<double>(std::max<std::int64_t>(stored, 1)));
  std::size_t found = 0;
  Time("trace_by_id", 200, [&](int i) {
    found += reader.TraceSpans(ids[(static_cast<std::size_t>(i) * 7919) % ids.size()]).size();
  });
  std::printf("RESULT trace_by_id_spans_found=%zu\n", found);
  std::size_t rows = 0;
  Time("page", 40, [&](int i) {
    infertel::exporting::TraceFilter f;
    f.limit = 50;
    if (i % 4 == 1) f.model = "Qwen/Qwen2.5-7B-Instruct";
    if (i % 4 == 2) f.status = 2;
    if (i % 4 == 3) f.min_duration_ns = 1'900'000'000, f.operation = "chat";
    rows += reader.Traces(f).size();
  });
  std::printf("RESULT page_rows=%zu\n", rows);
  return 0;
}
