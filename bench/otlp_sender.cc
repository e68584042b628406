// infertel-otlp-bench: the load and the sink of bench/otlp_pipeline.sh.
//
//   infertel-otlp-bench send --target HOST:PORT [--rate SPANS_PER_S] [--duration S] [--batch B]
//                            [--threads T]
//     Sends OTLP gRPC ExportTraceServiceRequests of B vLLM V1 `llm_request` spans (as vLLM's
//     frontend emits them, facts/vllm.md §1.3) at --rate spans/s (0: as fast as possible) for
//     --duration seconds from T threads, then prints `RESULT send ...` with the achieved rate.
//
//   infertel-otlp-bench sink --listen HOST:PORT [--interval-ms MS]
//     An OTLP gRPC TraceService that counts the spans it receives. Prints `LISTEN port=N` once
//     bound, `SINK t=... spans=... rate=...` every interval (cumulative count) and
//     `RESULT sink ...` on SIGINT/SIGTERM.
//
// Loopback benchmarking tool only: no TLS, no retries.

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/semconv.h"
#include "core/telemetry.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.grpc.pb.h"

namespace {

using infertel::AddAttr;
using infertel::Span;
using infertel::TracesRequest;
using infertel::otlp_collector_trace::ExportTraceServiceResponse;
using infertel::otlp_collector_trace::TraceService;
namespace sc = infertel::semconv;
using Clock = std::chrono::steady_clock;

// vLLM V1's instrumentation scope (facts/vllm.md §1.3).
constexpr std::string_view kVllmScope = "vllm.tracing.otel";

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop.store(true); }

double SecondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::uint64_t WallNs() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count());
}

struct Args {
  std::string mode;
  std::string target = "127.0.0.1:4317";
  std::string listen = "127.0.0.1:0";
  double rate = 0;  // spans/s; 0 = as fast as possible
  double duration = 10;
  int batch = 512;
  int threads = 2;
  int interval_ms = 500;
};

[[noreturn]] void Usage() {
  std::fprintf(stderr,
               "usage: infertel-otlp-bench send --target HOST:PORT [--rate SPANS_PER_S] "
               "[--duration S] [--batch B] [--threads T]\n"
               "       infertel-otlp-bench sink --listen HOST:PORT [--interval-ms MS]\n");
  std::exit(2);
}

Args Parse(int argc, char** argv) {
  if (argc < 2) Usage();
  Args a;
  a.mode = argv[1];
  if (a.mode != "send" && a.mode != "sink") Usage();
  for (int i = 2; i < argc; ++i) {
    std::string k = argv[i];
    if (i + 1 >= argc) Usage();
    std::string v = argv[++i];
    if (k == "--target") {
      a.target = v;
    } else if (k == "--listen") {
      a.listen = v;
    } else if (k == "--rate") {
      a.rate = std::atof(v.c_str());
    } else if (k == "--duration") {
      a.duration = std::atof(v.c_str());
    } else if (k == "--batch") {
      a.batch = std::atoi(v.c_str());
    } else if (k == "--threads") {
      a.threads = std::atoi(v.c_str());
    } else if (k == "--interval-ms") {
      a.interval_ms = std::atoi(v.c_str());
    } else {
      Usage();
    }
  }
  if (a.batch < 1 || a.threads < 1 || a.duration <= 0 || a.rate < 0 || a.interval_ms < 10) Usage();
  return a;
}

