// The SGLang simulator's control and information endpoints: /set_trace_level,
// /configure_logging, /health and /health_generate, /server_info.

#include <fmt/format.h>
#include <simdjson.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "core/clock.h"
#include "sim/json_fields.h"
#include "sim/json_writer.h"
#include "sim/sglang/sglang_surface.h"
#include "sim/sglang/sglang_surface_internal.h"

namespace infertel::sim {
namespace {

using simdjson::dom::element;
using simdjson::dom::object;

std::optional<std::string> QueryParam(std::string_view target, std::string_view key) {
  auto q = target.find('?');
  if (q == std::string_view::npos) return std::nullopt;
  std::string_view rest = target.substr(q + 1);
  while (!rest.empty()) {
    auto amp = rest.find('&');
    std::string_view kv = rest.substr(0, amp);
    auto eq = kv.find('=');
    if (kv.substr(0, eq) == key)
      return std::string(eq == std::string_view::npos ? "" : kv.substr(eq + 1));
    if (amp == std::string_view::npos) break;
    rest = rest.substr(amp + 1);
  }
  return std::nullopt;
}

}  // namespace

net::awaitable<bool> SglangSurface::SetTraceLevel(HttpConnection& conn, HttpRequest& req) {
  auto v = QueryParam(req.target(), "level");
  if (!v) {
    co_return co_await Error(conn, req, http::status::bad_request, "Bad Request",
                             ValidationMessage("missing", "'query', 'level'", "Field required"));
  }
  int level = 0;
  bool parsed = false;
  try {
    std::size_t used = 0;
    level = std::stoi(*v, &used);
    parsed = used == v->size();
  } catch (...) {
  }
  if (!parsed) {
    co_return co_await Error(
        conn, req, http::status::bad_request, "Bad Request",
        ValidationMessage("int_parsing", "'query', 'level'",
                          "Input should be a valid integer, unable to parse string as an integer",
                          PyRepr(*v)));
  }
  if (level < 0) {
    co_return co_await Error(
        conn, req, http::status::bad_request, "Bad Request",
        ValidationMessage("greater_than_equal", "'query', 'level'",
                          "Input should be greater than or equal to 0", PyRepr(*v)));
  }
  trace_level_.store(level);
  co_return co_await conn.Reply(http::status::ok, "", "success", req.keep_alive());
}

net::awaitable<bool> SglangSurface::ConfigureLogging(HttpConnection& conn, HttpRequest& req) {
  simdjson::dom::parser parser;
  element doc;
  object body;
  if (!req.body().empty() && (parser.parse(req.body()).get(doc) != simdjson::SUCCESS ||
                              doc.get_object().get(body) != simdjson::SUCCESS)) {
    co_return co_await Error(conn, req, http::status::bad_request, "Bad Request",
                             ValidationMessage("json_invalid", "'body', 0", "JSON decode error"));
  }
  const bool has_body = !req.body().empty();
  std::optional<bool> log_requests;
  std::optional<std::int64_t> level;
  std::optional<std::string> format, log_level;
  if (has_body) {
    if (auto e = Field(body, "log_requests")) {
      bool b;
      if (e->get_bool().get(b) == simdjson::SUCCESS) log_requests = b;
    }
    level = GetInt(body, "log_requests_level");
    format = GetStr(body, "log_requests_format");
    log_level = GetStr(body, "log_level");
  }
  if (level && (*level < 0 || *level > 3)) {
    co_return co_await Error(
        conn, req, http::status::bad_request, "BadRequestError",
        "Invalid --log-requests-level: self.log_requests_level=" + std::to_string(*level));
  }
  if (format && *format != "text" && *format != "json") {
    co_return co_await Error(conn, req, http::status::bad_request, "BadRequestError",
                             "Invalid log_requests_format: " + *format);
  }
  {
    std::lock_guard lk(log_mu_);
    if (log_requests) log_.log_requests = *log_requests;
    if (level) log_.level = static_cast<int>(*level);
    if (format) log_.format = *format;
    if (log_level) log_.log_level = *log_level;
  }
  auto opt = [](const auto& v, auto f) { return v ? f(*v) : std::string("None"); };
  Log("Config logging: obj=ConfigureLoggingReq(log_requests=" +
      opt(log_requests, [](bool b) { return std::string(b ? "True" : "False"); }) +
      ", log_requests_level=" + opt(level, [](std::int64_t x) { return std::to_string(x); }) +
      ", log_requests_format=" + opt(format, [](const std::string& s) { return PyRepr(s); }) +
      ", dump_requests_folder=None, dump_requests_threshold=None, crash_dump_folder=None)");
  co_return co_await conn.Reply(http::status::ok, "", "", req.keep_alive());
}

// ---------------------------------------------------------------------------------------------
// /health, /health_generate.

net::awaitable<bool> SglangSurface::Health(HttpConnection& conn, HttpRequest& req) {
  if (PathOf(req.target()) == "/health") {
    auto v = o_.env("SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION");
    if (v && (*v == "0" || *v == "false" || *v == "False")) {
      co_return co_await conn.Reply(http::status::ok, "", "", req.keep_alive());
    }
  }
  health_checks_.fetch_add(1);
  auto job = std::make_shared<SglJob>();
  auto r = std::make_unique<SglReq>();
  r->rid = fmt::format("HEALTH_CHECK_{}", static_cast<double>(WallNanos()) / 1e9);
  r->prompt = {0};
  r->spec.max_tokens = 1;
  r->log_metrics = false;
  r->stream = false;
  r->span.trace_level = trace_level_.load();
  r->span.timeline.rid = r->rid;
  r->span.timeline.role =
      o_.flags.disaggregation_mode == "null" ? "" : o_.flags.disaggregation_mode;
  r->span.timeline.created_ns = r->span.timeline.tokenize_end_ns = WallNanos();
  r->params.max_tokens = 1;
  job->reqs.push_back(std::move(r));
  if (!Submit(*job, job, conn)) {
    co_return co_await conn.Reply(http::status::service_unavailable, "", "", req.keep_alive());
  }
  double timeout_s = 20;
  if (auto v = o_.env("SGLANG_HEALTH_CHECK_TIMEOUT")) {
    try {
      timeout_s = std::stod(*v);
    } catch (...) {
    }
  }
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int>(timeout_s * 1000));
  bool ok = false;
  while (std::chrono::steady_clock::now() < deadline) {
    {
      std::lock_guard lk(job->mu);
      if (!job->inbox.empty()) {
        ok = true;
        break;
      }
    }
    co_await Sleep(std::chrono::milliseconds(2));
  }
  if (!ok) engine_->Abort(job->reqs[0]->rid);
  co_return co_await conn.Reply(ok ? http::status::ok : http::status::service_unavailable, "", "",
                                req.keep_alive());
}

