#pragma once
// The gateway: a reverse proxy in front of each engine that observes the OpenAI API.
//
// Threads: `threads` workers (by default one per CPU the process may run on, at most
// kMaxDefaultWorkers), each with its own io_context; a connection is pinned to one
// worker for its life, so per-connection and per-worker state (upstream connection pools)
// needs no locks. Telemetry leaves through ExchangeListeners, which must not block.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "analytics/request_analytics.h"
#include "config/settings.h"
#include "core/stats.h"
#include "gateway/upstream_failure.h"
#include "http/connection_guard.h"
#include "http/framing.h"
#include "http/url.h"
#include "openai/exchange.h"

namespace infertel::gateway {

struct UpstreamConfig {
  std::string name = "default";
  EngineId engine;
  http::Url url;                 // where the engine listens
  http::HostPort listen;         // where the gateway listens for this engine's clients
  std::string pd_role = "none";  // producer | consumer | none (vLLM PD disaggregation)
  // Engine cores behind this upstream (vLLM data parallelism). With one, every request's
  // gen_ai.engine.index is 0; with more, it is known only when the client pins a rank with
  // X-data-parallel-rank.
  int data_parallel_size = 1;
  // vLLM span shape: auto (from the spans, then /version), v0 or v1.
  std::string engine_version = "auto";
  // The engine's Prometheus endpoint: "" = the upstream's /metrics; "off" = not scraped.
  std::string metrics_url;
  // False: requests get 503 until SetUpstreamReady(index, true) (launch mode, while the
  // engine starts).
  bool start_ready = true;
};

// By default the gateway runs one worker per CPU it may run on: two workers on one CPU take
// turns at the scheduler's tick (4 ms at 250 Hz) once the CPU is saturated, and a request on
// the waiting worker waits that long (docs/performance-history.md, "One gateway worker per
// CPU, on a quiet machine"). Under a cgroup CPU quota, one per CPU's worth of it (CpuBudget):
// a second worker there only spends the quota sooner, and the cgroup is then throttled whole
// until its next period. At most two: the engine shares the machine's cores, and two
// served every gateway bench's load.
inline constexpr int kMaxDefaultWorkers = 2;
// The workers for `threads`: itself when positive, else one per CPU in `allowed_cpus`, at
// most kMaxDefaultWorkers.
int GatewayWorkers(int threads, int allowed_cpus);

struct GatewayOptions {
  std::vector<UpstreamConfig> upstreams;
  int threads = 0;                            // 0: GatewayWorkers' default
  std::size_t max_request_body = 32u << 20;   // above it: 413 with a JSON error
  std::size_t max_observed_body = 16u << 20;  // response bytes kept for parsing
  // The upstream timeouts are live keys (infertel.upstream.*-timeout-ms), read per request:
  // see UpstreamTimeouts.
  std::chrono::milliseconds client_idle_timeout{75'000};  // keep-alive wait for a request
  // Client connections open at once, every listener together (http/connection_guard.h): at
  // the cap the one waiting for or reading its request longest is closed; a connection whose
  // request is being answered (forwarded, streamed) never is. Many long streams are normal
  // for an inference server, so the cap is well above an engine's batch.
  std::size_t max_connections = 4096;
  std::size_t max_idle_upstream_connections = 64;  // per worker and upstream
  // Level-2 token detail kept per exchange: OTEL_SPAN_EVENT_COUNT_LIMIT (default 128).
  std::size_t max_span_events = 128;
};

// Per-gateway counters, exposed on the admin /metrics.
struct GatewayStats {
  std::atomic<std::uint64_t> requests{0};            // every request forwarded or refused
  std::atomic<std::uint64_t> observed{0};            // OpenAI-API exchanges observed
  std::atomic<std::uint64_t> unparsed_bodies{0};     // request bodies that were not JSON
  std::atomic<std::uint64_t> upstream_errors{0};     // connect/IO failures toward engines
  UpstreamFailureLog upstream_failures;              // the same, by reason
  InvalidAnswerLog invalid_answers;                  // answers passed on, their values not
  std::atomic<std::uint64_t> client_aborts{0};       // clients gone before the response end
  std::atomic<std::uint64_t> rejected{0};            // refused by the gateway (413, 400)
  std::atomic<std::uint64_t> upstream_connects{0};   // new upstream connections opened
  std::atomic<std::uint64_t> active_connections{0};  // client connections open now
  std::atomic<std::uint64_t> active_streams{0};      // SSE responses in flight now
  std::atomic<std::uint64_t> drain_cut{0};           // in flight at the drain deadline: cut
  http::FramingStats framing;  // refused for their framing (also in `rejected`), by reason
  // The connection cap and the read timeouts (`idle_timeout`: no byte of a request within
  // client_idle_timeout; `header_timeout`, `body_timeout`: a request begun and not read).
  http::ConnectionStats connections;
  void Register(StatsRegistry* registry, const std::string& labels) const;
};

class Gateway {
 public:
  Gateway(GatewayOptions options, std::shared_ptr<config::ConfigStore> config);
  ~Gateway();
  Gateway(const Gateway&) = delete;
  Gateway& operator=(const Gateway&) = delete;

  // Listeners are called for every finished exchange, in order of registration. Add them
  // before Start(); the gateway does not own them.
  void AddListener(openai::ExchangeListener* listener);
  // Binds every upstream's listen address and starts the workers; false and *error when an
  // address cannot be bound or an upstream cannot be resolved.
  bool Start(std::string* error);
  // The bound port of each upstream's listener, in the order of options.upstreams.
  std::vector<std::uint16_t> Ports() const;
  // Whether requests for upstream `index` are forwarded (true) or answered 503 (after Start).
  void SetUpstreamReady(std::size_t index, bool ready);
  // A graceful stop, first step: closes the listeners (new connections are refused) and the
  // client connections waiting for a request. Requests in flight go on. Idempotent.
  void StopAccepting();
  // Second step: waits until every request in flight has finished or `deadline` has passed,
  // then cuts what remains (counted in stats().drain_cut; their exchanges end with outcome
  // kShutdown) and returns how many were cut. Calls StopAccepting() first.
  std::size_t Drain(std::chrono::steady_clock::time_point deadline);
  // Stops accepting, closes connections and joins the workers (without draining).
  void Stop();

  const GatewayStats& stats() const { return stats_; }
  const GatewayOptions& options() const { return options_; }
  // Tenants and SLO verdicts of the requests (their counters: Register).
  const analytics::RequestAnalytics& analytics() const { return analytics_; }

  struct Impl;

 private:
  GatewayOptions options_;
  std::shared_ptr<config::ConfigStore> config_;
  GatewayStats stats_;
  analytics::RequestAnalytics analytics_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace infertel::gateway
