#pragma once
// The JSON API over the embedded store that the web UI's pages use, and scripts may:
//
//   GET /api/v1/traces?model=&tenant=&status=&min_ms=&since=&until=&q=&limit=
//       {"traces": [{trace_id, name, model, tenant, operation, service, status,
//                    start_time_unix_nano, duration_ns, duration_ms}, ...]}, newest first
//   GET /api/v1/traces/{trace_id}
//       {"trace_id": ..., "spans": [every span of the trace, as `infertel spans --json`]}
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
#include <string>
#include <string_view>

#include "http/simple_server.h"

namespace infertel::ui {

inline constexpr std::string_view kApiV1Prefix = "/api/v1/";
inline constexpr std::size_t kDefaultTraces = 50;
inline constexpr std::size_t kMaxTraces = 500;
inline constexpr std::size_t kMaxTextScan = 2000;

class ApiV1 {
 public:
  // `store_path`: the store directory; `token`: the bearer token required ("" : none).
  ApiV1(std::string store_path, std::string token)
      : store_path_(std::move(store_path)), token_(std::move(token)) {}
  http::StringResponse Handle(const http::StringRequest& req) const;

 private:
  bool Authorized(const http::StringRequest& req) const;
  std::string store_path_;
  std::string token_;
};

}  // namespace infertel::ui