// One request of `batch` spans; ids, request ids and times are rewritten per send.
TracesRequest MakeTemplate(int batch) {
  TracesRequest req;
  auto* rs = req.add_resource_spans();
  auto* res = rs->mutable_resource();
  AddAttr(res->mutable_attributes(), "telemetry.sdk.language", "python");
  AddAttr(res->mutable_attributes(), sc::kTelemetrySdkName, "opentelemetry");
  AddAttr(res->mutable_attributes(), "telemetry.sdk.version", "1.37.0");
  AddAttr(res->mutable_attributes(), sc::kServiceName, "vllm-bench");
  AddAttr(res->mutable_attributes(), "vllm.instrumenting_module_name", "vllm.llm_engine");
  auto* ss = rs->add_scope_spans();
  ss->mutable_scope()->set_name(kVllmScope.data(), kVllmScope.size());
  for (int i = 0; i < batch; ++i) {
    Span* s = ss->add_spans();
    s->set_name(sc::kSpanLlmRequest.data(), sc::kSpanLlmRequest.size());
    s->set_kind(infertel::otlp_trace::Span::SPAN_KIND_SERVER);
    s->set_trace_id(std::string(16, '\0'));
    s->set_span_id(std::string(8, '\0'));
    auto* at = s->mutable_attributes();
    // Order and types as vLLM's do_tracing sets them.
    AddAttr(at, sc::kGenAiLatencyTimeToFirstToken, 0.0421);
    AddAttr(at, sc::kGenAiLatencyE2e, 1.2034);
    AddAttr(at, sc::kGenAiLatencyTimeInQueue, 0.0031);
    AddAttr(at, sc::kGenAiUsagePromptTokens, 312);
    AddAttr(at, sc::kGenAiUsageCompletionTokens, 128);
    AddAttr(at, sc::kGenAiLatencyTimeInModelPrefill, 0.0357);
    AddAttr(at, sc::kGenAiLatencyTimeInModelDecode, 1.1552);
    AddAttr(at, sc::kGenAiLatencyTimeInModelInference, 1.1909);
    AddAttr(at, sc::kGenAiRequestId, "chatcmpl-bench-0");
    AddAttr(at, sc::kGenAiRequestTopP, 0.95);
    AddAttr(at, sc::kGenAiRequestMaxTokens, 256);
    AddAttr(at, sc::kGenAiRequestTemperature, 0.7);
    AddAttr(at, sc::kGenAiRequestN, 1);
  }
  return req;
}

// Gives every span of `req` fresh ids, a unique request id and times ending now.
void Refresh(TracesRequest* req, std::mt19937_64* rng, std::uint64_t* seq) {
  const std::uint64_t end = WallNs();
  const std::uint64_t start = end - 1'203'400'000ULL;
  auto* spans = req->mutable_resource_spans(0)->mutable_scope_spans(0)->mutable_spans();
  for (auto& s : *spans) {
    std::uint64_t t[2] = {(*rng)(), (*rng)()};
    std::uint64_t sid = (*rng)() | 1;
    s.mutable_trace_id()->assign(reinterpret_cast<const char*>(t), 16);
    s.mutable_span_id()->assign(reinterpret_cast<const char*>(&sid), 8);
    s.set_start_time_unix_nano(start);
    s.set_end_time_unix_nano(end);
    for (auto& kv : *s.mutable_attributes()) {
      if (kv.key() == sc::kGenAiRequestId) {
        kv.mutable_value()->set_string_value("chatcmpl-bench-" + std::to_string((*seq)++));
        break;
      }
    }
  }
}

