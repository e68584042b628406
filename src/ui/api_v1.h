#pragma once
// The JSON API over the embedded store that the web UI's pages use, and scripts may:
//
//   GET /api/v1/traces?model=&tenant=&status=&min_ms=&since=&until=&q=&limit=
//       {"traces": [{trace_id, name, model, tenant, operation, service, status,
//                    start_time_unix_nano, duration_ns, duration_ms}, ...]}, newest first
//   GET /api/v1/traces/{trace_id}
//       {"trace_id": ..., "spans": [every span of the trace, as `infertel spans --json`]}
//   GET /api/v1/metrics?since=15m
//       {"source": "agent"|"store", "step_seconds": S, "times": [unix ms, ...],
//        "series": [{"metric", "model", "tenant", "upstream", "values": [number|null, ...]}]}
//       the overview's series: from a running agent, its recent steps
//       (metrics/overview_history.h); with no agent, those the store's trace index gives
//       (requests and errors per second, request duration percentiles), from at most
//       kMaxSeriesTraces traces
//   GET|PUT|DELETE /api/v1/config[/{key}]
//       the console's config API (console/admin_api.h) of a running agent; 404 no_agent without
//
// Filters: model, tenant (exact), status (ok: not an error, whether its status is OK or UNSET,
// as a successful entry span's is; error; unset), min_ms (the trace's root at least
// this long), since / until (unix milliseconds, or since as a duration back from now: 15m),
// q (free text in trace ids, span names, attributes and captured content; it reads the spans
// of at most kMaxTextScan candidate traces, newest first), limit (default 50, at most 500).
// The filters other than q answer from the store's trace index. A bad parameter is a 400 naming
// it. Served on the agent's admin address and by `infertel ui`, with the admin API's rule: a
// bearer token when one is configured (required off loopback).
//
// Thread-safety: Handle may run on several threads at once (each request opens the store for
// reading; reading never blocks the agent's writer).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "http/simple_server.h"

namespace infertel::ui {

inline constexpr std::string_view kApiV1Prefix = "/api/v1/";
inline constexpr std::size_t kDefaultTraces = 50;
inline constexpr std::size_t kMaxTraces = 500;
inline constexpr std::size_t kMaxTextScan = 2000;
inline constexpr std::size_t kMaxSeriesTraces = 100000;
inline constexpr std::size_t kMaxSeriesSteps = 360;

// What a running agent adds to the store's answers; both empty in `infertel ui`.
struct AgentHooks {
  // The overview's steps since a unix millisecond (metrics::MetricsService::OverviewJson); ""
  // when the agent has none.
  std::function<std::string(std::int64_t since_unix_ms)> overview;
  // The console's config API, given the request and its target after /api/v1/config ("",
  // "/KEY", with the query).
  std::function<http::StringResponse(const http::StringRequest&, std::string_view rest)> config;
};

class ApiV1 {
 public:
  // `store_path`: the store directory; `token`: the bearer token required ("" : none).
  ApiV1(std::string store_path, std::string token, AgentHooks hooks = {})
      : store_path_(std::move(store_path)), token_(std::move(token)), hooks_(std::move(hooks)) {}
  http::StringResponse Handle(const http::StringRequest& req) const;

 private:
  bool Authorized(const http::StringRequest& req) const;
  http::StringResponse Config(const http::StringRequest& req, std::string_view rest) const;
  http::StringResponse Metrics(std::string_view query) const;
  std::string store_path_;
  std::string token_;
  AgentHooks hooks_;
};

}  // namespace infertel::ui
