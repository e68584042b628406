#include "sim/sglang/sglang_surface.h"

#include <fmt/format.h>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cmath>
#include <ctime>
#include <iostream>
#include <random>

#include "sim/engine/prometheus_text.h"
#include "sim/json_fields.h"
#include "sim/json_writer.h"
#include "sim/sglang/sglang_surface_internal.h"

namespace infertel::sim {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

std::string RandomHex(int n) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* kHex = "0123456789abcdef";
  std::string s(static_cast<std::size_t>(n), '0');
  for (int i = 0; i < n; ++i) s[static_cast<std::size_t>(i)] = kHex[rng() & 15];
  return s;
}

std::string_view PathOf(std::string_view target) {
  auto q = target.find('?');
  return q == std::string_view::npos ? target : target.substr(0, q);
}

std::vector<std::string> GetStrList(const object& o, std::string_view key) {
  std::vector<std::string> out;
  auto e = Field(o, key);
  if (!e) return out;
  std::string_view s;
  array arr;
  if (e->get_string().get(s) == simdjson::SUCCESS) {
    out.emplace_back(s);
  } else if (e->get_array().get(arr) == simdjson::SUCCESS) {
    for (element x : arr)
      if (x.get_string().get(s) == simdjson::SUCCESS) out.emplace_back(s);
  }
  return out;
}

std::vector<TokenId> TokenIds(const array& arr) {
  std::vector<TokenId> ids;
  std::int64_t tok;
  for (element e : arr)
    if (e.get_int64().get(tok) == simdjson::SUCCESS) ids.push_back(static_cast<TokenId>(tok));
  return ids;
}

std::string PyRepr(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char q = has_single && !has_double ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == '\\')
      out += "\\\\";
    else if (c == static_cast<unsigned char>(q))
      out += std::string("\\") + static_cast<char>(q);
    else if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\t')
      out += "\\t";
    else if (c < 0x20 || c == 0x7f)
      out += fmt::format("\\x{:02x}", c);
    else
      out += static_cast<char>(c);
  }
  out += q;
  return out;
}
std::string PyFloat(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e16)
    return fmt::format("{:.1f}", v);
  return fmt::format("{}", v);
}
std::string PyReprTruncated(std::string_view s, std::size_t max_length) {
  if (s.size() <= max_length) return PyRepr(s);
  std::size_t half = max_length / 2;
  return PyRepr(s.substr(0, half)) + " ... " + PyRepr(s.substr(s.size() - half));
}

double WallSeconds(std::uint64_t ns) { return static_cast<double>(ns) / 1e9; }

std::optional<object> BodyObject(simdjson::dom::parser& parser, const HttpRequest& req) {
  element doc;
  object body;
  if (parser.parse(req.body()).get(doc) != simdjson::SUCCESS ||
      doc.get_object().get(body) != simdjson::SUCCESS)
    return std::nullopt;
  return body;
}

std::string ValidationMessage(std::string_view type, std::string_view loc, std::string_view msg,
                              std::string_view input) {
  return "[{'type': '" + std::string(type) + "', 'loc': (" + std::string(loc) + "), 'msg': '" +
         std::string(msg) + "', 'input': " + std::string(input) + "}]";
}

// meta_info.finish_reason of the native API.
void FinishReasonObject(JsonWriter& w, FinishReason r, const std::string& stop, int tokens) {
  if (r == FinishReason::kNone) {
    w.Null();
    return;
  }
  w.BeginObject().Key("type").String(FinishReasonName(r));
  if (r == FinishReason::kStop) {
    w.Key("matched");
    if (stop.empty())
      w.Int(kEosTokenId);
    else
      w.String(stop);
  } else if (r == FinishReason::kLength) {
    w.Key("length").Int(tokens);
  }
  w.EndObject();
}

namespace {

std::string LocalTimestamp() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

}  // namespace