// ---------------------------------------------------------------------------------------------
// /server_info.

namespace {

void StrOrNull(JsonWriter& w, const std::string& s) {
  if (s.empty())
    w.Null();
  else
    w.String(s);
}

// The speculative-decoding arguments (null without --speculative-algorithm).
void SpeculativeArgs(JsonWriter& w, const SglangSimOptions& f) {
  w.Key("speculative_algorithm");
  StrOrNull(w, f.speculative_algorithm);
  auto int_or_null = [&](const char* key, int v) {
    w.Key(key);
    if (f.speculative_algorithm.empty())
      w.Null();
    else
      w.Int(v);
  };
  int_or_null("speculative_num_steps", f.speculative_num_steps);
  int_or_null("speculative_eagle_topk", f.speculative_eagle_topk);
  int_or_null("speculative_num_draft_tokens", f.speculative_num_draft_tokens);
}

// The scheduler's capacity and its internal state now.
void SchedulerInfo(JsonWriter& w, const EngineStats& s, const EngineConfig& ec) {
  w.Key("max_total_num_tokens").Int(static_cast<std::int64_t>(s.kv_blocks_total) * ec.block_size);
  w.Key("max_req_input_len").Int(ec.max_model_len - 1);
  w.Key("internal_states").BeginArray().BeginObject();
  w.Key("num_running_reqs").Int(static_cast<std::int64_t>(s.running));
  w.Key("num_waiting_reqs").Int(static_cast<std::int64_t>(s.waiting));
  w.Key("memory_usage").BeginObject().Key("weight").Double(0.0).Key("kvcache").Double(0.0);
  w.Key("token_capacity").Int(static_cast<std::int64_t>(s.kv_blocks_total) * ec.block_size);
  w.EndObject();
  w.EndObject().EndArray();
}

}  // namespace

