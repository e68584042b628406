#pragma once
// SGLang's HTTP server (facts/sglang.md §3, §4), served by the simulator on top of the batching
// engine: the OpenAI endpoints with SGLang's ids, chunk shapes, usage and error bodies, the
// native /generate with meta_info, health, model and server info, /set_trace_level,
// /configure_logging, /metrics, request logs on stderr, the client-disconnect aborts, and the
// native spans of every request (sglang_tracing.h).
//
// Thread-safety: Handle() runs on connection strands concurrently; engine callbacks run on the
// engine thread. Shared state is atomic or guarded by the named mutex.

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "sim/engine/engine.h"
#include "sim/http_server.h"
#include "sim/otlp/span_exporter.h"
#include "sim/sglang/sglang_metrics.h"
#include "sim/sglang/sglang_options.h"
#include "sim/sglang/sglang_tracing.h"

namespace infertel::sim {

struct SglangSurfaceOptions {
  std::string served_model_name = "demo-model";
  std::string model_path = "demo-model";
  std::string host = "127.0.0.1";
  int port = 30000;
  SglangSimOptions flags;
  SglangVersion version;
  SglangMetrics* metrics = nullptr;     // not owned; null: no /metrics (no --enable-metrics)
  BatchSpanProcessor* spans = nullptr;  // not owned; null: tracing off
  SglangTraceStyle style;
  int initial_trace_level = 3;
  SimEnvFn env;
  // Where request logs go (stderr unless a test captures them); called under a lock.
  std::function<void(const std::string& line)> log_sink;
};

struct SglReq;
struct SglJob;
struct SglIntake;
struct SglOpenAiCall;
struct SglGenerateCall;

class SglangSurface {
 public:
  SglangSurface(Engine* engine, SglangSurfaceOptions options);
  ~SglangSurface();
  // Serves one request; returns whether to keep the connection.
  net::awaitable<bool> Handle(HttpConnection& conn, HttpRequest& req);

  int trace_level() const { return trace_level_.load(); }
  // The bound port, for /server_info (known only once the listener is up).
  void set_port(int port) { port_.store(port); }

 private:
  struct LogConfig {
    bool log_requests = false;
    int level = 2;
    std::string format = "text";
    std::string log_level = "info";
  };

  // /v1/chat/completions and /v1/completions, as stages: parse and validate the body,
  // PrepareJob, Admit, RelayOpenAi, then the stream's end or the whole body.
  net::awaitable<bool> OpenAi(HttpConnection& conn, HttpRequest& req, bool chat);
  // The native /generate, in the same stages (its relay: RelayGenerate).
  net::awaitable<bool> Generate(HttpConnection& conn, HttpRequest& req);
  // Fills `job` from `in`, stamps its requests (created, tokenized, trace level, router) and
  // logs them as received; SGLang's error message when a prompt does not fit the context.
  std::optional<std::string> PrepareJob(const SglIntake& in, std::uint64_t created_ns, SglJob& job);
  // The request log's line for a request received.
  void LogReceived(const SglIntake& in, const SglJob& job, const std::vector<std::string>& rids,
                   const LogConfig& lc, const std::string& sampling);
  // The PD intake queues, then the engine; false if it refused. Counts the request and starts
  // watching for the client's disconnect.
  net::awaitable<bool> Admit(HttpConnection& conn, const std::shared_ptr<SglJob>& job);
  // Takes the engine's outputs until every choice finished, streaming their frames if asked;
  // false when the stream could not start or the client went away.
  net::awaitable<bool> RelayOpenAi(HttpConnection& conn, HttpRequest& req, SglOpenAiCall& call);
  net::awaitable<bool> RelayGenerate(HttpConnection& conn, HttpRequest& req, SglGenerateCall& call);
  net::awaitable<bool> Health(HttpConnection& conn, HttpRequest& req);
  net::awaitable<bool> SetTraceLevel(HttpConnection& conn, HttpRequest& req);
  net::awaitable<bool> ConfigureLogging(HttpConnection& conn, HttpRequest& req);
  net::awaitable<bool> Json(HttpConnection& conn, HttpRequest& req, http::status status,
                            std::string body);
  // SGLang's ErrorResponse: {"object":"error","message","type","param","code"}.
  net::awaitable<bool> Error(HttpConnection& conn, HttpRequest& req, http::status status,
                             std::string_view type, std::string_view message);

  // Submits every request of `job`; false (and nothing left running) if the engine refused.
  bool Submit(SglJob& job, const std::shared_ptr<SglJob>& self, HttpConnection& conn);
  // Waits for the next emissions of `job`. On a client disconnect, aborts as SGLang does
  // (streaming: after the abort delay; non-streaming: at the next output or check) and
  // returns false.
  net::awaitable<bool> Next(HttpConnection& conn, SglJob& job);
  net::awaitable<void> Sleep(std::chrono::nanoseconds d);
  // PD: the queues before the waiting queue (bootstrap; decode: KV transfer in).
  net::awaitable<void> PdIntake(SglJob& job);
  // PD prefill: the KV transfer after the forward pass, then the request ends.
  net::awaitable<void> PdFinish(SglReq& r, SglJob* job);
  // Engine thread: one engine output of `r`.
  void OnOutput(const std::shared_ptr<SglJob>& job, SglReq& r, const RequestOutput& out);
  // After the client went away: aborts the requests of `job` still running and ends them.
  void AbortUnfinished(SglJob& job);
  // Ends `r` (engine thread or connection strand): spans, metrics, request log.
  void Finalize(SglReq& r, bool aborted, const std::string& abort_message);
  // The request log's line for a request finished (`tl`: its completed timeline).
  void LogFinished(const SglReq& r, const SglangRequestTimeline& tl);
  void Log(const std::string& message);
  std::string ServerInfoJson() const;
  std::string StatsJson() const;
  std::string ModelsJson() const;
  LogConfig log_config() const;

  Engine* engine_;
  SglangSurfaceOptions o_;
  SglangEra era_;
  std::atomic<int> trace_level_;
  mutable std::mutex log_mu_;  // guards log_ and the sink
  LogConfig log_;
  std::atomic<std::uint64_t> client_aborts_{0}, health_checks_{0}, requests_{0};
  std::atomic<int> pd_first_{0}, pd_second_{0};
  std::atomic<int> port_{0};
  bool request_module_ = true;  // "request" is among --trace-modules
};

}  // namespace infertel::sim
