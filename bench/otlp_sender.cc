// infertel-otlp-bench: the load and the sink of bench/otlp_pipeline.sh, and the span
// visibility join of bench/span_visibility.sh.
//
//   infertel-otlp-bench send --target HOST:PORT [--rate SPANS_PER_S] [--duration S] [--batch B]
//                            [--threads T] [--transport grpc|http] [--retry-ms MS]
//     Sends OTLP gRPC (or, with --transport http, OTLP/HTTP protobuf: POST /v1/traces over one
//     HTTP/1.1 keep-alive connection per thread) ExportTraceServiceRequests of B vLLM V1
//     `llm_request` spans (as vLLM's frontend emits them, facts/vllm.md §1.3) at --rate spans/s (0:
//     as fast as possible) for
//     --duration seconds from T threads, then prints `RESULT send ...` with the achieved rate.
//     A thread answered "retry later" sends again after --retry-ms (default 20; OpenTelemetry's
//     Python exporters wait the 1 s the agent names, so 1000 behaves like vLLM's and SGLang's).
//
//   infertel-otlp-bench sink --listen HOST:PORT [--interval-ms MS] [--record FILE]
//                            [--transport grpc|http]
//     An OTLP gRPC TraceService (or OTLP/HTTP /v1/traces endpoint) that counts the spans it
//     receives (from the wire tags, without decoding, unless --record needs the ids). Prints
//     `LISTEN port=N` once bound, `SINK t=... spans=... rate=...` every interval (cumulative count)
//     and `RESULT sink ...` on SIGINT/SIGTERM, with the p50/p99/max of how long after its end
//     (the sender's wall clock at the send that was accepted) the first llm_request span of each
//     export request arrived: one span decoded per request, so counting stays cheap. With --record,
//     writes one line per span received: arrival time (CLOCK_MONOTONIC ns, taken when the export
//     call reaches the service; the clock is system-wide, so comparable with other processes'
//     steady_clock), trace id, span id, parent span id (- if none), scope name, kind and name.
//
//   infertel-otlp-bench join --requests FILE --spans FILE [--label L]
//     Joins infertel-loadgen's `fixed --record` file (trace id, parent span id, response end
//     time, ok, stream) with a sink's --record file and prints, per kind of span, how long after
//     its request ended the first such span of the request's trace arrived: `entry` is the
//     span whose parent is the client's span (the gateway's entry span), every other span is
//     grouped by name (llm_request, wait, prefill, decode, ...). One `RESULT join ...` line per
//     group with p50/p90/p99/max in ms and the successful requests that never got such a span.
//
// Loopback benchmarking tool only: no TLS, no retries.

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/support/proto_buffer_reader.h>
#include <boost/asio.hpp>
#include <boost/beast.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/semconv.h"
#include "core/telemetry.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.grpc.pb.h"
#include "vllm_bench_request.h"

namespace {

using infertel::Span;
using infertel::TracesRequest;
using infertel::otlp_collector_trace::ExportTraceServiceResponse;
using infertel::otlp_collector_trace::TraceService;
namespace sc = infertel::semconv;
using Clock = std::chrono::steady_clock;

// vLLM V1's instrumentation scope (facts/vllm.md §1.3).
using infertel::bench::kVllmScope;

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
  int retry_ms = 20;     // send: the pause after a "retry later"
  std::string record;    // sink: per-span arrival file
  std::string requests;  // join: the loadgen's --record file
  std::string spans;     // join: the sink's --record file
  std::string label = "run";
  std::string transport = "grpc";  // send and sink: grpc or http
};

[[noreturn]] void Usage() {
  std::fprintf(stderr,
               "usage: infertel-otlp-bench send --target HOST:PORT [--rate SPANS_PER_S] "
               "[--duration S] [--batch B] [--threads T] [--transport grpc|http] [--retry-ms MS]\n"
               "       infertel-otlp-bench sink --listen HOST:PORT [--interval-ms MS] "
               "[--record FILE] [--transport grpc|http]\n"
               "       infertel-otlp-bench join --requests FILE --spans FILE [--label L]\n");
  std::exit(2);
}