SglangSurface::SglangSurface(Engine* engine, SglangSurfaceOptions options)
    : engine_(engine),
      o_(std::move(options)),
      era_(o_.version),
      trace_level_(o_.initial_trace_level) {
  if (!o_.env) o_.env = ProcessEnv();
  if (era_.pp_rank) {
    // --trace-modules filters contexts by module name; requests belong to "request".
    request_module_ = false;
    std::string_view list = o_.flags.trace_modules;
    while (!list.empty()) {
      auto comma = list.find(',');
      std::string_view m = list.substr(0, comma);
      while (!m.empty() && m.front() == ' ') m.remove_prefix(1);
      while (!m.empty() && m.back() == ' ') m.remove_suffix(1);
      request_module_ = request_module_ || m == "request";
      if (comma == std::string_view::npos) break;
      list.remove_prefix(comma + 1);
    }
  }
  log_.log_requests = o_.flags.log_requests;
  log_.level = o_.flags.log_requests_level >= 0 ? o_.flags.log_requests_level
                                                : era_.default_log_requests_level;
  log_.format = o_.flags.log_requests_format;
  log_.log_level = o_.flags.log_level;
  if (!o_.log_sink) {
    o_.log_sink = [](const std::string& line) {
      std::cerr << line << '\n';
      std::cerr.flush();
    };
  }
}

SglangSurface::~SglangSurface() = default;

SglangSurface::LogConfig SglangSurface::log_config() const {
  std::lock_guard lk(log_mu_);
  return log_;
}

void SglangSurface::Log(const std::string& message) {
  std::lock_guard lk(log_mu_);
  o_.log_sink("[" + LocalTimestamp() + "] " + message);
}

net::awaitable<bool> SglangSurface::Json(HttpConnection& conn, HttpRequest& req,
                                         http::status status, std::string body) {
  co_return co_await conn.Reply(status, "application/json", std::move(body), req.keep_alive());
}

net::awaitable<bool> SglangSurface::Error(HttpConnection& conn, HttpRequest& req,
                                          http::status status, std::string_view type,
                                          std::string_view message) {
  JsonWriter w;
  w.BeginObject().Key("object").String("error").Key("message").String(message);
  w.Key("type").String(type).Key("param").Null().Key("code").Int(static_cast<int>(status));
  w.EndObject();
  co_return co_await Json(conn, req, status, w.Take());
}

net::awaitable<void> SglangSurface::Sleep(std::chrono::nanoseconds d) {
  net::steady_timer t(co_await net::this_coro::executor);
  t.expires_after(d);
  boost::system::error_code ec;
  co_await t.async_wait(net::redirect_error(net::use_awaitable, ec));
}

// ---------------------------------------------------------------------------------------------
// Routing.

