// infertel-loadgen: the load generator of bench/run.sh, with its own minimal upstream.
//
// Modes (the first argument):
//   fixed   open loop: requests are scheduled at a fixed rate, independent of responses, and
//           each latency is measured from its scheduled send time, so a slow response delays
//           the measurement of the ones queued behind it instead of hiding them.
//   closed  closed loop: C connections each send the next request as soon as the previous
//           response is complete (maximum throughput).
//   stream  S concurrent SSE streams; the upstream stamps every event with its send time on
//           the monotonic clock and the client subtracts it from the receive time. With
//           --ramp the stream starts are spread over that many seconds; with --hold every
//           stream stays open until the window ends and is then cut by the client (for
//           memory under many open streams: bench/streams_memory.sh), and the open streams
//           are counted every 250 ms over the window.
//   serve   only the upstream, for --duration seconds (for external clients such as wrk).
//   freeport  prints a port that is free on 127.0.0.1 now.
//
// --rss-pids samples the VmRSS of other processes every 250 ms over the window (with
// --cpu-pids, their CPU time). fixed --record FILE sends every request with a `traceparent`
// of a fresh random trace id and writes, per request of the window, that trace id, its
// parent span id, the CLOCK_MONOTONIC time at which the whole response had arrived and
// whether it succeeded (for bench/span_visibility.sh, joined with the sink's arrival times);
// --stream-fraction makes that share of fixed-mode requests SSE streams (read to the end);
// --cooldown keeps the load going for that long after the window, unmeasured; --tenants N
// names one of N tenants per request, at random, in an `x-tenant-id` header (t0 … tN-1).
//
// With --serve HOST:PORT the process runs the upstream itself (same process, same clock):
// POST /v1/chat/completions answers at once with a fixed vLLM-shaped chat completion, or, when
// the body asks for "stream":true, with a vLLM-shaped SSE stream of --events chunks, one every
// --interval-ms, each carrying its send time in nanoseconds as its content; an
// "include_usage":true in the body adds vLLM's final usage chunk. Without --serve the target
// is any vLLM-compatible server (e.g. `infertel sim`).
//
// Everything runs on one thread (one io_context), so the client and the upstream share one
// core, identically in every configuration. Output: human lines, then one line
// "RESULT key=value ..." for scripts.

#include <boost/asio.hpp>
#include <boost/beast.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <sys/socket.h>
#include <unistd.h>

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using Clock = std::chrono::steady_clock;

std::int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}
Clock::time_point AtNs(std::int64_t ns) {
  return Clock::time_point(
      std::chrono::duration_cast<Clock::duration>(std::chrono::nanoseconds(ns)));
}

struct Options {
  std::string mode;
  std::string target;  // HOST:PORT the client sends to
  std::string serve;   // HOST:PORT of the in-process upstream; empty: none
  std::string model = "bench-model";
  std::string label = "run";
  double rate = 1000;          // fixed: requests per second
  double duration = 10;        // measured seconds
  double warmup = 1;           // seconds of the same load before measuring, discarded
  int connections = 64;        // fixed: pool size; closed: concurrency
  int streams = 32;            // stream: concurrent streams
  int events = 50;             // stream: content events per stream
  double interval_ms = 4;      // stream: time between two events of a stream
  int max_tokens = 16;         // non-streaming requests
  std::string cpu_pids;        // comma-separated pids whose CPU time is measured over the window
  std::string rss_pids;        // comma-separated pids whose VmRSS is sampled over the window
  double ramp = -1;            // stream: seconds over which starts are spread; < 0: one interval
  bool hold = false;           // stream: keep every stream open until the window ends, then cut it
  std::string record;          // fixed: per-request trace id and end time to this file
  double stream_fraction = 0;  // fixed: share of requests that are SSE streams
  double cooldown = 0;         // fixed: seconds of the same load after the window, not measured
  int tenants = 0;             // fixed: an x-tenant-id header naming one of this many, at random
};

bool SplitHostPort(const std::string& hp, std::string* host, std::string* port) {
  auto colon = hp.rfind(':');
  if (colon == std::string::npos) return false;
  *host = hp.substr(0, colon);
  *port = hp.substr(colon + 1);
  return !host->empty() && !port->empty();
}

// ---------------------------------------------------------------------------------------
// CPU time of other processes (/proc/PID/stat utime + stime), in seconds.