Args Parse(int argc, char** argv) {
  if (argc < 2) Usage();
  Args a;
  a.mode = argv[1];
  if (a.mode != "send" && a.mode != "sink" && a.mode != "join") Usage();
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
    } else if (k == "--retry-ms") {
      a.retry_ms = std::atoi(v.c_str());
    } else if (k == "--interval-ms") {
      a.interval_ms = std::atoi(v.c_str());
    } else if (k == "--record") {
      a.record = v;
    } else if (k == "--requests") {
      a.requests = v;
    } else if (k == "--spans") {
      a.spans = v;
    } else if (k == "--label") {
      a.label = v;
    } else if (k == "--transport") {
      a.transport = v;
    } else {
      Usage();
    }
  }
  if (a.batch < 1 || a.threads < 1 || a.duration <= 0 || a.rate < 0 || a.interval_ms < 10 ||
      a.retry_ms < 0)
    Usage();
  if (a.mode == "join" && (a.requests.empty() || a.spans.empty())) Usage();
  if (a.transport != "grpc" && a.transport != "http") Usage();
  if (a.transport == "http" && !a.record.empty()) Usage();  // recording decodes gRPC requests
  return a;
}

// One request of `batch` spans; ids, request ids and times are rewritten per send.
TracesRequest MakeTemplate(int batch) { return infertel::bench::VllmBenchRequest(batch); }

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

// What one export call came to.
enum class Outcome { kOk, kThrottled, kError };

// One sending thread's gRPC channel: its own HTTP/2 connection, as a separate vLLM process.
class GrpcSender {
 public:
  GrpcSender(const std::string& target, int worker) {
    grpc::ChannelArguments args;
    args.SetMaxSendMessageSize(64 << 20);
    args.SetInt("infertel.bench.worker", worker);  // no channel sharing between threads
    stub_ = TraceService::NewStub(
        grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args));
  }

  Outcome Send(const TracesRequest& req, std::string* error) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    ExportTraceServiceResponse resp;
    grpc::Status st = stub_->Export(&ctx, req, &resp);
    if (st.ok()) return Outcome::kOk;
    if (st.error_code() == grpc::StatusCode::UNAVAILABLE) return Outcome::kThrottled;
    *error = std::to_string(st.error_code()) + " " + st.error_message();
    return Outcome::kError;
  }

 private:
  std::unique_ptr<TraceService::Stub> stub_;
};

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;

// HOST:PORT → endpoint (numeric hosts only: a loopback tool).
bool ParseEndpoint(const std::string& hostport, tcp::endpoint* out) {
  const auto colon = hostport.rfind(':');
  if (colon == std::string::npos) return false;
  boost::system::error_code ec;
  auto addr = asio::ip::make_address(hostport.substr(0, colon), ec);
  if (ec) return false;
  *out = tcp::endpoint(addr, static_cast<unsigned short>(std::atoi(hostport.c_str() + colon + 1)));
  return true;
}

// One sending thread's OTLP/HTTP connection: POST /v1/traces, protobuf, keep-alive, as the
// Python exporters' requests session does. A 503 is the agent's "retry later".
class HttpSender {
 public:
  explicit HttpSender(const std::string& target) : ok_(ParseEndpoint(target, &endpoint_)) {}

  Outcome Send(const TracesRequest& req, std::string* error) {
    if (!ok_) {
      *error = "bad --target";
      return Outcome::kError;
    }
    bhttp::request<bhttp::string_body> out{bhttp::verb::post, "/v1/traces", 11};
    out.set(bhttp::field::host, "127.0.0.1");
    out.set(bhttp::field::content_type, "application/x-protobuf");
    out.keep_alive(true);
    req.SerializeToString(&out.body());
    out.prepare_payload();
    boost::system::error_code ec;
    for (int attempt = 0; attempt < 2; ++attempt) {  // once more on a connection the peer closed
      if (!socket_.is_open()) {
        socket_.connect(endpoint_, ec);
        if (ec) break;
        socket_.set_option(tcp::no_delay(true));
      }
      bhttp::write(socket_, out, ec);
      bhttp::response<bhttp::string_body> in;
      if (!ec) bhttp::read(socket_, buffer_, in, ec);
      if (ec) {
        socket_.close();
        buffer_.clear();
        continue;
      }
      if (!in.keep_alive()) socket_.close();
      if (in.result_int() / 100 == 2) return Outcome::kOk;
      if (in.result() == bhttp::status::service_unavailable) return Outcome::kThrottled;
      *error = "HTTP " + std::to_string(in.result_int());
      return Outcome::kError;
    }
    *error = ec.message();
    return Outcome::kError;
  }