int RunSend(const Args& a) {
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  grpc::ChannelArguments ch_args;
  ch_args.SetMaxSendMessageSize(64 << 20);
  std::atomic<std::uint64_t> sent_spans{0}, ok_batches{0}, err_batches{0};
  const double per_thread_rate = a.rate / a.threads;
  const auto t0 = Clock::now();
  const auto deadline =
      t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(a.duration));
  std::vector<std::thread> workers;
  for (int w = 0; w < a.threads; ++w) {
    workers.emplace_back([&, w] {
      // One channel per thread: separate HTTP/2 connections, as separate vLLM processes.
      grpc::ChannelArguments args = ch_args;
      args.SetInt("infertel.bench.worker", w);
      auto channel = grpc::CreateCustomChannel(a.target, grpc::InsecureChannelCredentials(), args);
      auto stub = TraceService::NewStub(channel);
      std::mt19937_64 rng(0x5eed0000ULL + static_cast<std::uint64_t>(w));
      std::uint64_t seq = static_cast<std::uint64_t>(w) * 1'000'000'000ULL;
      TracesRequest req = MakeTemplate(a.batch);
      auto next = Clock::now();
      const auto gap = per_thread_rate > 0
                           ? std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(a.batch / per_thread_rate))
                           : Clock::duration::zero();
      while (!g_stop.load(std::memory_order_relaxed)) {
        auto now = Clock::now();
        if (now >= deadline) break;
        if (per_thread_rate > 0) {
          if (next > now) std::this_thread::sleep_until(std::min(next, deadline));
          if (Clock::now() >= deadline) break;
          next += gap;
        }
        Refresh(&req, &rng, &seq);
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
        ExportTraceServiceResponse resp;
        grpc::Status st = stub->Export(&ctx, req, &resp);
        if (st.ok()) {
          ok_batches.fetch_add(1, std::memory_order_relaxed);
          sent_spans.fetch_add(static_cast<std::uint64_t>(a.batch), std::memory_order_relaxed);
        } else {
          if (err_batches.fetch_add(1, std::memory_order_relaxed) < 3)
            std::fprintf(stderr, "send: Export failed: %d %s\n", st.error_code(),
                         st.error_message().c_str());
        }
      }
    });
  }
  for (auto& t : workers) t.join();
  const double secs = SecondsSince(t0);
  std::printf(
      "RESULT send spans=%llu batches=%llu errors=%llu seconds=%.3f rate=%.0f target=%.0f\n",
      static_cast<unsigned long long>(sent_spans.load()),
      static_cast<unsigned long long>(ok_batches.load()),
      static_cast<unsigned long long>(err_batches.load()), secs,
      static_cast<double>(sent_spans.load()) / secs, a.rate);
  return err_batches.load() == 0 ? 0 : 1;
}

class CountingService final : public TraceService::Service {
 public:
  grpc::Status Export(grpc::ServerContext*, const TracesRequest* req,
                      ExportTraceServiceResponse*) override {
    spans_.fetch_add(infertel::CountSpans(*req), std::memory_order_relaxed);
    requests_.fetch_add(1, std::memory_order_relaxed);
    return grpc::Status::OK;
  }
  std::uint64_t spans() const { return spans_.load(std::memory_order_relaxed); }
  std::uint64_t requests() const { return requests_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> spans_{0};
  std::atomic<std::uint64_t> requests_{0};
};

int RunSink(const Args& a) {
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  CountingService svc;
  grpc::ServerBuilder b;
  int port = 0;
  b.AddListeningPort(a.listen, grpc::InsecureServerCredentials(), &port);
  b.SetMaxReceiveMessageSize(64 << 20);
  b.RegisterService(&svc);
  std::unique_ptr<grpc::Server> server = b.BuildAndStart();
  if (!server || port == 0) {
    std::fprintf(stderr, "sink: cannot listen on %s\n", a.listen.c_str());
    return 1;
  }
  std::printf("LISTEN port=%d\n", port);
  std::fflush(stdout);
  const auto t0 = Clock::now();
  auto last_t = t0;
  std::uint64_t last_n = 0;
  auto next = t0 + std::chrono::milliseconds(a.interval_ms);
  while (!g_stop.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    auto now = Clock::now();
    if (now < next) continue;
    next += std::chrono::milliseconds(a.interval_ms);
    std::uint64_t n = svc.spans();
    double dt = std::chrono::duration<double>(now - last_t).count();
    std::printf("SINK t=%.3f spans=%llu rate=%.0f\n", SecondsSince(t0),
                static_cast<unsigned long long>(n), static_cast<double>(n - last_n) / dt);
    std::fflush(stdout);
    last_t = now;
    last_n = n;
  }
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  const double secs = SecondsSince(t0);
  std::printf("RESULT sink spans=%llu requests=%llu seconds=%.3f rate=%.0f\n",
              static_cast<unsigned long long>(svc.spans()),
              static_cast<unsigned long long>(svc.requests()), secs,
              static_cast<double>(svc.spans()) / secs);
  std::fflush(stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a = Parse(argc, argv);
  return a.mode == "send" ? RunSend(a) : RunSink(a);
}