net::awaitable<bool> SglangSurface::Handle(HttpConnection& conn, HttpRequest& req) {
  const std::string_view path = PathOf(req.target());
  const bool get = req.method() == http::verb::get;
  const bool post = req.method() == http::verb::post;
  const bool put = req.method() == http::verb::put;
  auto method_not_allowed = [&]() -> net::awaitable<bool> {
    co_return co_await Json(conn, req, http::status::method_not_allowed,
                            R"({"detail":"Method Not Allowed"})");
  };

  if (path == "/health" || path == "/health_generate") {
    if (!get) co_return co_await method_not_allowed();
    co_return co_await Health(conn, req);
  }
  if (path == "/v1/models") {
    if (!get) co_return co_await method_not_allowed();
    co_return co_await Json(conn, req, http::status::ok, ModelsJson());
  }
  if (path == "/model_info" || path == "/get_model_info") {
    if (!get) co_return co_await method_not_allowed();
    JsonWriter w;
    w.BeginObject().Key("model_path").String(o_.model_path);
    w.Key("tokenizer_path").String(o_.model_path).Key("is_generation").Bool(true);
    w.Key("preferred_sampling_params").Null();
    w.Key("weight_version").String(o_.flags.weight_version);
    w.Key("has_image_understanding").Bool(false).Key("has_audio_understanding").Bool(false);
    w.Key("model_type").String("qwen2");
    w.Key("architectures").BeginArray().String("Qwen2ForCausalLM").EndArray().EndObject();
    co_return co_await Json(conn, req, http::status::ok, w.Take());
  }
  if (path == "/server_info" || path == "/get_server_info") {
    if (!get) co_return co_await method_not_allowed();
    co_return co_await Json(conn, req, http::status::ok, ServerInfoJson());
  }
  if ((path == "/metrics" || path == "/metrics/") && o_.metrics) {
    if (!get) co_return co_await method_not_allowed();
    co_return co_await conn.Reply(http::status::ok, kPrometheusContentType, o_.metrics->Render(),
                                  req.keep_alive());
  }
  if (path == "/set_trace_level" && era_.trace_levels) {
    if (!get && !post) co_return co_await method_not_allowed();
    co_return co_await SetTraceLevel(conn, req);
  }
  if (path == "/configure_logging") {
    if (!get && !post) co_return co_await method_not_allowed();
    co_return co_await ConfigureLogging(conn, req);
  }
  if (path == "/_sim/stats") {
    if (!get) co_return co_await method_not_allowed();
    co_return co_await Json(conn, req, http::status::ok, StatsJson());
  }
  if (path == "/v1/chat/completions" || path == "/v1/completions") {
    if (!post) co_return co_await method_not_allowed();
    co_return co_await OpenAi(conn, req, path == "/v1/chat/completions");
  }
  if (path == "/generate") {
    if (!post && !put) co_return co_await method_not_allowed();
    co_return co_await Generate(conn, req);
  }
  co_return co_await Json(conn, req, http::status::not_found, R"({"detail":"Not Found"})");
}

// ---------------------------------------------------------------------------------------------
// Info endpoints.

std::string SglangSurface::ModelsJson() const {
  JsonWriter w;
  w.BeginObject().Key("object").String("list").Key("data").BeginArray();
  w.BeginObject().Key("id").String(o_.served_model_name).Key("object").String("model");
  w.Key("created").Int(std::time(nullptr)).Key("owned_by").String("sglang");
  w.Key("root").String(o_.model_path).Key("parent").Null();
  w.Key("max_model_len").Int(engine_->config().max_model_len);
  w.EndObject().EndArray().EndObject();
  return w.Take();
}

std::string SglangSurface::StatsJson() const {
  EngineStats s = engine_->Stats();
  const LogConfig lc = log_config();
  JsonWriter w;
  w.BeginObject();
  w.Key("running").Int(s.running).Key("waiting").Int(s.waiting);
  w.Key("finished").Int(s.finished).Key("aborted").Int(s.aborted);
  w.Key("preemptions").Int(s.preemptions);
  w.Key("prefix_cache_queries").Int(s.prefix_cache_queries);
  w.Key("prefix_cache_hits").Int(s.prefix_cache_hits);
  w.Key("kv_blocks_used").Int(s.kv_blocks_used).Key("kv_blocks_total").Int(s.kv_blocks_total);
  w.Key("requests_received").Int(s.requests_received);
  w.Key("steps").Int(s.steps);
  // SGLang's live knobs (what /set_trace_level and /configure_logging changed).
  w.Key("engine").String("sglang");
  w.Key("trace_level").Int(trace_level_.load());
  w.Key("tracing_enabled").Bool(o_.spans != nullptr);
  w.Key("log_requests").Bool(lc.log_requests);
  w.Key("log_requests_level").Int(lc.level);
  w.Key("log_requests_format").String(lc.format);
  w.Key("log_level").String(lc.log_level);
  w.Key("client_aborts").Int(static_cast<std::int64_t>(client_aborts_.load()));
  w.Key("health_checks").Int(static_cast<std::int64_t>(health_checks_.load()));
  w.Key("spans_exported").Int(o_.spans ? static_cast<std::int64_t>(o_.spans->exported()) : 0);
  w.Key("spans_dropped").Int(o_.spans ? static_cast<std::int64_t>(o_.spans->dropped()) : 0);
  w.EndObject();
  return w.Take();
}

}  // namespace infertel::sim