 private:
  tcp::endpoint endpoint_;  // before ok_: ParseEndpoint fills it in ok_'s initializer
  bool ok_;
  asio::io_context io_;
  tcp::socket socket_{io_};
  beast::flat_buffer buffer_;
};

template <typename Sender>
void SendLoop(const Args& a, int w, Sender* sender, Clock::time_point deadline,
              std::atomic<std::uint64_t>* sent_spans, std::atomic<std::uint64_t>* ok_batches,
              std::atomic<std::uint64_t>* err_batches, std::atomic<std::uint64_t>* throttled) {
  const double per_thread_rate = a.rate / a.threads;
  std::mt19937_64 rng(0x5eed0000ULL + static_cast<std::uint64_t>(w));
  std::uint64_t seq = static_cast<std::uint64_t>(w) * 1'000'000'000ULL;
  TracesRequest req = MakeTemplate(a.batch);
  auto next = Clock::now();
  const auto gap = per_thread_rate > 0
                       ? std::chrono::duration_cast<Clock::duration>(
                             std::chrono::duration<double>(a.batch / per_thread_rate))
                       : Clock::duration::zero();
  std::string error;
  while (!g_stop.load(std::memory_order_relaxed)) {
    auto now = Clock::now();
    if (now >= deadline) break;
    if (per_thread_rate > 0) {
      if (next > now) std::this_thread::sleep_until(std::min(next, deadline));
      if (Clock::now() >= deadline) break;
      next += gap;
    }
    Refresh(&req, &rng, &seq);
    switch (sender->Send(req, &error)) {
      case Outcome::kOk:
        ok_batches->fetch_add(1, std::memory_order_relaxed);
        sent_spans->fetch_add(static_cast<std::uint64_t>(a.batch), std::memory_order_relaxed);
        break;
      case Outcome::kThrottled:
        // The agent's "retry later" (export queues full): back off as an OTLP exporter
        // does; by default without the exporters' whole second, so the phase measures the agent.
        throttled->fetch_add(1, std::memory_order_relaxed);
        std::this_thread::sleep_for(std::chrono::milliseconds(a.retry_ms));
        break;
      case Outcome::kError:
        if (err_batches->fetch_add(1, std::memory_order_relaxed) < 3)
          std::fprintf(stderr, "send: Export failed: %s\n", error.c_str());
        break;
    }
  }
}

int RunSend(const Args& a) {
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  std::atomic<std::uint64_t> sent_spans{0}, ok_batches{0}, err_batches{0}, throttled{0};
  const auto t0 = Clock::now();
  const auto deadline =
      t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(a.duration));
  std::vector<std::thread> workers;
  for (int w = 0; w < a.threads; ++w) {
    workers.emplace_back([&, w] {
      if (a.transport == "http") {
        HttpSender sender(a.target);
        SendLoop(a, w, &sender, deadline, &sent_spans, &ok_batches, &err_batches, &throttled);
      } else {
        GrpcSender sender(a.target, w);
        SendLoop(a, w, &sender, deadline, &sent_spans, &ok_batches, &err_batches, &throttled);
      }
    });
  }
  for (auto& t : workers) t.join();
  const double secs = SecondsSince(t0);
  std::printf(
      "RESULT send spans=%llu batches=%llu errors=%llu throttled=%llu seconds=%.3f rate=%.0f "
      "target=%.0f\n",
      static_cast<unsigned long long>(sent_spans.load()),
      static_cast<unsigned long long>(ok_batches.load()),
      static_cast<unsigned long long>(err_batches.load()),
      static_cast<unsigned long long>(throttled.load()), secs,
      static_cast<double>(sent_spans.load()) / secs, a.rate);
  return err_batches.load() == 0 ? 0 : 1;
}