double ProcCpuSeconds(const std::string& pid) {
  std::ifstream f("/proc/" + pid + "/stat");
  std::string line;
  if (!std::getline(f, line)) return 0;
  auto rp = line.rfind(')');  // the command name may contain spaces
  if (rp == std::string::npos) return 0;
  std::istringstream in(line.substr(rp + 2));
  std::string field;
  double ut = 0, st = 0;
  // Fields after the name start at 3 (state); utime is 14, stime 15.
  for (int i = 3; i <= 15 && (in >> field); ++i) {
    if (i == 14) ut = std::stod(field);
    if (i == 15) st = std::stod(field);
  }
  return (ut + st) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double PidsCpuSeconds(const std::string& pids) {
  double total = 0;
  std::stringstream ss(pids);
  std::string pid;
  while (std::getline(ss, pid, ','))
    if (!pid.empty()) total += ProcCpuSeconds(pid);
  return total;
}

// A "Vm...:" line of /proc/PID/status in KiB (VmRSS: resident now, VmHWM: peak resident).
std::int64_t ProcStatusKib(const std::string& pid, std::string_view key) {
  std::ifstream f("/proc/" + pid + "/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.size() > key.size() && line.compare(0, key.size(), key) == 0 &&
        line[key.size()] == ':')
      return std::strtoll(line.c_str() + key.size() + 1, nullptr, 10);
  }
  return 0;
}

std::int64_t PidsStatusKib(const std::string& pids, std::string_view key) {
  std::int64_t total = 0;
  std::stringstream ss(pids);
  std::string pid;
  while (std::getline(ss, pid, ','))
    if (!pid.empty()) total += ProcStatusKib(pid, key);
  return total;
}

// ---------------------------------------------------------------------------------------
// Bodies.

constexpr std::int64_t kCreated = 1764500000;

std::string ChatRequestBody(const Options& o, bool stream) {
  std::string b = "{\"model\":\"" + o.model +
                  "\",\"messages\":[{\"role\":\"system\",\"content\":\"You are a helpful "
                  "assistant. Answer briefly.\"},{\"role\":\"user\",\"content\":\"Summarise the "
                  "benefits of continuous batching for LLM inference servers in two sentences.\"}],"
                  "\"temperature\":0.7,\"top_p\":0.95,\"max_tokens\":" +
                  std::to_string(stream ? o.events : o.max_tokens);
  if (stream) b += ",\"stream\":true";
  b += "}";
  return b;
}

