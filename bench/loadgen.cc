// infertel-loadgen: the load generator of bench/run.sh, with its own minimal upstream.
//
// Modes (the first argument):
//   fixed   open loop: requests are scheduled at a fixed rate, independent of responses, and
//           each latency is measured from its scheduled send time, so a slow response delays
//           the measurement of the ones queued behind it instead of hiding them.
//   closed  closed loop: C connections each send the next request as soon as the previous
//           response is complete (maximum throughput).
//   stream  S concurrent SSE streams; the upstream stamps every event with its send time on
//           the monotonic clock and the client subtracts it from the receive time.
//   serve   only the upstream, for --duration seconds (for external clients such as wrk).
//   freeport  prints a port that is free on 127.0.0.1 now.
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
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

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
  double rate = 1000;      // fixed: requests per second
  double duration = 10;    // measured seconds
  double warmup = 1;       // seconds of the same load before measuring, discarded
  int connections = 64;    // fixed: pool size; closed: concurrency
  int streams = 32;        // stream: concurrent streams
  int events = 50;         // stream: content events per stream
  double interval_ms = 4;  // stream: time between two events of a stream
  int max_tokens = 16;     // non-streaming requests
  std::string cpu_pids;    // comma-separated pids whose CPU time is measured over the window
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

std::string RawPost(const std::string& host, const std::string& body) {
  return "POST /v1/chat/completions HTTP/1.1\r\nHost: " + host +
         "\r\nContent-Type: application/json\r\nAccept: */*\r\nUser-Agent: infertel-loadgen\r\n"
         "Content-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
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
  std::int64_t ok = 0, errors = 0, late_drops = 0;
  std::int64_t events = 0;  // stream: events received in the window
  std::int64_t meas_start = 0, meas_end = 0;
  double cpu_start = 0, cpu_end = 0, self_start = 0, self_end = 0;
};

double Pct(std::vector<std::int64_t>& v, double p) {
  if (v.empty()) return 0;
  std::size_t i = static_cast<std::size_t>(p / 100.0 * static_cast<double>(v.size() - 1) + 0.5);
  return static_cast<double>(v[std::min(i, v.size() - 1)]) / 1000.0;
}

void Report(const Options& o, Results& r, double achieved_seconds) {
  std::sort(r.lat_ns.begin(), r.lat_ns.end());
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
  std::printf("RESULT label=%s mode=%s count=%.0f seconds=%.3f per_s=%.1f errors=%" PRId64
              " samples=%zu p50_us=%.1f p90_us=%.1f p99_us=%.1f p999_us=%.1f max_us=%.1f "
              "mean_us=%.1f proxy_cpu_s=%.3f proxy_cpu_us_per_item=%.2f loadgen_cpu_s=%.3f\n",
              o.label.c_str(), o.mode.c_str(), count, secs, count / secs, r.errors, r.lat_ns.size(),
              Pct(r.lat_ns, 50), Pct(r.lat_ns, 90), Pct(r.lat_ns, 99), Pct(r.lat_ns, 99.9),
              Pct(r.lat_ns, 100), mean, proxy_cpu, count > 0 ? proxy_cpu * 1e6 / count : 0.0,
              self_cpu);
  std::fflush(stdout);
}

// ---------------------------------------------------------------------------------------
// Clients.