std::string Hex(const std::string& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

// Spaces would break the line format; names and scopes rarely have any.
std::string NoSpaces(std::string s) {
  std::replace(s.begin(), s.end(), ' ', '_');
  return s.empty() ? "-" : s;
}

// The p-th percentile (0 to 100, nearest rank) of sorted nanoseconds, in milliseconds.
double PctMs(const std::vector<std::int64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  auto i = static_cast<std::size_t>(p / 100.0 * static_cast<double>(sorted.size() - 1) + 0.5);
  return static_cast<double>(sorted[std::min(i, sorted.size() - 1)]) / 1e6;
}

// What the sink has received, whichever service counts it.
struct SinkCounts {
  std::atomic<std::uint64_t> spans{0};
  std::atomic<std::uint64_t> requests{0};
  void Add(std::uint64_t n) {
    spans.fetch_add(n, std::memory_order_relaxed);
    requests.fetch_add(1, std::memory_order_relaxed);
  }
  // One sample per export request that holds an llm_request span: how long after that span's
  // end (the sender stamps it with the wall clock when it sends) it reached the sink.
  void AddDelay(std::uint64_t end_unix_ns) {
    const std::uint64_t now = WallNs();
    std::lock_guard lock(mu);
    delays_ns.push_back(now > end_unix_ns ? static_cast<std::int64_t>(now - end_unix_ns) : 0);
  }
  // " delay_samples=N delay_p50_ms=… delay_p99_ms=… delay_max_ms=…" for the RESULT line.
  std::string DelaySummary() {
    std::lock_guard lock(mu);
    if (delays_ns.empty()) return " delay_samples=0";
    std::sort(delays_ns.begin(), delays_ns.end());
    char buf[160];
    std::snprintf(
        buf, sizeof buf, " delay_samples=%zu delay_p50_ms=%.1f delay_p99_ms=%.1f delay_max_ms=%.1f",
        delays_ns.size(), PctMs(delays_ns, 50), PctMs(delays_ns, 99), PctMs(delays_ns, 100));
    return buf;
  }
  std::mutex mu;
  std::vector<std::int64_t> delays_ns;
};

// Decodes every request and writes one line per span to `record` (the --record mode).
class RecordingService final : public TraceService::Service {
 public:
  RecordingService(std::FILE* record, SinkCounts* counts) : record_(record), counts_(counts) {}

  grpc::Status Export(grpc::ServerContext*, const TracesRequest* req,
                      ExportTraceServiceResponse*) override {
    // steady_clock is CLOCK_MONOTONIC here: the same clock the loadgen stamps responses with.
    const std::int64_t arrival =
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
            .count();
    counts_->Add(infertel::CountSpans(*req));
    std::string lines;
    for (const auto& rs : req->resource_spans()) {
      for (const auto& ss : rs.scope_spans()) {
        const std::string scope = NoSpaces(ss.scope().name());
        for (const auto& sp : ss.spans()) {
          lines += std::to_string(arrival);
          lines += ' ';
          lines += Hex(sp.trace_id());
          lines += ' ';
          lines += Hex(sp.span_id());
          lines += ' ';
          lines += sp.parent_span_id().empty() ? "-" : Hex(sp.parent_span_id());
          lines += ' ';
          lines += scope;
          lines += ' ';
          lines += std::to_string(static_cast<int>(sp.kind()));
          lines += ' ';
          lines += NoSpaces(sp.name());
          lines += '\n';
        }
      }
    }
    std::lock_guard lock(record_mu_);
    std::fwrite(lines.data(), 1, lines.size(), record_);
    return grpc::Status::OK;
  }

 private:
  std::FILE* record_;
  SinkCounts* counts_;
  std::mutex record_mu_;
};

// Counts the spans of an ExportTraceServiceRequest from its wire bytes without building any
// message: resource_spans (field 1) → scope_spans (2) → spans (2). Decoding every span costs
// the sink (on the sender's core) more than a normalizing agent spends on it, so a max-rate
// phase would measure the sink; counting tags keeps the agent the bottleneck.
// depth 0: the request, 1: a ResourceSpans, 2: a ScopeSpans (whose field 2 is a span).
// `end_ns`, when not null and still 0: set to the end time of the first span named
// llm_request (the only span whose bytes are read).
bool CountWireSpans(google::protobuf::io::CodedInputStream* in, int depth, std::uint64_t* n,
                    std::uint64_t* end_ns) {
  using google::protobuf::internal::WireFormatLite;
  const int wanted = depth == 0 ? 1 : 2;
  for (;;) {
    const std::uint32_t tag = in->ReadTag();
    if (tag == 0) return true;
    if (WireFormatLite::GetTagFieldNumber(tag) != wanted ||
        WireFormatLite::GetTagWireType(tag) != WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
      if (!WireFormatLite::SkipField(in, tag)) return false;
      continue;
    }
    std::uint32_t len = 0;
    if (!in->ReadVarint32(&len)) return false;
    if (depth == 2) {
      ++*n;
      if (end_ns != nullptr && *end_ns == 0) {
        std::string bytes;
        if (!in->ReadString(&bytes, static_cast<int>(len))) return false;
        Span span;
        if (span.ParseFromString(bytes) && span.name() == "llm_request")
          *end_ns = span.end_time_unix_nano();
        continue;
      }
      if (!in->Skip(static_cast<int>(len))) return false;
      continue;
    }
    auto limit = in->PushLimit(static_cast<int>(len));
    if (!CountWireSpans(in, depth + 1, n, end_ns) || !in->ConsumedEntireMessage()) return false;
    in->PopLimit(limit);
  }
}

class WireCountingService final
    : public TraceService::WithRawCallbackMethod_Export<TraceService::Service> {
 public:
  explicit WireCountingService(SinkCounts* counts) : counts_(counts) {}

  grpc::ServerUnaryReactor* Export(grpc::CallbackServerContext* context,
                                   const grpc::ByteBuffer* request,
                                   grpc::ByteBuffer* response) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    grpc::ByteBuffer view(*request);  // shares the slices
    grpc::ProtoBufferReader reader(&view);
    google::protobuf::io::CodedInputStream in(&reader);
    in.SetTotalBytesLimit(INT32_MAX);
    std::uint64_t n = 0, end_ns = 0;
    if (!reader.status().ok() || !CountWireSpans(&in, 0, &n, &end_ns)) {
      reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "undecodable request"));
      return reactor;
    }
    counts_->Add(n);
    if (end_ns != 0) counts_->AddDelay(end_ns);
    grpc::Slice empty("", 0);  // an empty ExportTraceServiceResponse: full success
    grpc::ByteBuffer out(&empty, 1);
    response->Swap(&out);
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

 private:
  SinkCounts* counts_;
};

