#pragma once
// vLLM's OpenAI-compatible HTTP surface (facts/vllm.md §3), served by the simulator on top of
// the batching engine: routes, request validation, ids, response and SSE chunk shapes, error
// bodies, usage rules and client-disconnect aborts.
//
// Thread-safety: Handle() runs on connection strands concurrently; the surface holds no
// mutable state of its own besides the engine (thread-safe) and atomics.

#include <atomic>
#include <memory>
#include <string>

#include "sim/engine/engine.h"
#include "sim/http_server.h"
#include "sim/otlp/span_exporter.h"
#include "sim/vllm/vllm_metrics.h"
#include "sim/vllm/vllm_tracing.h"

namespace infertel::sim {

struct VllmSurfaceOptions {
  std::string model = "demo-model";
  bool enable_prompt_tokens_details = false;
  bool v0 = false;  // answer as a V0-era server (0.7.x): older error and response shapes
  int embedding_dim = 384;
  std::string vllm_version = "0.11.0";  // what /version reports in V1 mode
  std::string model_path;               // V0 span's gen_ai.response.model; empty: `model`
  VllmMetrics* metrics = nullptr;       // not owned; null: no /metrics
  BatchSpanProcessor* spans = nullptr;  // not owned; null: tracing off
  DetailedTraces detailed;              // V0 only
};

struct GroupTelemetry;
struct VllmGeneration;
struct VllmInbox;

class VllmSurface {
 public:
  VllmSurface(Engine* engine, VllmSurfaceOptions options);
  // Serves one request; returns whether to keep the connection.
  net::awaitable<bool> Handle(HttpConnection& conn, HttpRequest& req);
  // The version string /version reports.
  const char* version() const;

 private:
  // /v1/chat/completions and /v1/completions, in stages: parse and validate (ParseGeneration),
  // Admit, Relay, then the stream's end or the whole body.
  net::awaitable<bool> Generate(HttpConnection& conn, HttpRequest& req, bool chat);
  // Submits one engine sequence per (prompt, choice); false (nothing left running) if refused.
  bool Admit(HttpConnection& conn, VllmGeneration& g, const std::shared_ptr<VllmInbox>& inbox);
  // Takes the engine's outputs until every choice finished, streaming them if asked; false
  // when the client went away (its unfinished sequences aborted).
  net::awaitable<bool> Relay(HttpConnection& conn, HttpRequest& req, VllmGeneration& g,
                             VllmInbox& inbox);
  void AbortUnfinished(const VllmGeneration& g);
  net::awaitable<bool> Embeddings(HttpConnection& conn, HttpRequest& req);
  net::awaitable<bool> Rerank(HttpConnection& conn, HttpRequest& req);
  net::awaitable<bool> Score(HttpConnection& conn, HttpRequest& req);
  net::awaitable<bool> Json(HttpConnection& conn, HttpRequest& req, http::status status,
                            std::string body);
  net::awaitable<bool> Error(HttpConnection& conn, HttpRequest& req, http::status status,
                             std::string_view type, std::string_view message,
                             std::string_view param = {});
  std::string BaseRequestId(const HttpRequest& req, std::string_view body_request_id) const;
  std::string StatsJson() const;
  std::string ModelsJson() const;
  // Front-end bookkeeping of one engine output (engine thread): TTFT, finished-request
  // metrics and the native span, as vLLM's output processor does it.
  void OnEngineOutput(GroupTelemetry& group, int child, const RequestOutput& out);

  Engine* engine_;
  VllmSurfaceOptions options_;
  std::int64_t started_unix_ = 0;
};

}  // namespace infertel::sim