class Client {
 public:
  Client(asio::io_context& io, const Options& o, tcp::endpoint target, const std::string& host)
      : io_(io), opts_(o), target_(target) {
    post_ = RawPost(host, ChatRequestBody(o, false));
    stream_post_ = RawPost(host, ChatRequestBody(o, true));
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
      for (int i = 0; i < opts_.streams; ++i) {
        auto offset = static_cast<std::int64_t>(opts_.interval_ms * 1e6 * i / opts_.streams);
        asio::co_spawn(io_, StreamWorker(now + offset), asio::detached);
      }
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
    t.expires_at(AtNs(r_.meas_end));
    co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    SampleEnd();
  }
  void SampleEnd() {
    if (sampled_end_) return;
    sampled_end_ = true;
    r_.cpu_end = PidsCpuSeconds(opts_.cpu_pids);
    r_.self_end = ProcCpuSeconds("self");
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

  // One request/response on a kept-alive connection; false on any failure (reconnect).
  asio::awaitable<bool> Exchange(beast::tcp_stream& s, beast::flat_buffer& buf) {
    error_code ec;
    s.expires_after(std::chrono::seconds(10));
    co_await asio::async_write(s, asio::buffer(post_),
                               asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return false;
    bhttp::response_parser<bhttp::string_body> p;
    p.body_limit(1 << 20);
    co_await bhttp::async_read(s, buf, p, asio::redirect_error(asio::use_awaitable, ec));
    if (ec || p.get().result_int() != 200 || p.get().body().empty()) co_return false;
    co_return p.get().keep_alive();
  }

  void Record(std::int64_t start, std::int64_t end, bool ok) {
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
      if (due >= r_.meas_end) break;
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

  asio::awaitable<void> FixedWorker(std::unique_ptr<asio::steady_timer> wake) {
    beast::tcp_stream s(io_);
    beast::flat_buffer buf;
    bool connected = false;
    error_code ec;
    for (;;) {
      if (pending_.empty()) {
        if (scheduling_done_) break;
        idle_.push_back(wake.get());
        wake->expires_at(Clock::time_point::max());
        co_await wake->async_wait(asio::redirect_error(asio::use_awaitable, ec));
        continue;
      }
      std::int64_t due = pending_.front();
      pending_.pop_front();
      if (!connected) connected = co_await Connect(s);
      bool ok = connected && co_await Exchange(s, buf);
      Record(due, NowNs(), ok);
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
      bool ok = connected && co_await Exchange(s, buf);
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
  void ScanEvents(std::string* acc, std::int64_t recv) {
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
        }
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
      if (!connected) connected = co_await Connect(s);
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
      acc.clear();
      while (ok && !p.is_done()) {
        p.get().body().data = body.data();
        p.get().body().size = body.size();
        co_await bhttp::async_read_some(s, buf, p, asio::redirect_error(asio::use_awaitable, ec));
        std::int64_t recv = NowNs();
        if (ec == bhttp::error::need_buffer) ec = {};
        if (ec) {
          ok = false;
          break;
        }
        std::size_t n = body.size() - p.get().body().size;
        acc.append(body.data(), n);
        ScanEvents(&acc, recv);
      }
      if (start >= r_.meas_start && start < r_.meas_end) ok ? ++r_.ok : ++r_.errors;
      if (!ok || !p.keep_alive()) {
        s.close();
        buf.clear();
        connected = false;
      }
    }
    WorkerDone();
  }

  asio::io_context& io_;
  const Options& opts_;
  tcp::endpoint target_;
  std::string post_, stream_post_;
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
  };
  auto* fixed = app.add_subcommand("fixed", "Open loop at a fixed rate");
  add_common(fixed, true);
  fixed->add_option("--rate", o.rate, "Requests per second");
  fixed->add_option("--connections", o.connections, "Keep-alive connection pool size");
  auto* closed = app.add_subcommand("closed", "Closed loop, maximum throughput");
  add_common(closed, true);
  closed->add_option("--connections", o.connections, "Concurrent connections");
  auto* stream = app.add_subcommand("stream", "Concurrent SSE streams, per-event latency");
  add_common(stream, true);
  stream->add_option("--streams", o.streams, "Concurrent streams");
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
  asio::steady_timer guard(io, std::chrono::milliseconds(
                                   static_cast<std::int64_t>((o.warmup + o.duration + 30) * 1000)));
  guard.async_wait([&](error_code e) {
    if (!e) {
      std::fprintf(stderr, "infertel-loadgen: run did not finish in time\n");
      io.stop();
    }
  });
  client.Start();
  io.run();
  Report(o, client.results(), o.duration);
  return client.results().ok > 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) { return Main(argc, argv); }