// The OTLP/HTTP sink: POST /v1/traces (protobuf) on HTTP/1.1 keep-alive connections, counted
// from the wire tags as above and answered 200 with an empty ExportTraceServiceResponse.
// One thread runs every connection.
class HttpSink {
 public:
  explicit HttpSink(SinkCounts* counts) : counts_(counts) {}

  // Binds; returns the port, 0 on failure.
  unsigned short Listen(const std::string& hostport) {
    tcp::endpoint ep;
    boost::system::error_code ec;
    if (!ParseEndpoint(hostport, &ep)) return 0;
    acceptor_.open(ep.protocol(), ec);
    if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(ep, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return 0;
    Accept();
    thread_ = std::thread([this] { io_.run(); });
    return acceptor_.local_endpoint().port();
  }

  void Stop() {
    io_.stop();
    if (thread_.joinable()) thread_.join();
  }

 private:
  struct Conn : std::enable_shared_from_this<Conn> {
    Conn(tcp::socket s, SinkCounts* c) : socket(std::move(s)), counts(c) {}
    tcp::socket socket;
    SinkCounts* counts;
    beast::flat_buffer buffer;
    std::optional<bhttp::request_parser<bhttp::string_body>> parser;
    bhttp::response<bhttp::string_body> response;

    void Read() {
      parser.emplace();
      parser->body_limit(64u << 20);
      buffer.reserve(64 * 1024);  // Beast reads at most the buffer's free room at a time
      bhttp::async_read(socket, buffer, *parser,
                        [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
                          if (!ec) self->Answer();
                        });
    }

    void Answer() {
      const auto& req = parser->get();
      response = {};
      response.version(11);
      response.keep_alive(req.keep_alive());
      std::uint64_t n = 0;
      if (req.method() != bhttp::verb::post || req.target() != "/v1/traces") {
        response.result(bhttp::status::not_found);
      } else {
        const std::string& body = req.body();
        google::protobuf::io::CodedInputStream in(
            reinterpret_cast<const std::uint8_t*>(body.data()), static_cast<int>(body.size()));
        in.SetTotalBytesLimit(INT32_MAX);
        std::uint64_t end_ns = 0;
        if (CountWireSpans(&in, 0, &n, &end_ns)) {
          counts->Add(n);
          if (end_ns != 0) counts->AddDelay(end_ns);
          response.result(bhttp::status::ok);
          response.set(bhttp::field::content_type, "application/x-protobuf");
        } else {
          response.result(bhttp::status::bad_request);
        }
      }
      response.prepare_payload();
      bhttp::async_write(socket, response,
                         [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
                           if (!ec && self->response.keep_alive()) self->Read();
                         });
    }
  };

  void Accept() {
    acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket s) {
      if (ec) return;
      s.set_option(tcp::no_delay(true), ec);
      std::make_shared<Conn>(std::move(s), counts_)->Read();
      Accept();
    });
  }

  SinkCounts* counts_;
  asio::io_context io_{1};
  tcp::acceptor acceptor_{io_};
  std::thread thread_;
};

