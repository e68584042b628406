#include "ui/api_v1.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <chrono>
#include <optional>
#include <variant>

#include "core/clock.h"
#include "core/ids.h"
#include "core/json.h"
#include "export/factory.h"
#include "export/sqlite/sqlite_store.h"
#include "http/bearer.h"
#include "ui/query.h"
#include "ui/store_series.h"

namespace infertel::ui {
namespace {

namespace bhttp = boost::beast::http;
using exporting::SqliteStore;
using exporting::TraceFilter;
using exporting::TraceSummary;

http::StringResponse Json(unsigned status, std::string body) {
  return http::MakeResponse(status, std::move(body), "application/json");
}
http::StringResponse Error(unsigned status, std::string_view type, std::string_view message) {
  return Json(status, http::JsonErrorBody(status, type, message));
}

std::optional<std::int64_t> Integer(std::string_view s) {
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

// The filter a query asks for, or the message of a 400.
std::variant<TraceFilter, std::string> FilterOf(const QueryParams& q, std::size_t* limit) {
  TraceFilter f;
  if (auto v = q.Get("model")) f.model = std::string(*v);
  if (auto v = q.Get("tenant")) f.tenant = std::string(*v);
  if (auto v = q.Get("status"); v && !v->empty()) {
    if (*v == "ok")
      f.status = TraceFilter::kNotError;  // an entry span that succeeded is UNSET
    else if (*v == "error")
      f.status = 2;
    else if (*v == "unset")
      f.status = 0;
    else
      return std::string("status: expected ok, error or unset");
  }
  if (auto v = q.Get("min_ms"); v && !v->empty()) {
    auto ms = Integer(*v);
    if (!ms) return std::string("min_ms: expected a whole number of milliseconds");
    f.min_duration_ns = *ms * 1'000'000;
  }
  const auto now_ms = static_cast<std::int64_t>(WallNanos() / 1'000'000);
  for (const char* name : {"since", "until"}) {
    auto v = q.Get(name);
    if (!v || v->empty()) continue;
    std::optional<std::int64_t> ms = Integer(*v);
    if (!ms && std::string_view(name) == "since")
      if (auto d = exporting::ParseDuration(*v)) ms = now_ms - d->count();
    if (!ms)
      return fmt::format("{}: expected unix milliseconds{}", name,
                         std::string_view(name) == "since" ? " or a duration such as 15m" : "");
    (std::string_view(name) == "since" ? f.start_from : f.start_to) = *ms * 1'000'000;
  }
  *limit = kDefaultTraces;
  if (auto v = q.Get("limit"); v && !v->empty()) {
    auto n = Integer(*v);
    if (!n || *n < 1 || *n > static_cast<std::int64_t>(kMaxTraces))
      return fmt::format("limit: expected 1 to {}", kMaxTraces);
    *limit = static_cast<std::size_t>(*n);
  }
  return f;
}

std::string_view StatusName(int code) { return code == 2 ? "error" : code == 1 ? "ok" : "unset"; }

void AppendSummary(std::string* out, const TraceSummary& t) {
  auto field = [&](std::string_view k, std::string_view v) {
    *out += ',';
    AppendJsonString(out, k);
    *out += ':';
    AppendJsonString(out, v);
  };
  *out += "{\"trace_id\":";
  AppendJsonString(out, t.trace_id);
  field("name", t.name);
  field("model", t.model);
  field("tenant", t.tenant);
  field("operation", t.operation);
  field("service", t.service);
  field("status", StatusName(t.status_code));
  field("start_time_unix_nano", std::to_string(t.start_time_unix_nano));
  field("duration_ns", std::to_string(t.duration_ns));
  *out += fmt::format(",\"duration_ms\":{:.3f}}}", static_cast<double>(t.duration_ns) / 1e6);
}

// Whether a trace holds `text`: in its id, or in a span's name or attributes (which hold the
// captured content).
bool Contains(SqliteStore& store, const TraceSummary& t, std::string_view text) {
  if (t.trace_id.find(text) != std::string::npos || t.name.find(text) != std::string::npos)
    return true;
  for (const auto& s : store.TraceSpans(t.trace_id))
    if (s.name.find(text) != std::string::npos || s.attributes.find(text) != std::string::npos ||
        s.events.find(text) != std::string::npos)
      return true;
  return false;
}

http::StringResponse ListTraces(SqliteStore& store, std::string_view query) {
  auto parsed = ParseQuery(query);
  if (auto* err = std::get_if<std::string>(&parsed)) return Error(400, "bad_request", *err);
  const QueryParams& q = std::get<QueryParams>(parsed);
  std::size_t limit = 0;
  auto filter = FilterOf(q, &limit);
  if (auto* err = std::get_if<std::string>(&filter)) return Error(400, "bad_request", *err);
  TraceFilter f = std::get<TraceFilter>(filter);
  const std::string text(q.Get("q").value_or(""));
  f.limit = text.empty() ? limit : kMaxTextScan;
  std::string out = "{\"traces\":[";
  std::size_t n = 0;
  for (const auto& t : store.Traces(f)) {
    if (n == limit) break;
    if (!text.empty() && !Contains(store, t, text)) continue;
    if (n++) out += ',';
    AppendSummary(&out, t);
  }
  out += fmt::format("],\"limit\":{}}}", limit);
  return Json(200, std::move(out));
}

http::StringResponse OneTrace(SqliteStore& store, std::string_view id) {
  auto trace = TraceIdFromHex(id);
  if (!trace) return Error(400, "bad_request", "a trace id is 32 hex characters");
  const std::string hex = ToHex(*trace);
  const auto spans = store.TraceSpans(hex);
  if (spans.empty()) return Error(404, "not_found", "no such trace in the store");
  std::string out = "{\"trace_id\":";
  AppendJsonString(&out, hex);
  out += ",\"spans\":[";
  for (std::size_t i = 0; i < spans.size(); ++i) {
    if (i) out += ',';
    exporting::AppendSpanJson(&out, spans[i]);
  }
  out += "]}";
  return Json(200, std::move(out));
}

// The window a `since` parameter asks for, in unix ms: a duration back from now (15m, the
// default) or a unix millisecond; nullopt for neither.
std::optional<std::int64_t> SinceOf(const QueryParams& q, std::int64_t now_ms) {
  const std::string_view v = q.Get("since").value_or("15m");
  if (auto ms = Integer(v)) return std::min(*ms, now_ms);
  if (auto d = exporting::ParseDuration(v)) return now_ms - d->count();
  return std::nullopt;
}

}  // namespace

bool ApiV1::Authorized(const http::StringRequest& req) const {
  // One credential: two are ambiguous (a proxy and its client may each have added one).
  return token_.empty() ||
         (req.count(bhttp::field::authorization) == 1 && http::BearerTokenMatches(req, token_));
}

http::StringResponse ApiV1::Metrics(std::string_view query) const {
  auto parsed = ParseQuery(query);
  if (auto* err = std::get_if<std::string>(&parsed)) return Error(400, "bad_request", *err);
  const auto now_ms = static_cast<std::int64_t>(WallNanos() / 1'000'000);
  const auto since = SinceOf(std::get<QueryParams>(parsed), now_ms);
  if (!since)
    return Error(400, "bad_request", "since: expected unix milliseconds or a duration such as 15m");
  if (hooks_.overview)  // "" when the agent keeps no metrics: the store answers
    if (std::string json = hooks_.overview(*since); !json.empty())
      return Json(200, std::move(json));
  SqliteStore store;
  std::string error;
  if (!store.Open(store_path_, &error)) return Error(503, "store_unavailable", error);
  TraceFilter f;
  f.start_from = *since * 1'000'000;
  f.limit = kMaxSeriesTraces;
  const auto traces = store.Traces(f);
  const std::int64_t step = StepSecondsFor(now_ms - *since, kMaxSeriesSteps);
  return Json(200, StoreSeriesJson(traces, *since, now_ms, step, traces.size() < f.limit));
}

http::StringResponse ApiV1::Config(const http::StringRequest& req, std::string_view rest) const {
  if (!hooks_.config)
    return Error(404, "no_agent",
                 "no agent is running: the switches live in a running agent (infertel ui serves "
                 "a store only)");
  return hooks_.config(req, rest);
}

http::StringResponse ApiV1::Handle(const http::StringRequest& req) const {
  if (!Authorized(req)) return Error(401, "unauthorized", "a bearer token is required");
  std::string_view target = req.target(), query;
  if (auto q = target.find('?'); q != std::string_view::npos) {
    query = target.substr(q + 1);
    target = target.substr(0, q);
  }
  constexpr std::string_view kConfig = "/api/v1/config";
  if (target == kConfig || target.starts_with(std::string(kConfig) + "/"))
    return Config(req, req.target().substr(kConfig.size()));
  if (req.method() != bhttp::verb::get) return Error(405, "method_not_allowed", "GET only");
  if (target == "/api/v1/metrics") return Metrics(query);
  constexpr std::string_view kTraces = "/api/v1/traces";
  if (target != kTraces && !target.starts_with(std::string(kTraces) + "/"))
    return Error(404, "not_found", "no such API endpoint");
  SqliteStore store;
  std::string error;
  if (!store.Open(store_path_, &error)) return Error(503, "store_unavailable", error);
  if (target == kTraces) return ListTraces(store, query);
  return OneTrace(store, target.substr(kTraces.size() + 1));
}

}  // namespace infertel::ui