// `extra` holds whole header lines, each ending in \r\n.
std::string RawPost(const std::string& host, const std::string& body,
                    const std::string& extra = {}) {
  return "POST /v1/chat/completions HTTP/1.1\r\nHost: " + host +
         "\r\nContent-Type: application/json\r\nAccept: */*\r\nUser-Agent: infertel-loadgen\r\n" +
         extra + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// One request of a --record run: the trace it started and when its response was complete.
struct Traced {
  std::uint64_t trace_hi = 0, trace_lo = 0, span = 0;
  std::int64_t due_ns = 0, end_ns = 0;
  bool ok = false, stream = false;
};

std::string Hex64(std::uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016" PRIx64, v);
  return b;
}

std::string FixedCompletion(const std::string& model, int tokens) {
  std::string text;
  for (int i = 0; i < tokens; ++i) text += i == 0 ? "Batching" : " word";
  std::string body =
      "{\"id\":\"chatcmpl-bench0123456789abcdef\",\"object\":\"chat.completion\",\"created\":" +
      std::to_string(kCreated) + ",\"model\":\"" + model +
      "\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"reasoning_content\":null,"
      "\"content\":\"" +
      text +
      "\",\"tool_calls\":[]},\"logprobs\":null,\"finish_reason\":\"length\",\"stop_reason\":null}],"
      "\"usage\":{\"prompt_tokens\":42,\"total_tokens\":" +
      std::to_string(42 + tokens) + ",\"completion_tokens\":" + std::to_string(tokens) +
      ",\"prompt_tokens_details\":null},\"prompt_logprobs\":null,\"kv_transfer_params\":null}";
  return "HTTP/1.1 200 OK\r\ndate: Mon, 30 Nov 2026 10:00:00 GMT\r\nserver: uvicorn\r\n"
         "content-length: " +
         std::to_string(body.size()) + "\r\ncontent-type: application/json\r\n\r\n" + body;
}

void AppendChunk(std::string* out, const std::string& payload) {
  char hex[32];
  std::snprintf(hex, sizeof hex, "%zx\r\n", payload.size());
  *out += hex;
  *out += payload;
  *out += "\r\n";
}

// ---------------------------------------------------------------------------------------
// The upstream.

class Upstream {
 public:
  Upstream(asio::io_context& io, const Options& o)
      : io_(io), opts_(o), fixed_(FixedCompletion(o.model, o.max_tokens)) {}

  bool Listen(const std::string& hp, std::string* error) {
    std::string host, port;
    if (!SplitHostPort(hp, &host, &port)) {
      *error = "--serve: expected HOST:PORT";
      return false;
    }
    error_code ec;
    tcp::endpoint ep(asio::ip::make_address(host, ec),
                     static_cast<unsigned short>(std::stoi(port)));
    if (ec) {
      *error = "--serve: bad host";
      return false;
    }
    acceptor_ = std::make_unique<tcp::acceptor>(io_);
    acceptor_->open(ep.protocol(), ec);
    if (!ec) acceptor_->set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_->bind(ep, ec);
    if (!ec) acceptor_->listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      *error = "--serve " + hp + ": " + ec.message();
      return false;
    }
    port_ = acceptor_->local_endpoint().port();
    asio::co_spawn(io_, Accept(), asio::detached);
    return true;
  }
  unsigned short port() const { return port_; }
  void Close() {
    error_code ec;
    if (acceptor_) acceptor_->close(ec);
  }

 private:
  asio::awaitable<void> Accept() {
    for (;;) {
      error_code ec;
      tcp::socket s =
          co_await acceptor_->async_accept(asio::redirect_error(asio::use_awaitable, ec));
      if (ec) {
        if (!acceptor_->is_open()) co_return;
        continue;
      }
      s.set_option(tcp::no_delay(true), ec);
      asio::co_spawn(io_, Serve(std::move(s)), asio::detached);
    }
  }

  asio::awaitable<void> Serve(tcp::socket s) {
    beast::flat_buffer buf;
    error_code ec;
    for (;;) {
      bhttp::request_parser<bhttp::string_body> p;
      p.body_limit(1 << 20);
      co_await bhttp::async_read(s, buf, p, asio::redirect_error(asio::use_awaitable, ec));
      if (ec) break;
      const std::string& body = p.get().body();
      bool stream = body.find("\"stream\":true") != std::string::npos ||
                    body.find("\"stream\": true") != std::string::npos;
      if (!stream) {
        co_await asio::async_write(s, asio::buffer(fixed_),
                                   asio::redirect_error(asio::use_awaitable, ec));
        if (ec) break;
        continue;
      }
      bool usage = body.find("\"include_usage\":true") != std::string::npos ||
                   body.find("\"include_usage\": true") != std::string::npos;
      if (!co_await Stream(s, usage)) break;
    }
    s.shutdown(tcp::socket::shutdown_both, ec);
    s.close(ec);
  }

  // One vLLM-shaped chat stream; false when the client went away.
  asio::awaitable<bool> Stream(tcp::socket& s, bool usage) {
    error_code ec;
    static const std::string kHeader =
        "HTTP/1.1 200 OK\r\ndate: Mon, 30 Nov 2026 10:00:00 GMT\r\nserver: uvicorn\r\n"
        "content-type: text/event-stream; charset=utf-8\r\ntransfer-encoding: chunked\r\n\r\n";
    co_await asio::async_write(s, asio::buffer(kHeader),
                               asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return false;
    const std::string prefix =
        "data: {\"id\":\"chatcmpl-bench0123456789abcdef\",\"object\":"
        "\"chat.completion.chunk\",\"created\":" +
        std::to_string(kCreated) + ",\"model\":\"" + opts_.model +
        "\",\"choices\":[{\"index\":0,\"delta\":{";
    asio::steady_timer timer(io_);
    const std::int64_t start = NowNs();
    const auto step = static_cast<std::int64_t>(opts_.interval_ms * 1e6);
    std::string chunk, payload;
    for (int k = 0; k < opts_.events; ++k) {
      timer.expires_at(AtNs(start + k * step));
      co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      payload = prefix;
      if (k == 0) payload += "\"role\":\"assistant\",";
      payload += "\"content\":\"";
      payload += std::to_string(NowNs());  // the send time, taken last
      payload += " \"},\"logprobs\":null,\"finish_reason\":";
      payload += k + 1 == opts_.events ? "\"length\",\"stop_reason\":null}]}\n\n" : "null}]}\n\n";
      chunk.clear();
      AppendChunk(&chunk, payload);
      co_await asio::async_write(s, asio::buffer(chunk),
                                 asio::redirect_error(asio::use_awaitable, ec));
      if (ec) co_return false;
    }
    chunk.clear();
    if (usage) {
      AppendChunk(&chunk,
                  "data: {\"id\":\"chatcmpl-bench0123456789abcdef\",\"object\":"
                  "\"chat.completion.chunk\",\"created\":" +
                      std::to_string(kCreated) + ",\"model\":\"" + opts_.model +
                      "\",\"choices\":[],\"usage\":{\"prompt_tokens\":42,\"total_tokens\":" +
                      std::to_string(42 + opts_.events) +
                      ",\"completion_tokens\":" + std::to_string(opts_.events) + "}}\n\n");
    }
    AppendChunk(&chunk, "data: [DONE]\n\n");
    chunk += "0\r\n\r\n";
    co_await asio::async_write(s, asio::buffer(chunk),
                               asio::redirect_error(asio::use_awaitable, ec));
    co_return !ec;
  }

  asio::io_context& io_;
  const Options& opts_;
  std::string fixed_;
  std::unique_ptr<tcp::acceptor> acceptor_;
  unsigned short port_ = 0;
};

// ---------------------------------------------------------------------------------------
// Results.

struct Results {
  std::vector<std::int64_t> lat_ns;  // measured samples
  // stream: the same samples split into each stream's first event and the others, because
  // a first event also carries the cost of the request and of the response's header.
  std::vector<std::int64_t> first_lat_ns, later_lat_ns;
  std::int64_t ok = 0, errors = 0, late_drops = 0;
  std::int64_t events = 0;  // stream: events received in the window
  // Requests answered in full with a 200, at any time (warm-up and cool-down included): each
  // is an exchange the proxy saw end, so an agent owes one entry span for each.
  std::int64_t answered = 0;
  std::int64_t meas_start = 0, meas_end = 0;
  double cpu_start = 0, cpu_end = 0, self_start = 0, self_end = 0;
  // stream --hold: streams open (header received, not ended) sampled over the window,
  // streams ever opened, failed connects (errors then counts every failure, at any time).
  std::int64_t open_min = -1, open_max = 0, opened = 0, connect_errors = 0;
  std::vector<std::int64_t> rss_kib;  // --rss-pids: summed VmRSS samples over the window
  std::int64_t hwm_kib = 0;           // --rss-pids: summed VmHWM at the end of the window
  std::vector<Traced> traced;         // fixed --record: the requests of the window
};

double Pct(std::vector<std::int64_t>& v, double p) {
  if (v.empty()) return 0;
  std::size_t i = static_cast<std::size_t>(p / 100.0 * static_cast<double>(v.size() - 1) + 0.5);
  return static_cast<double>(v[std::min(i, v.size() - 1)]) / 1000.0;
}

void Report(const Options& o, Results& r, double achieved_seconds) {
  std::sort(r.lat_ns.begin(), r.lat_ns.end());
  std::sort(r.first_lat_ns.begin(), r.first_lat_ns.end());
  std::sort(r.later_lat_ns.begin(), r.later_lat_ns.end());
  double secs = achieved_seconds > 0 ? achieved_seconds : o.duration;
  double count = o.mode == "stream" ? static_cast<double>(r.events) : static_cast<double>(r.ok);
  double proxy_cpu = r.cpu_end - r.cpu_start;
  double self_cpu = r.self_end - r.self_start;
  double mean = 0;
  for (auto x : r.lat_ns) mean += static_cast<double>(x);
  if (!r.lat_ns.empty()) mean /= static_cast<double>(r.lat_ns.size()) * 1000.0;
  std::printf("%s %s: %.0f %s in %.2f s (%.1f/s), errors %" PRId64
              ", latency us p50 %.1f p90 %.1f "
              "p99 %.1f p99.9 %.1f max %.1f mean %.1f; proxy cpu %.2f s, loadgen cpu %.2f s\n",
              o.label.c_str(), o.mode.c_str(), count, o.mode == "stream" ? "events" : "responses",
              secs, count / secs, r.errors, Pct(r.lat_ns, 50), Pct(r.lat_ns, 90), Pct(r.lat_ns, 99),
              Pct(r.lat_ns, 99.9), Pct(r.lat_ns, 100), mean, proxy_cpu, self_cpu);
  std::int64_t rss_max = 0;
  double rss_mean = 0;
  for (auto k : r.rss_kib) {
    rss_max = std::max(rss_max, k);
    rss_mean += static_cast<double>(k);
  }
  if (!r.rss_kib.empty()) rss_mean /= static_cast<double>(r.rss_kib.size());
  std::printf("RESULT label=%s mode=%s count=%.0f seconds=%.3f per_s=%.1f errors=%" PRId64
              " samples=%zu p50_us=%.1f p90_us=%.1f p99_us=%.1f p999_us=%.1f max_us=%.1f "
              "mean_us=%.1f proxy_cpu_s=%.3f proxy_cpu_us_per_item=%.2f loadgen_cpu_s=%.3f "
              "answered=%" PRId64,
              o.label.c_str(), o.mode.c_str(), count, secs, count / secs, r.errors, r.lat_ns.size(),
              Pct(r.lat_ns, 50), Pct(r.lat_ns, 90), Pct(r.lat_ns, 99), Pct(r.lat_ns, 99.9),
              Pct(r.lat_ns, 100), mean, proxy_cpu, count > 0 ? proxy_cpu * 1e6 / count : 0.0,
              self_cpu, r.answered);
  if (o.mode == "stream") {
    std::printf(
        " first_samples=%zu first_p50_us=%.1f first_p99_us=%.1f later_p50_us=%.1f "
        "later_p99_us=%.1f later_p999_us=%.1f",
        r.first_lat_ns.size(), Pct(r.first_lat_ns, 50), Pct(r.first_lat_ns, 99),
        Pct(r.later_lat_ns, 50), Pct(r.later_lat_ns, 99), Pct(r.later_lat_ns, 99.9));
  }
  if (o.hold) {
    std::printf(" open_min=%" PRId64 " open_max=%" PRId64 " opened=%" PRId64
                " connect_errors=%" PRId64,
                std::max<std::int64_t>(r.open_min, 0), r.open_max, r.opened, r.connect_errors);
  }
  if (!o.rss_pids.empty()) {
    std::printf(" rss_mean_kib=%.0f rss_max_kib=%" PRId64 " hwm_kib=%" PRId64, rss_mean, rss_max,
                r.hwm_kib);
  }
  std::printf("\n");
  std::fflush(stdout);
}

// ---------------------------------------------------------------------------------------
// Clients.

class Client {
 public:
  Client(asio::io_context& io, const Options& o, tcp::endpoint target, const std::string& host)
      : io_(io), opts_(o), target_(target), host_(host), rng_(std::random_device{}()) {
    body_ = ChatRequestBody(o, false);
    stream_body_ = ChatRequestBody(o, true);
    post_ = RawPost(host, body_);
    stream_post_ = RawPost(host, stream_body_);
  }

  // Runs the mode to completion (the caller runs io).
  void Start() {
    const std::int64_t now = NowNs();
    r_.meas_start = now + static_cast<std::int64_t>(opts_.warmup * 1e9);
    r_.meas_end = r_.meas_start + static_cast<std::int64_t>(opts_.duration * 1e9);
    asio::co_spawn(io_, Sampler(), asio::detached);
    if (opts_.mode == "fixed") {
      for (int i = 0; i < opts_.connections; ++i)
        asio::co_spawn(io_, FixedWorker(std::make_unique<asio::steady_timer>(io_)), asio::detached);
      asio::co_spawn(io_, Scheduler(now), asio::detached);
    } else if (opts_.mode == "closed") {
      for (int i = 0; i < opts_.connections; ++i)
        asio::co_spawn(io_, ClosedWorker(), asio::detached);
    } else {
      const double spread_ns = opts_.ramp >= 0 ? opts_.ramp * 1e9 : opts_.interval_ms * 1e6;
      for (int i = 0; i < opts_.streams; ++i) {
        auto offset = static_cast<std::int64_t>(spread_ns * i / opts_.streams);
        asio::co_spawn(io_, StreamWorker(now + offset), asio::detached);
      }
      if (opts_.hold) asio::co_spawn(io_, Progress(now), asio::detached);
    }
    active_ = opts_.mode == "fixed"    ? opts_.connections
              : opts_.mode == "closed" ? opts_.connections
                                       : opts_.streams;
  }
  // Called when every worker has finished.
  std::function<void()> on_done;
  Results& results() { return r_; }

 private:
  asio::awaitable<void> Sampler() {
    asio::steady_timer t(io_);
    t.expires_at(AtNs(r_.meas_start));
    error_code ec;
    co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    r_.cpu_start = PidsCpuSeconds(opts_.cpu_pids);
    r_.self_start = ProcCpuSeconds("self");
    // Every 250 ms over the window: the open streams and the resident memory of --rss-pids.
    constexpr std::int64_t kStep = 250'000'000;
    for (std::int64_t next = r_.meas_start; next < r_.meas_end; next += kStep) {
      t.expires_at(AtNs(next));
      co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      if (sampled_end_) break;
      if (opts_.hold) {
        r_.open_min = r_.open_min < 0 ? open_ : std::min(r_.open_min, open_);
        r_.open_max = std::max(r_.open_max, open_);
      }
      if (!opts_.rss_pids.empty()) r_.rss_kib.push_back(PidsStatusKib(opts_.rss_pids, "VmRSS"));
    }
    t.expires_at(AtNs(r_.meas_end));
    co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    SampleEnd();
  }
  void SampleEnd() {
    if (sampled_end_) return;
    sampled_end_ = true;
    r_.cpu_end = PidsCpuSeconds(opts_.cpu_pids);
    r_.self_end = ProcCpuSeconds("self");
    if (!opts_.rss_pids.empty()) r_.hwm_kib = PidsStatusKib(opts_.rss_pids, "VmHWM");
  }

  // --hold: one line a second until the window ends, so a slow ramp-up is visible.
  asio::awaitable<void> Progress(std::int64_t t0) {
    asio::steady_timer t(io_);
    error_code ec;
    for (std::int64_t next = t0 + 1'000'000'000; next <= r_.meas_end; next += 1'000'000'000) {
      t.expires_at(AtNs(next));
      co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      std::printf("progress t=%.1f open=%" PRId64 " opened=%" PRId64 " errors=%" PRId64
                  " connect_errors=%" PRId64 "\n",
                  static_cast<double>(next - t0) / 1e9, open_, r_.opened, r_.errors,
                  r_.connect_errors);
      std::fflush(stdout);
    }
  }

  void WorkerDone() {
    if (--active_ > 0) return;
    SampleEnd();  // the window is over (the sampler may not have woken yet)
    if (on_done) on_done();
  }

  asio::awaitable<bool> Connect(beast::tcp_stream& s) {
    error_code ec;
    s.expires_after(std::chrono::seconds(5));
    co_await s.async_connect(target_, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return false;
    s.socket().set_option(tcp::no_delay(true), ec);
    co_return true;
  }

  // One request/response on a kept-alive connection; false on any failure (reconnect). A
  // stream's whole body is read: the response is complete when its last chunk has arrived.
  asio::awaitable<bool> Exchange(beast::tcp_stream& s, beast::flat_buffer& buf,
                                 const std::string& request) {
    error_code ec;
    s.expires_after(std::chrono::seconds(10));
    co_await asio::async_write(s, asio::buffer(request),
                               asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return false;
    bhttp::response_parser<bhttp::string_body> p;
    p.body_limit(1 << 20);
    co_await bhttp::async_read(s, buf, p, asio::redirect_error(asio::use_awaitable, ec));
    if (ec || p.get().result_int() != 200 || p.get().body().empty()) co_return false;
    co_return p.get().keep_alive();
  }

  void Record(std::int64_t start, std::int64_t end, bool ok) {
    if (ok) ++r_.answered;
    if (start < r_.meas_start || start >= r_.meas_end) return;
    if (!ok) {
      ++r_.errors;
      return;
    }
    ++r_.ok;
    r_.lat_ns.push_back(end - start);
  }

  // Open loop: request i is due at t0 + i/rate, whether or not earlier ones have answered.
  asio::awaitable<void> Scheduler(std::int64_t t0) {
    asio::steady_timer t(io_);
    const double period = 1e9 / opts_.rate;
    error_code ec;
    for (std::int64_t i = 0;; ++i) {
      std::int64_t due = t0 + static_cast<std::int64_t>(static_cast<double>(i) * period);
      if (due >= r_.meas_end + static_cast<std::int64_t>(opts_.cooldown * 1e9)) break;
      t.expires_at(AtNs(due));
      co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      if (pending_.size() >= 100000) {  // bounded: far beyond any sane backlog
        if (due >= r_.meas_start) ++r_.late_drops, ++r_.errors;
        continue;
      }
      pending_.push_back(due);
      if (!idle_.empty()) {
        auto* w = idle_.back();
        idle_.pop_back();
        w->cancel();
      }
    }
    scheduling_done_ = true;
    for (auto* w : idle_) w->cancel();
    idle_.clear();
  }

  // True when the server closed the connection while it waited for work (a keep-alive
  // connection idle past the server's timeout: the gateway's and nginx's are 75 s). A request
  // written on it would be lost in the race between the server's FIN and the write, which a
  // pooling client (undici, the openai npm client's) avoids by dropping idle connections the
  // server closed; without this check the fixed-rate loop counted such requests as errors.
  static bool PeerClosed(beast::tcp_stream& s) {
    char c;
    const ssize_t n = ::recv(s.socket().native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
  }

  asio::awaitable<void> FixedWorker(std::unique_ptr<asio::steady_timer> wake) {
    beast::tcp_stream s(io_);
    beast::flat_buffer buf;
    bool connected = false;
    bool rested = false;  // waited for work since the connection's last answer
    error_code ec;
    for (;;) {
      if (pending_.empty()) {
        if (scheduling_done_) break;
        idle_.push_back(wake.get());
        wake->expires_at(Clock::time_point::max());
        co_await wake->async_wait(asio::redirect_error(asio::use_awaitable, ec));
        rested = true;
        continue;
      }
      std::int64_t due = pending_.front();
      pending_.pop_front();
      if (connected && rested && PeerClosed(s)) {
        s.close();
        buf.clear();
        connected = false;
      }
      rested = false;
      if (!connected) connected = co_await Connect(s);
      Traced tr;
      tr.stream = opts_.stream_fraction > 0 && unit_(rng_) < opts_.stream_fraction;
      const std::string* request = tr.stream ? &stream_post_ : &post_;
      std::string traced, extra;
      if (!opts_.record.empty()) {
        tr.trace_hi = rng_();
        tr.trace_lo = rng_();
        tr.span = rng_() | 1;  // never the invalid all-zero id
        extra = "traceparent: 00-" + Hex64(tr.trace_hi) + Hex64(tr.trace_lo) + "-" +
                Hex64(tr.span) + "-01\r\n";
      }
      if (opts_.tenants > 0)
        extra += "x-tenant-id: t" + std::to_string(rng_() % static_cast<unsigned>(opts_.tenants)) +
                 "\r\n";
      if (!extra.empty()) {
        traced = RawPost(host_, tr.stream ? stream_body_ : body_, extra);
        request = &traced;
      }
      bool ok = connected && co_await Exchange(s, buf, *request);
      const std::int64_t end = NowNs();
      Record(due, end, ok);
      if (!opts_.record.empty() && due >= r_.meas_start && due < r_.meas_end) {
        tr.due_ns = due;
        tr.end_ns = end;
        tr.ok = ok;
        r_.traced.push_back(tr);
      }
      if (!ok) {
        s.close();
        buf.clear();
        connected = false;
      }
    }
    WorkerDone();
  }

  asio::awaitable<void> ClosedWorker() {
    beast::tcp_stream s(io_);
    beast::flat_buffer buf;
    bool connected = false;
    error_code ec;
    while (NowNs() < r_.meas_end) {
      if (!connected) connected = co_await Connect(s);
      std::int64_t start = NowNs();
      bool ok = connected && co_await Exchange(s, buf, post_);
      Record(start, NowNs(), ok);
      if (!ok) {
        s.close();
        buf.clear();
        connected = false;
      }
    }
    WorkerDone();
  }

  // Finds complete SSE events in *acc and records each stamped one against `recv`.
  // *index counts the stream's events so far (0: the next one is the first).
  void ScanEvents(std::string* acc, std::int64_t recv, std::int64_t* index) {
    std::size_t pos = 0;
    for (;;) {
      auto end = acc->find("\n\n", pos);
      if (end == std::string::npos) break;
      std::string_view ev(acc->data() + pos, end - pos);
      static constexpr std::string_view kKey = "\"content\":\"";
      auto k = ev.find(kKey);
      if (k != std::string_view::npos) {
        std::int64_t stamp = 0;
        for (std::size_t i = k + kKey.size(); i < ev.size() && ev[i] >= '0' && ev[i] <= '9'; ++i)
          stamp = stamp * 10 + (ev[i] - '0');
        if (stamp >= r_.meas_start && stamp < r_.meas_end) {
          ++r_.events;
          r_.lat_ns.push_back(recv - stamp);
          (*index == 0 ? r_.first_lat_ns : r_.later_lat_ns).push_back(recv - stamp);
        }
        ++*index;
      }
      pos = end + 2;
    }
    acc->erase(0, pos);
  }

  asio::awaitable<void> StreamWorker(std::int64_t first) {
    asio::steady_timer t(io_);
    error_code ec;
    t.expires_at(AtNs(first));
    co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    beast::tcp_stream s(io_);
    beast::flat_buffer buf;
    bool connected = false;
    std::array<char, 16384> body;
    std::string acc;
    while (NowNs() < r_.meas_end) {
      if (!connected) {
        connected = co_await Connect(s);
        if (!connected) ++r_.connect_errors;
      }
      bool ok = connected;
      std::int64_t start = NowNs();
      if (ok) {
        s.expires_after(std::chrono::seconds(30));
        co_await asio::async_write(s, asio::buffer(stream_post_),
                                   asio::redirect_error(asio::use_awaitable, ec));
        ok = !ec;
      }
      bhttp::response_parser<bhttp::buffer_body> p;
      p.body_limit((std::numeric_limits<std::uint64_t>::max)());
      if (ok) {
        co_await bhttp::async_read_header(s, buf, p, asio::redirect_error(asio::use_awaitable, ec));
        ok = !ec && p.get().result_int() == 200;
      }
      const bool opened = ok;
      if (opened) ++open_, ++r_.opened;
      bool cut = false;  // --hold: the window ended while the stream was open
      acc.clear();
      std::int64_t index = 0;
      while (ok && !p.is_done()) {
        p.get().body().data = body.data();
        p.get().body().size = body.size();
        // A held stream lives longer than any fixed deadline: each read gets its own.
        if (opts_.hold) s.expires_after(std::chrono::seconds(30));
        co_await bhttp::async_read_some(s, buf, p, asio::redirect_error(asio::use_awaitable, ec));
        std::int64_t recv = NowNs();
        if (ec == bhttp::error::need_buffer) ec = {};
        if (ec) {
          ok = false;
          break;
        }
        std::size_t n = body.size() - p.get().body().size;
        acc.append(body.data(), n);
        ScanEvents(&acc, recv, &index);
        if (opts_.hold && recv >= r_.meas_end) {
          cut = true;
          break;
        }
      }
      if (opened) --open_;
      if (ok && !cut) ++r_.answered;
      if (opts_.hold) {
        if (!ok) ++r_.errors;  // every failure counts: all streams should stay open throughout
      } else if (start >= r_.meas_start && start < r_.meas_end) {
        ok ? ++r_.ok : ++r_.errors;
      }
      if (!ok || cut || !p.keep_alive()) {
        s.close();
        buf.clear();
        connected = false;
      }
      if (opts_.hold && !ok) {  // no tight reconnect loop against a refusing target
        t.expires_after(std::chrono::milliseconds(100));
        co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      }
    }
    if (opts_.hold) ++r_.ok;
    WorkerDone();
  }

  asio::io_context& io_;
  const Options& opts_;
  tcp::endpoint target_;
  std::string host_;
  std::string body_, stream_body_, post_, stream_post_;
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> unit_{0.0, 1.0};
  std::int64_t open_ = 0;  // streams between their header and their end
  Results r_;
  std::deque<std::int64_t> pending_;
  std::vector<asio::steady_timer*> idle_;
  bool scheduling_done_ = false;
  bool sampled_end_ = false;
  int active_ = 0;
};

int Main(int argc, char** argv) {
  Options o;
  CLI::App app{"infertel-loadgen: load for the gateway benchmarks"};
  app.require_subcommand(1);
  auto add_common = [&](CLI::App* sub, bool client) {
    sub->add_option("--serve", o.serve, "Run the upstream in this process on HOST:PORT");
    sub->add_option("--model", o.model, "Model name in requests and responses");
    sub->add_option("--max-tokens", o.max_tokens, "Completion tokens of non-streaming responses");
    sub->add_option("--events", o.events, "Content events per stream");
    sub->add_option("--interval-ms", o.interval_ms, "Time between two events of a stream");
    if (!client) return;
    sub->add_option("--target", o.target, "HOST:PORT to send to")->required();
    sub->add_option("--duration", o.duration, "Measured seconds");
    sub->add_option("--warmup", o.warmup, "Discarded seconds before measuring");
    sub->add_option("--label", o.label, "Name of this run in the output");
    sub->add_option("--cpu-pids", o.cpu_pids, "Comma-separated pids whose CPU time is measured");
    sub->add_option("--rss-pids", o.rss_pids,
                    "Comma-separated pids whose VmRSS is sampled over the window (summed)");
  };
  auto* fixed = app.add_subcommand("fixed", "Open loop at a fixed rate");
  add_common(fixed, true);
  fixed->add_option("--rate", o.rate, "Requests per second");
  fixed->add_option("--connections", o.connections, "Keep-alive connection pool size");
  fixed->add_option("--record", o.record,
                    "Send a traceparent per request; write trace id and end time per request");
  fixed->add_option("--stream-fraction", o.stream_fraction, "Share of requests that are streams")
      ->check(CLI::Range(0.0, 1.0));
  fixed
      ->add_option("--tenants", o.tenants,
                   "An x-tenant-id header per request naming one of this many tenants, at random")
      ->check(CLI::Range(0, 1000000));
  fixed->add_option("--cooldown", o.cooldown,
                    "Seconds of the same load after the window, not measured (so what the "
                    "window's requests leave behind is still pushed along by later traffic)");
  auto* closed = app.add_subcommand("closed", "Closed loop, maximum throughput");
  add_common(closed, true);
  closed->add_option("--connections", o.connections, "Concurrent connections");
  auto* stream = app.add_subcommand("stream", "Concurrent SSE streams, per-event latency");
  add_common(stream, true);
  stream->add_option("--streams", o.streams, "Concurrent streams");
  stream->add_option("--ramp", o.ramp, "Seconds over which stream starts are spread");
  stream->add_flag("--hold", o.hold, "Keep every stream open until the window ends");
  auto* serve = app.add_subcommand("serve", "Only the upstream");
  add_common(serve, false);
  serve->add_option("--duration", o.duration, "Seconds to serve");
  app.add_subcommand("freeport", "Print a free port on 127.0.0.1");
  CLI11_PARSE(app, argc, argv);
  o.mode = app.get_subcommands().front()->get_name();

  asio::io_context io{1};
  if (o.mode == "freeport") {
    tcp::acceptor a(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    std::printf("%u\n", a.local_endpoint().port());
    return 0;
  }
  Upstream upstream(io, o);
  if (!o.serve.empty()) {
    std::string error;
    if (!upstream.Listen(o.serve, &error)) {
      std::fprintf(stderr, "infertel-loadgen: %s\n", error.c_str());
      return 1;
    }
    std::printf("infertel-loadgen: upstream listening on http://127.0.0.1:%u\n", upstream.port());
    std::fflush(stdout);
  }
  if (o.mode == "serve") {
    asio::steady_timer t(io,
                         std::chrono::milliseconds(static_cast<std::int64_t>(o.duration * 1000)));
    t.async_wait([&](error_code) { io.stop(); });
    io.run();
    return 0;
  }
  std::string host, port;
  if (!SplitHostPort(o.target, &host, &port)) {
    std::fprintf(stderr, "infertel-loadgen: --target: expected HOST:PORT\n");
    return 2;
  }
  error_code ec;
  tcp::endpoint target(asio::ip::make_address(host, ec),
                       static_cast<unsigned short>(std::stoi(port)));
  if (ec) {
    std::fprintf(stderr, "infertel-loadgen: --target: bad host\n");
    return 2;
  }
  Client client(io, o, target, o.target);
  client.on_done = [&] { io.stop(); };
  // A hard bound on the whole run, whatever the target does.
  asio::steady_timer guard(io, std::chrono::milliseconds(static_cast<std::int64_t>(
                                   (o.warmup + o.duration + o.cooldown + 30) * 1000)));
  guard.async_wait([&](error_code e) {
    if (!e) {
      std::fprintf(stderr, "infertel-loadgen: run did not finish in time\n");
      io.stop();
    }
  });
  client.Start();
  io.run();
  Report(o, client.results(), o.duration);
  if (!o.record.empty()) {
    // trace id, parent span id (ours), CLOCK_MONOTONIC ns of the complete response, ok,
    // stream, latency from the scheduled send time in ns.
    std::FILE* f = std::fopen(o.record.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "infertel-loadgen: cannot write %s\n", o.record.c_str());
      return 1;
    }
    for (const Traced& t : client.results().traced) {
      std::fprintf(f, "%s%s %s %" PRId64 " %d %d %" PRId64 "\n", Hex64(t.trace_hi).c_str(),
                   Hex64(t.trace_lo).c_str(), Hex64(t.span).c_str(), t.end_ns, t.ok ? 1 : 0,
                   t.stream ? 1 : 0, t.end_ns - t.due_ns);
    }
    std::fclose(f);
  }
  return client.results().ok > 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) { return Main(argc, argv); }