int RunSink(const Args& a) {
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  std::FILE* record = nullptr;
  if (!a.record.empty()) {
    record = std::fopen(a.record.c_str(), "w");
    if (record == nullptr) {
      std::fprintf(stderr, "sink: cannot write %s\n", a.record.c_str());
      return 1;
    }
  }
  // Recording needs each span's ids: decode. Counting alone reads the tags.
  SinkCounts counts;
  std::unique_ptr<grpc::Service> svc;
  if (record != nullptr)
    svc = std::make_unique<RecordingService>(record, &counts);
  else
    svc = std::make_unique<WireCountingService>(&counts);
  auto spans = [&] { return counts.spans.load(std::memory_order_relaxed); };
  std::unique_ptr<grpc::Server> server;
  HttpSink http_sink(&counts);
  int port = 0;
  if (a.transport == "http") {
    port = http_sink.Listen(a.listen);
  } else {
    grpc::ServerBuilder b;
    b.AddListeningPort(a.listen, grpc::InsecureServerCredentials(), &port);
    b.SetMaxReceiveMessageSize(64 << 20);
    b.RegisterService(svc.get());
    server = b.BuildAndStart();
    if (!server) port = 0;
  }
  if (port == 0) {
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
    std::uint64_t n = spans();
    double dt = std::chrono::duration<double>(now - last_t).count();
    std::printf("SINK t=%.3f spans=%llu rate=%.0f\n", SecondsSince(t0),
                static_cast<unsigned long long>(n), static_cast<double>(n - last_n) / dt);
    std::fflush(stdout);
    last_t = now;
    last_n = n;
  }
  if (server) {
    server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    server->Wait();
  }
  http_sink.Stop();
  if (record != nullptr) std::fclose(record);
  const double secs = SecondsSince(t0);
  std::printf("RESULT sink spans=%llu requests=%llu seconds=%.3f rate=%.0f%s\n",
              static_cast<unsigned long long>(spans()),
              static_cast<unsigned long long>(counts.requests.load()), secs,
              static_cast<double>(spans()) / secs, counts.DelaySummary().c_str());
  std::fflush(stdout);
  return 0;
}

// ---------------------------------------------------------------------------------------
// join: request end times against span arrival times.

struct RequestRow {
  std::string parent;  // the client's span id: the entry span's parent
  std::int64_t end_ns = 0;
  bool ok = false, stream = false;
};

// First arrival of one group's span in one trace, and how many such spans came.
struct Seen {
  std::int64_t first_ns = 0;
  int count = 0;
};