std::string SglangSurface::ServerInfoJson() const {
  // The server arguments as given at start-up (/configure_logging changes the tokenizer's
  // logger, not server_args), then scheduler info and the version.
  const SglangSimOptions& f = o_.flags;
  const EngineConfig& ec = engine_->config();
  JsonWriter w;
  w.BeginObject();
  w.Key("model_path").String(o_.model_path);
  w.Key("tokenizer_path").String(o_.model_path);
  w.Key("tokenizer_mode").String("auto");
  w.Key("skip_tokenizer_init").Bool(false);
  w.Key("load_format").String("auto");
  w.Key("trust_remote_code").Bool(false);
  w.Key("context_length").Int(ec.max_model_len);
  w.Key("is_embedding").Bool(false);
  w.Key("host").String(o_.host);
  w.Key("port").Int(port_.load() ? port_.load() : o_.port);
  w.Key("served_model_name").String(o_.served_model_name);
  w.Key("dtype").String("auto");
  w.Key("kv_cache_dtype").String("auto");
  w.Key("max_running_requests").Int(ec.max_num_seqs);
  w.Key("max_total_tokens").Null();
  w.Key("chunked_prefill_size").Int(ec.max_num_batched_tokens);
  w.Key("max_prefill_tokens").Int(16384);
  w.Key("schedule_policy").String("fcfs");
  w.Key("page_size").Int(1);
  w.Key("tp_size").Int(f.tp_size);
  w.Key("pp_size").Int(1);
  w.Key("dp_size").Int(1);
  w.Key("stream_interval").Int(f.stream_interval);
  w.Key("stream_output").Bool(false);
  w.Key("incremental_streaming_output").Bool(f.incremental_streaming_output);
  w.Key("random_seed").Int(static_cast<std::int64_t>(ec.seed));
  w.Key("log_level").String(f.log_level);
  w.Key("log_requests").Bool(f.log_requests);
  w.Key("log_requests_level")
      .Int(f.log_requests_level >= 0 ? f.log_requests_level : era_.default_log_requests_level);
  w.Key("log_requests_format").String(f.log_requests_format);
  w.Key("api_key").Null();
  w.Key("enable_metrics").Bool(f.enable_metrics);
  w.Key("enable_metrics_for_all_schedulers").Bool(f.enable_metrics_for_all_schedulers);
  w.Key("decode_log_interval").Int(f.decode_log_interval);
  w.Key("enable_cache_report").Bool(f.enable_cache_report);
  if (era_.tracing) {
    w.Key("enable_trace").Bool(f.enable_trace);
    w.Key("otlp_traces_endpoint")
        .String(f.otlp_traces_endpoint.empty() ? "localhost:4317" : f.otlp_traces_endpoint);
  }
  if (era_.pp_rank) w.Key("trace_modules").String(f.trace_modules);
  w.Key("disaggregation_mode").String(f.disaggregation_mode);
  SpeculativeArgs(w, f);
  w.Key("tool_call_parser");
  StrOrNull(w, f.tool_call_parser);
  w.Key("reasoning_parser");
  StrOrNull(w, f.reasoning_parser);
  w.Key("disable_overlap_schedule").Bool(f.disable_overlap_schedule);
  w.Key("stream_response_default_include_usage").Bool(f.stream_response_default_include_usage);
  w.Key("weight_version").String(f.weight_version);
  SchedulerInfo(w, engine_->Stats(), ec);
  w.Key("version").String(
      fmt::format("{}.{}.{}", o_.version.major, o_.version.minor, o_.version.patch));
  w.EndObject();
  return w.Take();
}

}  // namespace infertel::sim