int RunJoin(const Args& a) {
  std::unordered_map<std::string, RequestRow> reqs;
  {
    std::ifstream f(a.requests);
    if (!f) {
      std::fprintf(stderr, "join: cannot read %s\n", a.requests.c_str());
      return 1;
    }
    std::string trace, parent;
    std::int64_t end = 0, lat = 0;
    int ok = 0, stream = 0;
    while (f >> trace >> parent >> end >> ok >> stream >> lat)
      reqs[trace] = RequestRow{parent, end, ok != 0, stream != 0};
  }
  // group -> trace -> first arrival
  std::map<std::string, std::unordered_map<std::string, Seen>> groups;
  std::uint64_t lines = 0, foreign = 0;
  {
    std::ifstream f(a.spans);
    if (!f) {
      std::fprintf(stderr, "join: cannot read %s\n", a.spans.c_str());
      return 1;
    }
    std::string line;
    while (std::getline(f, line)) {
      std::istringstream in(line);
      std::int64_t arrival = 0;
      std::string trace, span, parent, scope, name;
      int kind = 0;
      if (!(in >> arrival >> trace >> span >> parent >> scope >> kind >> name)) continue;
      ++lines;
      auto it = reqs.find(trace);
      if (it == reqs.end()) {
        ++foreign;  // warm-up, or not one of ours
        continue;
      }
      const std::string group = parent == it->second.parent ? "entry" : name;
      Seen& s = groups[group][trace];
      if (s.count == 0 || arrival < s.first_ns) s.first_ns = arrival;
      ++s.count;
    }
  }
  std::size_t ok_requests = 0, failed = 0, streams = 0;
  for (const auto& [trace, r] : reqs) {
    if (!r.ok) ++failed;
    if (r.ok) ++ok_requests;
    if (r.ok && r.stream) ++streams;
  }
  std::printf("join %s: %zu requests (%zu ok, %zu of them streams, %zu failed), %" PRIu64
              " spans read, %" PRIu64 " of other traces\n",
              a.label.c_str(), reqs.size(), ok_requests, streams, failed, lines, foreign);
  auto report = [&](const std::string& group, const std::unordered_map<std::string, Seen>& seen,
                    int want_stream) {  // want_stream: -1 all, 0 non-streaming, 1 streams
    std::vector<std::int64_t> lat;
    std::size_t missing = 0, dups = 0, n = 0;
    double sum = 0;
    for (const auto& [trace, r] : reqs) {
      if (!r.ok || (want_stream >= 0 && r.stream != (want_stream == 1))) continue;
      ++n;
      auto it = seen.find(trace);
      if (it == seen.end()) {
        ++missing;
        continue;
      }
      if (it->second.count > 1) ++dups;
      lat.push_back(it->second.first_ns - r.end_ns);
      sum += static_cast<double>(it->second.first_ns - r.end_ns);
    }
    if (n == 0) return;
    std::sort(lat.begin(), lat.end());
    const std::string name = want_stream < 0   ? group
                             : want_stream > 0 ? group + ".stream"
                                               : group + ".plain";
    const double mean = lat.empty() ? 0 : sum / static_cast<double>(lat.size()) / 1e6;
    std::printf(
        "RESULT join label=%s group=%s requests=%zu found=%zu missing=%zu dups=%zu "
        "min_ms=%.1f p50_ms=%.1f p90_ms=%.1f p99_ms=%.1f max_ms=%.1f mean_ms=%.1f\n",
        a.label.c_str(), name.c_str(), n, lat.size(), missing, dups,
        lat.empty() ? 0 : static_cast<double>(lat.front()) / 1e6, PctMs(lat, 50), PctMs(lat, 90),
        PctMs(lat, 99), PctMs(lat, 100), mean);
  };
  static const std::unordered_map<std::string, Seen> kNone;
  auto entry = groups.find("entry");
  report("entry", entry == groups.end() ? kNone : entry->second, -1);
  if (streams > 0 && streams < ok_requests) {
    report("entry", entry == groups.end() ? kNone : entry->second, 0);
    report("entry", entry == groups.end() ? kNone : entry->second, 1);
  }
  for (const auto& [group, seen] : groups)
    if (group != "entry") report(group, seen, -1);
  std::fflush(stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a = Parse(argc, argv);
  if (a.mode == "join") return RunJoin(a);
  return a.mode == "send" ? RunSend(a) : RunSink(a);
}
