#include "sim/sglang/sglang_surface.h"

#include <fmt/format.h>
#include <simdjson.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cmath>
#include <ctime>
#include <deque>
#include <iostream>
#include <random>

#include "core/clock.h"
#include "sim/engine/tokenizer.h"
#include "sim/json_fields.h"
#include "sim/json_writer.h"
#include "sim/engine/prometheus_text.h"

namespace infertel::sim {
namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

// The end-of-sequence token reported in matched_stop when generation stops by itself
// (Qwen's <|im_end|>, matching the ChatML-style template the simulator renders).
constexpr std::int64_t kEosTokenId = 151645;
// Non-streaming requests still get an internal output every this many tokens.
constexpr int kForceStreamInterval = 50;

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

std::string EscapeInner(std::string_view s) {
  std::string out;
  AppendJsonString(&out, s);
  return out.substr(1, out.size() - 2);
}

// Python's repr() of a str (the request log prints dataclasses).
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
// repr of a long str the way _dataclass_to_string_truncated shortens it.
std::string PyReprTruncated(std::string_view s, std::size_t max_length) {
  if (s.size() <= max_length) return PyRepr(s);
  std::size_t half = max_length / 2;
  return PyRepr(s.substr(0, half)) + " ... " + PyRepr(s.substr(s.size() - half));
}

double WallSeconds(std::uint64_t ns) { return static_cast<double>(ns) / 1e9; }

// One batch of output the scheduler hands to the tokenizer.
struct Emission {
  int idx = 0;
  std::vector<GeneratedToken> tokens;
  std::string text;
  bool finished = false;
  FinishReason reason = FinishReason::kNone;
  std::string stop_reason;
  RequestRecord record;
  std::uint64_t sent_ns = 0;
};

// How the generated tokens of one choice are split into reasoning, content and tool calls.
struct Router {
  int reasoning_len = 0;  // leading reasoning tokens (0: no reasoning parser)
  int num_calls = 0;      // tool calls (0: no tool parser, or tools not used)
  // Which part token `i` (0-based) belongs to: -2 reasoning, -1 content, k ≥ 0 tool call k.
  int Route(int i) const {
    if (i < reasoning_len) return -2;
    if (num_calls == 0) return -1;
    // The first tool token opens call 0, the next ones go to the last call.
    return std::min(num_calls - 1, i - reasoning_len);
  }
};

struct ToolCallOut {
  std::string id, name, args_text;
  bool started = false, closed = false;
};

// Per-choice response state (connection strand only).
struct ChoiceOut {
  std::string rid;
  bool first_sent = false;
  int tokens = 0;
  int reasoning_tokens = 0;
  std::string reasoning, content, text;
  std::vector<TokenId> ids;
  std::vector<ToolCallOut> calls;
  int cur_call = -1;
  bool finished = false;
  FinishReason reason = FinishReason::kNone;
  std::string stop_reason;
  RequestRecord record;
};

void UsageJson(JsonWriter& w, int prompt, int completion, int cached, bool cache_report,
               int reasoning) {
  w.BeginObject();
  w.Key("prompt_tokens").Int(prompt);
  w.Key("total_tokens").Int(prompt + completion);
  w.Key("completion_tokens").Int(completion);
  w.Key("prompt_tokens_details");
  if (cache_report && cached > 0)
    w.BeginObject().Key("cached_tokens").Int(cached).EndObject();
  else
    w.Null();
  w.Key("reasoning_tokens").Int(reasoning);
  w.EndObject();
}

void MatchedStop(JsonWriter& w, FinishReason reason, const std::string& stop) {
  if (reason != FinishReason::kStop)
    w.Null();
  else if (!stop.empty())
    w.String(stop);
  else
    w.Int(kEosTokenId);
}

std::string FinishName(FinishReason r, bool tool_calls) {
  if (r == FinishReason::kStop && tool_calls) return "tool_calls";
  return FinishReasonName(r);
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

std::string LocalTimestamp() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

}  // namespace

// One engine sequence (one rid).
struct SglReq {
  std::string rid;
  int idx = 0;
  int prompt_index = 0;
  std::vector<TokenId> prompt;
  SamplingSpec spec;
  bool stream = false;
  int stream_interval = 1;
  bool log_metrics = true;
  Router router;
  SglangSpanInput span;
  SglangRootAttrs params;
  std::string log_obj_text, log_obj_json;  // rendered at receive time
  // Engine thread (and the abort path), guarded by mu.
  std::mutex mu;
  bool done = false;
  int total_tokens = 0;
  std::vector<GeneratedToken> pend_tokens;
  std::string pend_text;
  std::uint64_t first_sent_ns = 0, last_sent_ns = 0;
  std::string text;
  std::vector<TokenId> ids;
  RequestRecord record;
  FinishReason reason = FinishReason::kNone;
  std::string stop_reason;
  bool defer_finalize = false;  // PD prefill: the KV transfer ends it, on the strand
};

struct SglJob {
  std::vector<std::unique_ptr<SglReq>> reqs;
  bool stream = false;
  std::mutex mu;
  std::deque<Emission> inbox;
  std::function<void()> waker;
  std::deque<Emission> ready;  // strand only
  int remaining = 0;           // strand only
  bool write_failed = false;   // strand only: the client is gone
};

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

namespace {
// SGLang answers FastAPI's RequestValidationError with 400 and an ErrorResponse.
std::string ValidationMessage(std::string_view type, std::string_view loc, std::string_view msg,
                              std::string_view input = "None") {
  return "[{'type': '" + std::string(type) + "', 'loc': (" + std::string(loc) + "), 'msg': '" +
         std::string(msg) + "', 'input': " + std::string(input) + "}]";
}
}  // namespace

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
// Requests in flight.

bool SglangSurface::Submit(SglJob& job, const std::shared_ptr<SglJob>& self, HttpConnection& conn) {
  job.waker = conn.Waker();
  job.remaining = static_cast<int>(job.reqs.size());
  for (std::size_t i = 0; i < job.reqs.size(); ++i) {
    SglReq& r = *job.reqs[i];
    r.span.timeline.dispatch_start_ns = WallNanos();
    r.span.timeline.dispatch_end_ns = WallNanos();
    SglReq* rp = &r;
    bool ok = engine_->Submit(r.rid, r.prompt, r.spec, [this, self, rp](const RequestOutput& out) {
      OnOutput(self, *rp, out);
    });
    if (!ok) {
      for (std::size_t j = 0; j < i; ++j) engine_->Abort(job.reqs[j]->rid);
      return false;
    }
  }
  return true;
}

void SglangSurface::OnOutput(const std::shared_ptr<SglJob>& job, SglReq& r,
                             const RequestOutput& out) {
  Emission em;
  bool finalize = false;
  {
    std::lock_guard lk(r.mu);
    if (r.done) return;
    auto& steps = r.span.timeline.steps;
    steps.insert(steps.end(), out.steps.begin(), out.steps.end());
    const int before = r.total_tokens;
    r.total_tokens += static_cast<int>(out.tokens.size());
    for (const auto& t : out.tokens) {
      r.pend_tokens.push_back(t);
      r.ids.push_back(t.id);
    }
    r.pend_text += out.text_delta;
    r.text += out.text_delta;
    // When the scheduler hands output to the tokenizer (stream_interval rule; non-streaming
    // requests every 50 tokens), else it waits for the next step.
    bool send = out.finished;
    if (!send) {
      // Some count c in (before, total] with c % iv == want.
      auto crosses = [&](int iv, int want) {
        int c = before + 1;
        c += ((want - c % iv) % iv + iv) % iv;
        return c <= r.total_tokens;
      };
      const int iv = std::max(1, r.stream_interval);
      if (r.stream) {
        send = iv == 1 || crosses(iv, 1);
      } else {
        send = crosses(kForceStreamInterval, 0);
      }
    }
    if (!send) return;
    const std::uint64_t now = WallNanos();
    const int k = static_cast<int>(r.pend_tokens.size());
    if (r.first_sent_ns == 0) {
      r.first_sent_ns = now;
      if (o_.metrics && r.log_metrics) {
        o_.metrics->ObserveFirstToken(WallSeconds(now - r.span.timeline.created_ns), r.stream);
        const RequestRecord& rec = out.record;
        if (rec.scheduled_mono_ns >= rec.arrival_mono_ns)
          o_.metrics->ObserveQueueTime(
              static_cast<double>(rec.scheduled_mono_ns - rec.arrival_mono_ns) / 1e9);
      }
    } else if (o_.metrics && r.log_metrics) {
      o_.metrics->ObserveOutputBatch(WallSeconds(now - r.last_sent_ns), k);
    }
    r.last_sent_ns = now;
    em.tokens = std::move(r.pend_tokens);
    em.text = std::move(r.pend_text);
    r.pend_tokens.clear();
    r.pend_text.clear();
    em.finished = out.finished;
    em.reason = out.finish_reason;
    em.stop_reason = out.stop_reason;
    em.record = out.record;
    em.sent_ns = now;
    if (out.finished) {
      r.record = out.record;
      r.reason = out.finish_reason;
      r.stop_reason = out.stop_reason;
      if (!r.defer_finalize) {
        r.done = true;
        finalize = true;
      }
    }
  }
  if (finalize) Finalize(r, false, "");
  em.idx = r.idx;
  {
    std::lock_guard lk(job->mu);
    job->inbox.push_back(std::move(em));
  }
  job->waker();
}

void SglangSurface::Finalize(SglReq& r, bool aborted, const std::string& abort_message) {
  SglangSpanInput in = r.span;
  SglangRequestTimeline& tl = in.timeline;
  const RequestRecord& rec = r.record;
  tl.mono_to_wall = static_cast<std::int64_t>(rec.arrival_wall_ns) -
                    static_cast<std::int64_t>(rec.arrival_mono_ns);
  const std::uint64_t engine_arrival = rec.arrival_wall_ns;
  if (tl.wait_queue_ns == 0) tl.wait_queue_ns = engine_arrival;
  if (tl.recv_ns == 0) tl.recv_ns = engine_arrival;
  const std::uint64_t now = WallNanos();
  if (tl.completion_ns == 0) {
    tl.completion_ns = rec.finished_mono_ns
                           ? static_cast<std::uint64_t>(
                                 static_cast<std::int64_t>(rec.finished_mono_ns) + tl.mono_to_wall)
                           : now;
  }
  if (tl.finished_ns == 0) tl.finished_ns = std::max(now, tl.completion_ns);
  tl.aborted = aborted;
  tl.abort_message = abort_message;
  in.first_token_ns = r.first_sent_ns;
  if (!aborted) {
    SglangRootAttrs a = r.params;
    a.completion_tokens = rec.generated_tokens;
    a.prompt_tokens = rec.prompt_tokens;
    a.cached_tokens = rec.cached_tokens;
    a.request_id = r.rid;
    a.model = o_.served_model_name;
    a.finish_reason = FinishReasonName(rec.finish_reason);
    in.root = a;
  }
  if (o_.spans && era_.tracing && request_module_) {
    for (Span& s : BuildSglangSpans(in, o_.style)) o_.spans->OnEnd(std::move(s));
  }
  if (o_.metrics && r.log_metrics) {
    if (aborted) {
      o_.metrics->ObserveAborted();
    } else {
      SglangFinishedRequest f;
      f.prompt_tokens = rec.prompt_tokens;
      f.completion_tokens = rec.generated_tokens;
      f.cached_tokens = rec.cached_tokens;
      f.e2e_s = WallSeconds(tl.finished_ns - tl.created_ns);
      f.streaming = r.stream;
      o_.metrics->ObserveFinished(f);
    }
    StageLatencySink stages;
    WalkSchedulerStages(tl, o_.style.overlap_schedule, era_.spec_stages, stages);
    for (const auto& [name, s] : stages.latencies) o_.metrics->ObserveStageLatency(name, s);
  }
  if (!aborted && r.log_metrics) {
    LogConfig lc = log_config();
    if (lc.log_requests) {
      const std::size_t max_len = lc.level == 2 ? 2048 : (std::size_t{1} << 30);
      const bool skip_out = lc.level <= 1;
      if (lc.format == "json") {
        JsonWriter w;
        w.BeginObject().Key("event").String("request.finished").Key("rid").String(r.rid);
        w.Key("obj").Raw(r.log_obj_json.empty() ? "{}" : r.log_obj_json).Key("out").BeginObject();
        if (!skip_out) {
          w.Key("text").String(r.text.size() > max_len
                                   ? r.text.substr(0, max_len / 2) + "..." +
                                         r.text.substr(r.text.size() - max_len / 2)
                                   : r.text);
          w.Key("output_ids").BeginArray();
          for (TokenId t : r.ids) w.Int(t);
          w.EndArray();
        }
        w.Key("meta_info").BeginObject().Key("id").String(r.rid).Key("finish_reason");
        FinishReasonObject(w, rec.finish_reason, r.stop_reason, rec.generated_tokens);
        w.Key("prompt_tokens")
            .Int(rec.prompt_tokens)
            .Key("completion_tokens")
            .Int(rec.generated_tokens);
        w.Key("cached_tokens").Int(rec.cached_tokens);
        w.Key("e2e_latency").Double(WallSeconds(tl.finished_ns - tl.created_ns));
        w.EndObject().EndObject().EndObject();
        Log(w.Take());
      } else {
        std::string out = "{";
        if (!skip_out) {
          std::string ids = "[";
          for (std::size_t i = 0; i < r.ids.size(); ++i)
            ids += (i ? ", " : "") + std::to_string(r.ids[i]);
          ids += "]";
          out += "'text': " + PyReprTruncated(r.text, max_len) + ", 'output_ids': " + ids + ", ";
        }
        std::string fr;
        if (rec.finish_reason == FinishReason::kStop) {
          fr = "{'type': 'stop', 'matched': " +
               (r.stop_reason.empty() ? std::to_string(kEosTokenId) : PyRepr(r.stop_reason)) + "}";
        } else {
          fr = "{'type': 'length', 'length': " + std::to_string(rec.generated_tokens) + "}";
        }
        out += "'meta_info': {'id': " + PyRepr(r.rid) + ", 'finish_reason': " + fr +
               ", 'prompt_tokens': " + std::to_string(rec.prompt_tokens) +
               ", 'weight_version': " + PyRepr(o_.flags.weight_version) +
               ", 'completion_tokens': " + std::to_string(rec.generated_tokens) +
               ", 'cached_tokens': " + std::to_string(rec.cached_tokens) +
               ", 'e2e_latency': " + PyFloat(WallSeconds(tl.finished_ns - tl.created_ns)) + "}}";
        Log("Finish: obj=" + r.log_obj_text + ", out=" + out);
      }
    }
  }
}

net::awaitable<bool> SglangSurface::Next(HttpConnection& conn, SglJob& job) {
  auto take = [&] {
    std::lock_guard lk(job.mu);
    while (!job.inbox.empty()) {
      job.ready.push_back(std::move(job.inbox.front()));
      job.inbox.pop_front();
    }
  };
  auto gone = [&] { return conn.peer_closed() || job.write_failed; };
  take();
  if (!gone() && !job.ready.empty()) co_return true;
  if (!gone()) {
    co_await conn.Wait();
    take();
    if (!gone()) co_return true;
  }

  // The client went away.
  auto abort_unfinished = [&] {
    for (auto& rp : job.reqs) {
      SglReq& r = *rp;
      RequestRecord rec;
      std::vector<StepTrace> pending;
      bool was_waiting = false;
      {
        std::lock_guard lk(r.mu);
        if (r.done) continue;
      }
      if (!engine_->Abort(r.rid, &rec, &pending, &was_waiting)) continue;  // finished meanwhile
      {
        std::lock_guard lk(r.mu);
        if (r.done) continue;
        r.done = true;
        r.record = rec;
        auto& steps = r.span.timeline.steps;
        steps.insert(steps.end(), pending.begin(), pending.end());
      }
      client_aborts_.fetch_add(1);
      Finalize(r, true, was_waiting ? "Abort in waiting queue" : "Aborted");
    }
  };
  if (job.stream) {
    // The StreamingResponse's background task: sleep, then abort every rid.
    co_await Sleep(std::chrono::milliseconds(o_.flags.stream_abort_delay_ms));
    abort_unfinished();
    co_return false;
  }
  // Non-streaming: the waiter notices at its next output or after the wait timeout.
  std::int64_t wait_ms = 4000;
  if (auto v = o_.env("SGLANG_REQUEST_STATE_WAIT_TIMEOUT")) {
    try {
      wait_ms = static_cast<std::int64_t>(std::stod(*v) * 1000);
    } catch (...) {
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    bool all_done = true;
    for (auto& rp : job.reqs) {
      std::lock_guard lk(rp->mu);
      all_done = all_done && rp->done;
    }
    take();
    if (!job.ready.empty() || all_done) break;
    co_await Sleep(std::chrono::milliseconds(5));
  }
  abort_unfinished();
  co_return false;
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

std::string SglangSurface::ServerInfoJson() const {
  // The server arguments as given at start-up (/configure_logging changes the tokenizer's
  // logger, not server_args), then scheduler info and the version.
  const SglangSimOptions& f = o_.flags;
  const EngineConfig& ec = engine_->config();
  auto str_or_null = [](JsonWriter& w, const std::string& s) {
    if (s.empty())
      w.Null();
    else
      w.String(s);
  };
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
  w.Key("speculative_algorithm");
  str_or_null(w, f.speculative_algorithm);
  w.Key("speculative_num_steps");
  if (f.speculative_algorithm.empty())
    w.Null();
  else
    w.Int(f.speculative_num_steps);
  w.Key("speculative_eagle_topk");
  if (f.speculative_algorithm.empty())
    w.Null();
  else
    w.Int(f.speculative_eagle_topk);
  w.Key("speculative_num_draft_tokens");
  if (f.speculative_algorithm.empty())
    w.Null();
  else
    w.Int(f.speculative_num_draft_tokens);
  w.Key("tool_call_parser");
  str_or_null(w, f.tool_call_parser);
  w.Key("reasoning_parser");
  str_or_null(w, f.reasoning_parser);
  w.Key("disable_overlap_schedule").Bool(f.disable_overlap_schedule);
  w.Key("stream_response_default_include_usage").Bool(f.stream_response_default_include_usage);
  w.Key("weight_version").String(f.weight_version);
  const EngineStats s = engine_->Stats();
  w.Key("max_total_num_tokens").Int(static_cast<std::int64_t>(s.kv_blocks_total) * ec.block_size);
  w.Key("max_req_input_len").Int(ec.max_model_len - 1);
  w.Key("internal_states").BeginArray().BeginObject();
  w.Key("num_running_reqs").Int(static_cast<std::int64_t>(s.running));
  w.Key("num_waiting_reqs").Int(static_cast<std::int64_t>(s.waiting));
  w.Key("memory_usage").BeginObject().Key("weight").Double(0.0).Key("kvcache").Double(0.0);
  w.Key("token_capacity").Int(static_cast<std::int64_t>(s.kv_blocks_total) * ec.block_size);
  w.EndObject();
  w.EndObject().EndArray();
  w.Key("version").String(
      fmt::format("{}.{}.{}", o_.version.major, o_.version.minor, o_.version.patch));
  w.EndObject();
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

// ---------------------------------------------------------------------------------------------
// Request intake shared by the OpenAI endpoints and /generate.

namespace {

struct Intake {
  std::vector<std::string> texts;             // prompt texts (empty entries for token prompts)
  std::vector<std::vector<TokenId>> prompts;  // tokenized
  int n = 1;
  std::optional<int> max_new_tokens;
  std::vector<std::string> stop;
  bool ignore_eos = false;
  std::uint64_t seed = 0;
  double temperature = 1.0, top_p = 1.0;
  int top_k = -1;
  bool stream = false;
  int stream_interval = 1;
  std::vector<std::string> user_rids;  // "rid" of the body
  bool rid_is_list = false;
  std::string traceparent, tracestate;
  std::uint64_t bootstrap_room = 0;
  bool batch = false;
};

std::string SamplingRepr(const Intake& in, bool with_interval) {
  std::string stop = "[";
  for (std::size_t i = 0; i < in.stop.size(); ++i) stop += (i ? ", " : "") + PyRepr(in.stop[i]);
  stop += "]";
  std::string s = "{'temperature': " + PyFloat(in.temperature) + ", 'max_new_tokens': " +
                  (in.max_new_tokens ? std::to_string(*in.max_new_tokens) : "None") +
                  ", 'min_new_tokens': 0, 'stop': " + stop + ", 'top_p': " + PyFloat(in.top_p) +
                  ", 'top_k': " + std::to_string(in.top_k) + ", 'n': " + std::to_string(in.n) +
                  ", 'ignore_eos': " + (in.ignore_eos ? "True" : "False");
  if (with_interval) s += ", 'stream_interval': " + std::to_string(in.stream_interval);
  return s + "}";
}

// GenerateReqInput as the request logger prints it, by log level.
std::string ObjText(int level, const std::vector<std::string>& texts, bool batch,
                    const std::string& sampling, const std::vector<std::string>& rids,
                    bool stream) {
  const std::size_t max_len = level == 2 ? 2048 : (std::size_t{1} << 30);
  std::string s = "GenerateReqInput(";
  auto list = [&](const std::vector<std::string>& v, bool truncate) {
    std::string out = "[";
    for (std::size_t i = 0; i < v.size(); ++i)
      out += (i ? ", " : "") + (truncate ? PyReprTruncated(v[i], max_len) : PyRepr(v[i]));
    return out + "]";
  };
  if (level >= 2) {
    s += "text=" +
         (batch ? list(texts, true) : PyReprTruncated(texts.empty() ? "" : texts[0], max_len));
    s += ", input_ids=None, ";
  }
  if (level >= 1) s += "sampling_params=" + sampling + ", ";
  s += "rid=" + (batch ? list(rids, false) : PyRepr(rids.empty() ? "" : rids[0]));
  s += ", return_logprob=False, stream=" + std::string(stream ? "True" : "False") +
       ", log_metrics=True)";
  return s;
}

std::string ObjJson(int level, const std::vector<std::string>& texts, bool batch, const Intake& in,
                    const std::vector<std::string>& rids) {
  JsonWriter w;
  w.BeginObject();
  if (level >= 2) {
    w.Key("text");
    if (batch) {
      w.BeginArray();
      for (const auto& t : texts) w.String(t);
      w.EndArray();
    } else {
      w.String(texts.empty() ? "" : texts[0]);
    }
    w.Key("input_ids").Null();
  }
  if (level >= 1) {
    w.Key("sampling_params").BeginObject().Key("temperature").Double(in.temperature);
    w.Key("max_new_tokens");
    if (in.max_new_tokens)
      w.Int(*in.max_new_tokens);
    else
      w.Null();
    w.Key("top_p").Double(in.top_p).Key("top_k").Int(in.top_k).Key("n").Int(in.n);
    w.Key("ignore_eos").Bool(in.ignore_eos).EndObject();
  }
  w.Key("rid");
  if (batch) {
    w.BeginArray();
    for (const auto& r : rids) w.String(r);
    w.EndArray();
  } else {
    w.String(rids.empty() ? "" : rids[0]);
  }
  w.Key("stream").Bool(in.stream).Key("log_metrics").Bool(true).EndObject();
  return w.Take();
}

// The rids of a request with `total` sequences.
std::vector<std::string> MakeRids(const Intake& in, int total) {
  std::vector<std::string> rids;
  for (int i = 0; i < total; ++i) {
    if (in.rid_is_list && i < static_cast<int>(in.user_rids.size())) {
      rids.push_back(in.user_rids[static_cast<std::size_t>(i)]);
    } else if (!in.rid_is_list && !in.user_rids.empty()) {
      rids.push_back(total == 1 ? in.user_rids[0] : in.user_rids[0] + "_" + std::to_string(i));
    } else {
      rids.push_back(RandomHex(32));  // uuid.uuid4().hex
    }
  }
  return rids;
}

}  // namespace

// Fills job with one SglReq per (prompt, sample); logs the request. Returns an error message
// (SGLang's ValueError text) when a prompt does not fit the context.
static std::optional<std::string> BuildJob(const Intake& in, int context_len, SglJob* job,
                                           std::vector<std::string>* rids_out) {
  for (const auto& p : in.prompts) {
    const int plen = static_cast<int>(p.size());
    if (plen >= context_len) {
      return fmt::format(
          "The input ({} tokens) is longer than the model's context length ({} tokens).", plen,
          context_len);
    }
    if (in.max_new_tokens && plen + *in.max_new_tokens > context_len) {
      return fmt::format(
          "Requested token count exceeds the model's maximum context length of {} tokens. You "
          "requested a total of {} tokens: {} tokens from the input messages and {} tokens for "
          "the completion. Please reduce the number of tokens in the input messages or the "
          "completion to fit within the limit.",
          context_len, plen + *in.max_new_tokens, plen, *in.max_new_tokens);
    }
  }
  const int total = static_cast<int>(in.prompts.size()) * in.n;
  *rids_out = MakeRids(in, total);
  for (int pi = 0; pi < static_cast<int>(in.prompts.size()); ++pi) {
    for (int c = 0; c < in.n; ++c) {
      auto r = std::make_unique<SglReq>();
      const int idx = pi * in.n + c;
      r->rid = (*rids_out)[static_cast<std::size_t>(idx)];
      r->idx = idx;
      r->prompt_index = pi;
      r->prompt = in.prompts[static_cast<std::size_t>(pi)];
      r->spec.max_tokens = in.max_new_tokens ? *in.max_new_tokens : -1;
      r->spec.stop = in.stop;
      r->spec.ignore_eos = in.ignore_eos;
      r->spec.seed = in.seed;
      r->spec.choice_index = c;
      r->stream = in.stream;
      r->stream_interval = in.stream_interval;
      r->params.max_tokens = in.max_new_tokens;
      r->params.temperature = in.temperature;
      r->params.top_p = in.top_p;
      r->params.top_k = in.top_k;
      r->params.n = in.n;
      r->span.traceparent = in.traceparent;
      r->span.tracestate = in.tracestate;
      r->span.timeline.rid = r->rid;
      r->span.timeline.bootstrap_room = in.bootstrap_room;
      job->reqs.push_back(std::move(r));
    }
  }
  return std::nullopt;
}

namespace {

// Chat frames. The first, reasoning, content and finish frames use SGLang's fast encoder
// (reasoning_content always present, null role/content left out, no usage unless asked);
// tool-call frames come from the pydantic model (every delta field, "usage": null).
std::string FastChunk(const std::string& rid, const std::string& model, int index, const char* role,
                      const std::string* content, const std::string* reasoning,
                      const std::string& finish, FinishReason reason, const std::string& stop,
                      const std::string& usage_json) {
  JsonWriter w;
  w.BeginObject().Key("id").String(rid).Key("object").String("chat.completion.chunk");
  w.Key("created").Int(std::time(nullptr)).Key("model").String(model);
  w.Key("choices").BeginArray().BeginObject().Key("index").Int(index).Key("delta").BeginObject();
  w.Key("reasoning_content");
  if (reasoning)
    w.String(*reasoning);
  else
    w.Null();
  if (role) w.Key("role").String(role);
  if (content) w.Key("content").String(*content);
  w.EndObject().Key("logprobs").Null().Key("finish_reason");
  if (finish.empty())
    w.Null();
  else
    w.String(finish);
  w.Key("matched_stop");
  if (finish.empty())
    w.Null();
  else
    MatchedStop(w, reason, stop);
  w.EndObject().EndArray();
  if (!usage_json.empty()) w.Key("usage").Raw(usage_json);
  w.EndObject();
  return w.Take();
}

struct ToolDelta {
  int index = 0;
  const std::string* id = nullptr;
  const std::string* name = nullptr;
  std::string arguments;
};

std::string FullChunk(const std::string& rid, const std::string& model, int index,
                      const std::string* content, const ToolDelta* tool) {
  JsonWriter w;
  w.BeginObject().Key("id").String(rid).Key("object").String("chat.completion.chunk");
  w.Key("created").Int(std::time(nullptr)).Key("model").String(model);
  w.Key("choices").BeginArray().BeginObject().Key("index").Int(index).Key("delta").BeginObject();
  w.Key("role").Null().Key("content");
  if (content)
    w.String(*content);
  else
    w.Null();
  w.Key("reasoning_content").Null().Key("tool_calls");
  if (tool) {
    w.BeginArray().BeginObject().Key("id");
    if (tool->id)
      w.String(*tool->id);
    else
      w.Null();
    w.Key("index").Int(tool->index).Key("type").String("function");
    w.Key("function").BeginObject().Key("name");
    if (tool->name)
      w.String(*tool->name);
    else
      w.Null();
    w.Key("arguments").String(tool->arguments).EndObject().EndObject().EndArray();
  } else {
    w.Null();
  }
  w.EndObject().Key("logprobs").Null().Key("finish_reason").Null().Key("matched_stop").Null();
  w.EndObject().EndArray().Key("usage").Null().EndObject();
  return w.Take();
}

}  // namespace

net::awaitable<bool> SglangSurface::OpenAi(HttpConnection& conn, HttpRequest& req, bool chat) {
  const std::uint64_t created_ns = WallNanos();
  const std::uint64_t func_start = MonoNanos();
  const SglangSimOptions& f = o_.flags;
  {
    std::string ct(req[http::field::content_type]);
    std::transform(ct.begin(), ct.end(), ct.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    std::string media = ct.substr(0, ct.find(';'));
    while (!media.empty() && media.back() == ' ') media.pop_back();
    if (media != "application/json") {
      co_return co_await Error(
          conn, req, http::status::bad_request, "Bad Request",
          ValidationMessage("value_error", "'header', 'content-type'",
                            "Unsupported Media Type: Only 'application/json' is allowed"));
    }
  }
  simdjson::dom::parser parser;
  element doc;
  object body;
  if (parser.parse(req.body()).get(doc) != simdjson::SUCCESS ||
      doc.get_object().get(body) != simdjson::SUCCESS) {
    co_return co_await Error(conn, req, http::status::bad_request, "Bad Request",
                             ValidationMessage("json_invalid", "'body', 0", "JSON decode error"));
  }
  const std::string model = GetStr(body, "model").value_or("default");
  Intake in;

  // Tools and reasoning (chat only).
  struct ToolDef {
    std::string name, param = "input";
  };
  std::vector<ToolDef> tools;
  bool tool_mode = false, parallel_tools = true, reasoning = false;
  if (chat) {
    auto msgs = Field(body, "messages");
    array arr;
    if (!msgs || msgs->get_array().get(arr) != simdjson::SUCCESS) {
      co_return co_await Error(
          conn, req, http::status::bad_request, "Bad Request",
          ValidationMessage("missing", "'body', 'messages'", "Field required"));
    }
    std::string text;
    if (auto te = Field(body, "tools")) {
      array tarr;
      if (te->get_array().get(tarr) == simdjson::SUCCESS && tarr.size() > 0) {
        for (element t : tarr) {
          ToolDef d;
          std::string_view name;
          if (t["function"]["name"].get_string().get(name) == simdjson::SUCCESS)
            d.name = std::string(name);
          object props;
          if (t["function"]["parameters"]["properties"].get_object().get(props) ==
              simdjson::SUCCESS) {
            for (auto [k, v] : props) {
              d.param = std::string(k);
              break;
            }
          }
          tools.push_back(std::move(d));
        }
        text += "<|im_start|>system\n# Tools\n" + simdjson::minify(*te) + "<|im_end|>\n";
      }
    }
    std::string choice = GetStr(body, "tool_choice").value_or(tools.empty() ? "none" : "auto");
    std::string_view named;
    if (body["tool_choice"]["function"]["name"].get_string().get(named) == simdjson::SUCCESS) {
      choice = "named";
      for (auto& t : tools) t.name = std::string(named);
    }
    parallel_tools = GetBool(body, "parallel_tool_calls", true);
    tool_mode = !tools.empty() && choice != "none" && !f.tool_call_parser.empty();
    AppendChatTurns(arr, &text);
    in.texts.push_back(text);
    in.prompts.push_back(Tokenize(text));
    reasoning = !f.reasoning_parser.empty() && GetBool(body, "separate_reasoning", true);
    bool thinking_off = false;
    if (body["chat_template_kwargs"]["enable_thinking"].get_bool().get(thinking_off) ==
            simdjson::SUCCESS &&
        !thinking_off)
      reasoning = false;
    if (GetStr(body, "reasoning_effort").value_or("") == "none") reasoning = false;
  } else {
    auto p = Field(body, "prompt");
    if (!p) {
      co_return co_await Error(conn, req, http::status::bad_request, "Bad Request",
                               ValidationMessage("missing", "'body', 'prompt'", "Field required"));
    }
    std::string_view sv;
    array arr;
    if (p->get_string().get(sv) == simdjson::SUCCESS) {
      in.texts.emplace_back(sv);
      in.prompts.push_back(Tokenize(sv));
    } else if (p->get_array().get(arr) == simdjson::SUCCESS && arr.size() > 0) {
      std::int64_t tok;
      if (arr.at(0).get_int64().get(tok) == simdjson::SUCCESS) {
        std::vector<TokenId> ids;
        for (element e : arr)
          if (e.get_int64().get(tok) == simdjson::SUCCESS) ids.push_back(static_cast<TokenId>(tok));
        in.texts.emplace_back();
        in.prompts.push_back(std::move(ids));
      } else {
        for (element e : arr) {
          array inner;
          if (e.get_string().get(sv) == simdjson::SUCCESS) {
            in.texts.emplace_back(sv);
            in.prompts.push_back(Tokenize(sv));
          } else if (e.get_array().get(inner) == simdjson::SUCCESS) {
            std::vector<TokenId> ids;
            for (element t : inner)
              if (t.get_int64().get(tok) == simdjson::SUCCESS)
                ids.push_back(static_cast<TokenId>(tok));
            in.texts.emplace_back();
            in.prompts.push_back(std::move(ids));
          }
        }
        in.batch = in.prompts.size() > 1;
      }
    }
    if (in.prompts.empty() || in.prompts[0].empty()) {
      co_return co_await Error(conn, req, http::status::bad_request, "BadRequestError",
                               "The input is empty.");
    }
  }

  in.n = static_cast<int>(GetInt(body, "n").value_or(1));
  if (in.n < 1) {
    co_return co_await Error(conn, req, http::status::bad_request, "BadRequestError",
                             "n must be at least 1.");
  }
  std::optional<std::int64_t> mt = GetInt(body, "max_completion_tokens");
  if (!mt) mt = GetInt(body, "max_tokens");
  if (!chat && !mt) mt = 16;
  if (mt && *mt <= 0) {
    co_return co_await Error(
        conn, req, http::status::bad_request, "Bad Request",
        ValidationMessage("value_error", "'body', 'max_tokens'",
                          "Value error, max_tokens must be positive", std::to_string(*mt)));
  }
  if (mt) in.max_new_tokens = static_cast<int>(*mt);
  in.stop = GetStrList(body, "stop");
  in.ignore_eos = GetBool(body, "ignore_eos", false);
  in.seed = static_cast<std::uint64_t>(GetInt(body, "seed").value_or(0));
  in.temperature = GetDouble(body, "temperature").value_or(1.0);
  in.top_p = GetDouble(body, "top_p").value_or(1.0);
  in.top_k = static_cast<int>(GetInt(body, "top_k").value_or(-1));
  in.stream = GetBool(body, "stream", false);
  in.stream_interval = f.stream_interval;
  bool include_usage = f.stream_response_default_include_usage, continuous_usage = false;
  if (auto so = Field(body, "stream_options")) {
    object soo;
    if (so->get_object().get(soo) == simdjson::SUCCESS) {
      include_usage = GetBool(soo, "include_usage", include_usage);
      continuous_usage = GetBool(soo, "continuous_usage_stats", false);
    }
  }
  in.user_rids = GetStrList(body, "rid");
  if (auto re = Field(body, "rid")) in.rid_is_list = re->is_array();
  if (auto it = req.find("traceparent"); it != req.end()) in.traceparent = std::string(it->value());
  if (auto it = req.find("tracestate"); it != req.end()) in.tracestate = std::string(it->value());
  in.bootstrap_room = static_cast<std::uint64_t>(GetInt(body, "bootstrap_room").value_or(0));

  auto job = std::make_shared<SglJob>();
  job->stream = in.stream;
  std::vector<std::string> rids;
  if (auto err = BuildJob(in, engine_->config().max_model_len, job.get(), &rids)) {
    co_return co_await Error(conn, req, http::status::bad_request, "BadRequestError", *err);
  }
  const std::uint64_t tokenized_ns = WallNanos();
  const LogConfig lc = log_config();
  const std::string sampling = SamplingRepr(in, false);
  for (auto& r : job->reqs) {
    r->span.timeline.created_ns = created_ns;
    r->span.timeline.tokenize_end_ns = tokenized_ns;
    r->span.trace_level = trace_level_.load();
    Router rt;
    if (reasoning) rt.reasoning_len = 2 + static_cast<int>(std::hash<std::string>{}(r->rid) % 5);
    if (tool_mode) rt.num_calls = parallel_tools ? 2 : 1;
    r->router = rt;
    if (lc.log_requests) {
      const std::string& t = in.texts[static_cast<std::size_t>(r->prompt_index)];
      r->log_obj_text = ObjText(lc.level, {t}, false, sampling, {r->rid}, in.stream);
      r->log_obj_json = ObjJson(lc.level, {t}, false, in, {r->rid});
    }
  }
  if (lc.log_requests) {
    const bool batch = job->reqs.size() > 1;
    std::vector<std::string> texts;
    for (auto& r : job->reqs) texts.push_back(in.texts[static_cast<std::size_t>(r->prompt_index)]);
    if (lc.format == "json") {
      JsonWriter w;
      w.BeginObject().Key("event").String("request.received").Key("rid");
      if (batch) {
        w.BeginArray();
        for (auto& r : rids) w.String(r);
        w.EndArray();
      } else {
        w.String(rids[0]);
      }
      w.Key("obj").Raw(ObjJson(lc.level, texts, batch, in, rids)).EndObject();
      Log(w.Take());
    } else {
      Log("Receive: obj=" + ObjText(lc.level, texts, batch, sampling, rids, in.stream));
    }
  }
  co_await PdIntake(*job);
  if (!Submit(*job, job, conn)) {
    co_return co_await Error(conn, req, http::status::internal_server_error, "InternalServerError",
                             "The engine refused the request.");
  }
  requests_.fetch_add(1);
  conn.StartDisconnectWatch();

  std::vector<ChoiceOut> ch(job->reqs.size());
  for (std::size_t i = 0; i < ch.size(); ++i) {
    ch[i].rid = job->reqs[i]->rid;
    const int calls = job->reqs[i]->router.num_calls;
    for (int k = 0; k < calls && !tools.empty(); ++k) {
      ToolCallOut t;
      t.id = "call_" + RandomHex(24);
      t.name = tools[static_cast<std::size_t>(k) % tools.size()].name;
      ch[i].calls.push_back(std::move(t));
    }
  }
  auto param_of = [&](int k) {
    return tools.empty() ? std::string("input")
                         : tools[static_cast<std::size_t>(k) % tools.size()].param;
  };
  auto send = [&](const std::string& json) -> net::awaitable<bool> {
    co_return co_await conn.WriteChunk("data: " + json + "\n\n");
  };
  auto usage_for = [&](const std::vector<int>& which) {
    // Prompt and cached tokens once per prompt, completion and reasoning per choice.
    int prompt = 0, completion = 0, cached = 0, reasoning_tokens = 0;
    for (int i : which) {
      const SglReq& r = *job->reqs[static_cast<std::size_t>(i)];
      if (i % in.n == 0) {
        prompt += static_cast<int>(r.prompt.size());
        cached += ch[static_cast<std::size_t>(i)].record.cached_tokens;
      }
      completion += ch[static_cast<std::size_t>(i)].tokens;
      reasoning_tokens += ch[static_cast<std::size_t>(i)].reasoning_tokens;
    }
    JsonWriter w;
    UsageJson(w, prompt, completion, cached, f.enable_cache_report, reasoning_tokens);
    return w.Take();
  };
  std::vector<int> all;
  for (int i = 0; i < static_cast<int>(ch.size()); ++i) all.push_back(i);

  if (in.stream && !co_await conn.BeginStream(http::status::ok, "text/event-stream; charset=utf-8",
                                              req.keep_alive())) {
    co_return false;
  }
  std::vector<int> finish_order;
  std::string last_rid = ch.empty() ? "" : ch[0].rid;
  while (job->remaining > 0) {
    if (!co_await Next(conn, *job)) co_return false;
    while (!job->ready.empty()) {
      Emission em = std::move(job->ready.front());
      job->ready.pop_front();
      const int idx = em.idx;
      ChoiceOut& c = ch[static_cast<std::size_t>(idx)];
      SglReq& r = *job->reqs[static_cast<std::size_t>(idx)];
      last_rid = c.rid;
      std::vector<std::string> frames;
      if (in.stream && chat && !c.first_sent) {
        const std::string empty;
        frames.push_back(FastChunk(c.rid, model, idx, "assistant", &empty, nullptr, "",
                                   FinishReason::kNone, "", ""));
      }
      c.first_sent = true;
      // Split the text over the tokens (a stop string may have cut the last ones short).
      std::size_t pos = 0;
      struct Group {
        int route;
        std::string text;
      };
      std::vector<Group> groups;
      for (const auto& t : em.tokens) {
        const int route = chat ? r.router.Route(c.tokens) : -1;
        std::string piece = pos < em.text.size() ? em.text.substr(pos, t.text.size()) : "";
        pos += piece.size();
        if (route == -2) ++c.reasoning_tokens;
        ++c.tokens;
        c.ids.push_back(t.id);
        if (groups.empty() || groups.back().route != route)
          groups.push_back({route, piece});
        else
          groups.back().text += piece;
      }
      if (pos < em.text.size() && !groups.empty()) groups.back().text += em.text.substr(pos);
      const std::string usage_now = continuous_usage ? usage_for({idx}) : "";
      for (const Group& g : groups) {
        c.text += g.text;
        if (g.route == -2) {
          c.reasoning += g.text;
          if (in.stream && !g.text.empty())
            frames.push_back(FastChunk(c.rid, model, idx, nullptr, nullptr, &g.text, "",
                                       FinishReason::kNone, "", usage_now));
        } else if (g.route == -1) {
          c.content += g.text;
          if (!in.stream || g.text.empty()) continue;
          if (!chat) {
            JsonWriter w;
            w.BeginObject().Key("id").String(c.rid).Key("object").String("text_completion");
            w.Key("created").Int(std::time(nullptr)).Key("model").String(model);
            w.Key("choices").BeginArray().BeginObject().Key("index").Int(idx);
            w.Key("text").String(g.text).Key("logprobs").Null();
            const bool last = em.finished && &g == &groups.back();
            w.Key("finish_reason");
            if (last)
              w.String(FinishName(em.reason, false));
            else
              w.Null();
            w.Key("matched_stop");
            if (last)
              MatchedStop(w, em.reason, em.stop_reason);
            else
              w.Null();
            w.EndObject().EndArray().Key("usage");
            if (continuous_usage)
              w.Raw(usage_now);
            else
              w.Null();
            w.EndObject();
            frames.push_back(w.Take());
          } else if (c.calls.empty()) {
            frames.push_back(FastChunk(c.rid, model, idx, nullptr, &g.text, nullptr, "",
                                       FinishReason::kNone, "", usage_now));
          } else {
            frames.push_back(FullChunk(c.rid, model, idx, &g.text, nullptr));
          }
        } else {
          const int k = g.route;
          if (c.cur_call >= 0 && c.cur_call != k && !c.calls[c.cur_call].closed) {
            c.calls[c.cur_call].args_text += "\"}";
            c.calls[c.cur_call].closed = true;
            ToolDelta d{c.cur_call, nullptr, nullptr, "\"}"};
            if (in.stream) frames.push_back(FullChunk(c.rid, model, idx, nullptr, &d));
          }
          c.cur_call = k;
          ToolCallOut& call = c.calls[static_cast<std::size_t>(k)];
          std::string args;
          if (!call.started) {
            call.started = true;
            ToolDelta head{k, &call.id, &call.name, ""};
            if (in.stream) frames.push_back(FullChunk(c.rid, model, idx, nullptr, &head));
            args = "{\"" + EscapeInner(param_of(k)) + "\": \"";
          }
          args += EscapeInner(g.text);
          call.args_text += args;
          ToolDelta d{k, nullptr, nullptr, args};
          if (in.stream && !args.empty())
            frames.push_back(FullChunk(c.rid, model, idx, nullptr, &d));
        }
      }
      if (em.finished) {
        if (c.cur_call >= 0 && !c.calls[c.cur_call].closed) {
          c.calls[c.cur_call].args_text += "\"}";
          c.calls[c.cur_call].closed = true;
          ToolDelta d{c.cur_call, nullptr, nullptr, "\"}"};
          if (in.stream) frames.push_back(FullChunk(c.rid, model, idx, nullptr, &d));
        }
        c.finished = true;
        c.reason = em.reason;
        c.stop_reason = em.stop_reason;
        c.record = em.record;
        finish_order.push_back(idx);
        --job->remaining;
        co_await PdFinish(r, job.get());
        if (in.stream && !chat && groups.empty()) {
          // A completion whose last step produced no visible text still reports its finish.
          JsonWriter w;
          w.BeginObject().Key("id").String(c.rid).Key("object").String("text_completion");
          w.Key("created").Int(std::time(nullptr)).Key("model").String(model);
          w.Key("choices").BeginArray().BeginObject().Key("index").Int(idx);
          w.Key("text").String("").Key("logprobs").Null();
          w.Key("finish_reason").String(FinishName(em.reason, false)).Key("matched_stop");
          MatchedStop(w, em.reason, em.stop_reason);
          w.EndObject().EndArray().Key("usage").Null().EndObject();
          frames.push_back(w.Take());
        }
      } else {
        c.record = em.record;
      }
      for (const auto& fr : frames) {
        if (job->write_failed) break;
        // A failed write is a disconnect; the next wait aborts.
        if (!co_await send(fr)) job->write_failed = true;
      }
    }
  }
  if (o_.metrics)
    o_.metrics->ObserveFuncLatency(static_cast<double>(MonoNanos() - func_start) / 1e9);

  if (in.stream) {
    if (chat) {
      for (int idx : finish_order) {
        const ChoiceOut& c = ch[static_cast<std::size_t>(idx)];
        if (!co_await send(FastChunk(c.rid, model, idx, nullptr, nullptr, nullptr,
                                     FinishName(c.reason, !c.calls.empty() && c.calls[0].started),
                                     c.reason, c.stop_reason, "")))
          co_return false;
      }
    }
    if (include_usage) {
      JsonWriter w;
      w.BeginObject().Key("id").String(last_rid);
      w.Key("object").String(chat ? "chat.completion.chunk" : "text_completion");
      w.Key("created").Int(std::time(nullptr)).Key("model").String(model);
      w.Key("choices").BeginArray().EndArray().Key("usage").Raw(usage_for(all)).EndObject();
      if (!co_await send(w.Take())) co_return false;
    }
    if (!co_await send("[DONE]")) co_return false;
    co_return co_await conn.EndStream();
  }

  JsonWriter w;
  w.BeginObject().Key("id").String(ch.empty() ? "" : ch[0].rid);
  w.Key("object").String(chat ? "chat.completion" : "text_completion");
  w.Key("created").Int(std::time(nullptr)).Key("model").String(model);
  w.Key("choices").BeginArray();
  for (int i = 0; i < static_cast<int>(ch.size()); ++i) {
    const ChoiceOut& c = ch[static_cast<std::size_t>(i)];
    const bool called = !c.calls.empty() && c.calls[0].started;
    w.BeginObject().Key("index").Int(i);
    if (chat) {
      w.Key("message").BeginObject().Key("role").String("assistant").Key("content");
      if (called && c.content.empty())
        w.Null();
      else
        w.String(c.content);
      w.Key("reasoning_content");
      if (c.reasoning.empty())
        w.Null();
      else
        w.String(c.reasoning);
      w.Key("tool_calls");
      if (called) {
        w.BeginArray();
        for (std::size_t k = 0; k < c.calls.size(); ++k) {
          const ToolCallOut& t = c.calls[k];
          if (!t.started) continue;
          w.BeginObject().Key("id").String(t.id).Key("index").Int(static_cast<int>(k));
          w.Key("type").String("function").Key("function").BeginObject();
          w.Key("name").String(t.name).Key("arguments").String(t.args_text).EndObject().EndObject();
        }
        w.EndArray();
      } else {
        w.Null();
      }
      w.EndObject();
    } else {
      w.Key("text").String(c.content);
    }
    w.Key("logprobs").Null().Key("finish_reason").String(FinishName(c.reason, called));
    w.Key("matched_stop");
    MatchedStop(w, c.reason, c.stop_reason);
    w.EndObject();
  }
  w.EndArray().Key("usage").Raw(usage_for(all));
  w.Key("metadata").BeginObject().Key("weight_version").String(f.weight_version).EndObject();
  w.EndObject();
  co_return co_await Json(conn, req, http::status::ok, w.Take());
}

// ---------------------------------------------------------------------------------------------
// PD disaggregation: the intake queues before the waiting queue, and the prefill node's KV
// transfer after its forward pass. Their durations are simulated (scaled by --speed).

net::awaitable<void> SglangSurface::PdIntake(SglJob& job) {
  const std::string& mode = o_.flags.disaggregation_mode;
  if (mode != "prefill" && mode != "decode") co_return;
  const double speed = engine_->config().speed;
  auto scaled = [&](double ms) {
    return std::chrono::nanoseconds(static_cast<std::int64_t>(ms / speed * 1e6));
  };
  std::uint64_t prompt = 0;
  for (auto& r : job.reqs) {
    prompt += r->prompt.size();
    if (r->span.timeline.bootstrap_room == 0) {
      thread_local std::mt19937_64 rng{std::random_device{}()};
      r->span.timeline.bootstrap_room = rng() >> 1;
    }
    r->span.timeline.role = mode;
    r->span.timeline.recv_ns = WallNanos();
  }
  for (auto& r : job.reqs) r->span.timeline.pd_queue1_ns = WallNanos();
  pd_first_.fetch_add(static_cast<int>(job.reqs.size()));
  if (o_.metrics) o_.metrics->SetPdQueues(pd_first_.load(), pd_second_.load());
  co_await Sleep(scaled(2.0));  // bootstrap handshake with the peer
  pd_first_.fetch_sub(static_cast<int>(job.reqs.size()));
  if (mode == "decode") {
    for (auto& r : job.reqs) r->span.timeline.pd_queue2_ns = WallNanos();
    pd_second_.fetch_add(static_cast<int>(job.reqs.size()));
    if (o_.metrics) o_.metrics->SetPdQueues(pd_first_.load(), pd_second_.load());
    co_await Sleep(scaled(0.5 + 0.01 * static_cast<double>(prompt)));  // KV arrives
    pd_second_.fetch_sub(static_cast<int>(job.reqs.size()));
  } else {
    // The prefill node computes the prompt and the first token only.
    for (auto& r : job.reqs) {
      r->spec.max_tokens = 1;
      r->defer_finalize = true;
    }
  }
  if (o_.metrics) o_.metrics->SetPdQueues(pd_first_.load(), pd_second_.load());
}

net::awaitable<void> SglangSurface::PdFinish(SglReq& r, SglJob*) {
  {
    std::lock_guard lk(r.mu);
    if (!r.defer_finalize || r.done) co_return;
  }
  const double speed = engine_->config().speed;
  const std::uint64_t start = WallNanos();
  pd_second_.fetch_add(1);
  if (o_.metrics) o_.metrics->SetPdQueues(pd_first_.load(), pd_second_.load());
  co_await Sleep(std::chrono::nanoseconds(static_cast<std::int64_t>(
      (0.5 + 0.01 * static_cast<double>(r.prompt.size())) / speed * 1e6)));
  pd_second_.fetch_sub(1);
  if (o_.metrics) o_.metrics->SetPdQueues(pd_first_.load(), pd_second_.load());
  {
    std::lock_guard lk(r.mu);
    if (r.done) co_return;
    r.done = true;
    r.span.timeline.transfer_start_ns = start;
    r.span.timeline.transfer_end_ns = WallNanos();
    r.span.timeline.completion_ns = r.span.timeline.transfer_end_ns;
  }
  Finalize(r, false, "");
}

// ---------------------------------------------------------------------------------------------
// The native /generate.

net::awaitable<bool> SglangSurface::Generate(HttpConnection& conn, HttpRequest& req) {
  const std::uint64_t created_ns = WallNanos();
  const std::uint64_t func_start = MonoNanos();
  const SglangSimOptions& f = o_.flags;
  auto fail = [&](const std::string& message) -> net::awaitable<bool> {
    JsonWriter w;
    w.BeginObject()
        .Key("error")
        .BeginObject()
        .Key("message")
        .String(message)
        .EndObject()
        .EndObject();
    co_return co_await Json(conn, req, http::status::bad_request, w.Take());
  };
  simdjson::dom::parser parser;
  element doc;
  object body;
  if (parser.parse(req.body()).get(doc) != simdjson::SUCCESS ||
      doc.get_object().get(body) != simdjson::SUCCESS) {
    co_return co_await Error(conn, req, http::status::bad_request, "Bad Request",
                             ValidationMessage("json_invalid", "'body', 0", "JSON decode error"));
  }
  Intake in;
  if (auto t = Field(body, "text")) {
    std::string_view sv;
    array arr;
    if (t->get_string().get(sv) == simdjson::SUCCESS) {
      in.texts.emplace_back(sv);
    } else if (t->get_array().get(arr) == simdjson::SUCCESS) {
      in.batch = true;
      for (element e : arr)
        if (e.get_string().get(sv) == simdjson::SUCCESS) in.texts.emplace_back(sv);
    }
    for (const auto& s : in.texts) in.prompts.push_back(Tokenize(s));
  } else if (auto ids = Field(body, "input_ids")) {
    array arr;
    if (ids->get_array().get(arr) == simdjson::SUCCESS && arr.size() > 0) {
      std::int64_t tok;
      if (arr.at(0).get_int64().get(tok) == simdjson::SUCCESS) {
        std::vector<TokenId> v;
        for (element e : arr)
          if (e.get_int64().get(tok) == simdjson::SUCCESS) v.push_back(static_cast<TokenId>(tok));
        in.prompts.push_back(std::move(v));
        in.texts.emplace_back();
      } else {
        in.batch = true;
        for (element e : arr) {
          array inner;
          if (e.get_array().get(inner) != simdjson::SUCCESS) continue;
          std::vector<TokenId> v;
          for (element t : inner)
            if (t.get_int64().get(tok) == simdjson::SUCCESS) v.push_back(static_cast<TokenId>(tok));
          in.prompts.push_back(std::move(v));
          in.texts.emplace_back();
        }
      }
    }
  }
  if (in.prompts.empty()) {
    co_return co_await fail("Either text, input_ids or input_embeds should be provided.");
  }
  object sp;
  const bool has_sp = body["sampling_params"].get_object().get(sp) == simdjson::SUCCESS;
  in.max_new_tokens = 128;  // SamplingParams' default
  in.stream_interval = f.stream_interval;
  if (has_sp) {
    if (auto v = GetInt(sp, "max_new_tokens")) in.max_new_tokens = static_cast<int>(*v);
    in.stop = GetStrList(sp, "stop");
    in.ignore_eos = GetBool(sp, "ignore_eos", false);
    in.temperature = GetDouble(sp, "temperature").value_or(1.0);
    in.top_p = GetDouble(sp, "top_p").value_or(1.0);
    in.top_k = static_cast<int>(GetInt(sp, "top_k").value_or(-1));
    in.n = static_cast<int>(GetInt(sp, "n").value_or(1));
    in.seed = static_cast<std::uint64_t>(GetInt(sp, "sampling_seed").value_or(0));
    if (auto v = GetInt(sp, "stream_interval")) in.stream_interval = static_cast<int>(*v);
  }
  if (in.max_new_tokens && *in.max_new_tokens < 0) {
    co_return co_await fail("max_new_tokens must be at least 0, got " +
                            std::to_string(*in.max_new_tokens) + ".");
  }
  if (in.n < 1) co_return co_await fail("n must be at least 1.");
  in.stream = GetBool(body, "stream", false);
  in.user_rids = GetStrList(body, "rid");
  if (auto re = Field(body, "rid")) in.rid_is_list = re->is_array();
  in.bootstrap_room = static_cast<std::uint64_t>(GetInt(body, "bootstrap_room").value_or(0));
  // An external_trace_header in the body wins over the HTTP headers.
  object eth;
  if (body["external_trace_header"].get_object().get(eth) == simdjson::SUCCESS) {
    in.traceparent = GetStr(eth, "traceparent").value_or("");
    in.tracestate = GetStr(eth, "tracestate").value_or("");
  } else {
    if (auto it = req.find("traceparent"); it != req.end())
      in.traceparent = std::string(it->value());
    if (auto it = req.find("tracestate"); it != req.end()) in.tracestate = std::string(it->value());
  }
  auto job = std::make_shared<SglJob>();
  job->stream = in.stream;
  std::vector<std::string> rids;
  if (auto err = BuildJob(in, engine_->config().max_model_len, job.get(), &rids)) {
    co_return co_await fail(*err);
  }
  const std::uint64_t tokenized_ns = WallNanos();
  const LogConfig lc = log_config();
  const std::string sampling =
      SamplingRepr(in, has_sp && GetInt(sp, "stream_interval").has_value());
  for (auto& r : job->reqs) {
    r->span.timeline.created_ns = created_ns;
    r->span.timeline.tokenize_end_ns = tokenized_ns;
    r->span.trace_level = trace_level_.load();
    if (!f.reasoning_parser.empty())
      r->router.reasoning_len = 2 + static_cast<int>(std::hash<std::string>{}(r->rid) % 5);
    if (lc.log_requests) {
      const std::string& t = in.texts[static_cast<std::size_t>(r->prompt_index)];
      r->log_obj_text = ObjText(lc.level, {t}, false, sampling, {r->rid}, in.stream);
      r->log_obj_json = ObjJson(lc.level, {t}, false, in, {r->rid});
    }
  }
  if (lc.log_requests) {
    const bool batch = job->reqs.size() > 1;
    std::vector<std::string> texts;
    for (auto& r : job->reqs) texts.push_back(in.texts[static_cast<std::size_t>(r->prompt_index)]);
    if (lc.format == "json") {
      JsonWriter w;
      w.BeginObject().Key("event").String("request.received").Key("rid").String(rids[0]);
      w.Key("obj").Raw(ObjJson(lc.level, texts, batch, in, rids)).EndObject();
      Log(w.Take());
    } else {
      Log("Receive: obj=" + ObjText(lc.level, texts, batch, sampling, rids, in.stream));
    }
  }
  co_await PdIntake(*job);
  if (!Submit(*job, job, conn)) co_return co_await fail("The engine refused the request.");
  requests_.fetch_add(1);
  conn.StartDisconnectWatch();

  struct Out {
    std::string text;
    std::vector<TokenId> ids;
    int tokens = 0;
    FinishReason reason = FinishReason::kNone;
    std::string stop;
    RequestRecord record;
    bool finished = false;
    std::uint64_t finished_ns = 0;
  };
  std::vector<Out> outs(job->reqs.size());
  const bool batch = outs.size() > 1;
  const bool metrics_meta = f.enable_metrics;
  auto meta = [&](JsonWriter& w, std::size_t i, std::size_t delta_from) {
    const Out& o = outs[i];
    const SglReq& r = *job->reqs[i];
    const SglangRequestTimeline& tl = r.span.timeline;
    w.BeginObject();
    w.Key("id").String(r.rid).Key("finish_reason");
    FinishReasonObject(w, o.finished ? o.reason : FinishReason::kNone, o.stop, o.tokens);
    w.Key("prompt_tokens").Int(static_cast<std::int64_t>(r.prompt.size()));
    w.Key("weight_version").String(f.weight_version);
    if (era_.pp_rank) w.Key("num_retractions").Int(o.record.preemptions);
    if (metrics_meta && o.record.scheduled_mono_ns) {
      const std::int64_t off = static_cast<std::int64_t>(o.record.arrival_wall_ns) -
                               static_cast<std::int64_t>(o.record.arrival_mono_ns);
      auto wall_s = [&](std::uint64_t mono) {
        return static_cast<double>(static_cast<std::int64_t>(mono) + off) / 1e9;
      };
      w.Key("forward_entry_time").Double(wall_s(o.record.scheduled_mono_ns));
      if (o.record.first_token_mono_ns)
        w.Key("prefill_finished_time").Double(wall_s(o.record.first_token_mono_ns));
      w.Key("queue_time")
          .Double(static_cast<double>(o.record.scheduled_mono_ns - o.record.arrival_mono_ns) / 1e9);
    }
    if (era_.trace_levels)
      w.Key("reasoning_tokens").Int(std::min(o.tokens, r.router.reasoning_len));
    w.Key("completion_tokens").Int(o.tokens);
    w.Key("cached_tokens").Int(o.record.cached_tokens);
    if (o.finished) {
      w.Key("e2e_latency").Double(WallSeconds(o.finished_ns - tl.created_ns));
      if (!f.speculative_algorithm.empty()) {
        const RequestRecord& rc = o.record;
        const double rate =
            rc.spec_proposed ? static_cast<double>(rc.spec_accepted) / rc.spec_proposed : 0;
        const double len =
            rc.spec_verify_ct
                ? static_cast<double>(rc.spec_accepted + rc.spec_verify_ct) / rc.spec_verify_ct
                : 0;
        w.Key("spec_verify_ct").Int(rc.spec_verify_ct);
        w.Key("spec_accept_rate").Double(rate).Key("spec_accept_length").Double(len);
        w.Key("spec_num_correct_drafts").Int(rc.spec_accepted);
        w.Key("spec_num_proposed_drafts").Int(rc.spec_proposed);
        w.Key("spec_accepted_drafts").Int(rc.spec_accepted);
        w.Key("spec_proposed_drafts").Int(rc.spec_proposed);
      }
      if (metrics_meta) {
        w.Key("request_received_ts").Double(WallSeconds(tl.created_ns));
        w.Key("api_server_dispatch_finish_ts").Double(WallSeconds(tl.dispatch_end_ns));
        w.Key("request_finished_ts").Double(WallSeconds(o.finished_ns));
        if (o.record.generated_tokens > 1 &&
            o.record.last_token_mono_ns > o.record.first_token_mono_ns) {
          w.Key("decode_throughput")
              .Double(
                  static_cast<double>(o.record.generated_tokens - 1) /
                  (static_cast<double>(o.record.last_token_mono_ns - o.record.first_token_mono_ns) /
                   1e9));
        }
      }
      w.Key("response_sent_to_client_ts").Double(WallSeconds(WallNanos()));
    }
    w.EndObject();
    (void)delta_from;
  };
  auto out_json = [&](std::size_t i, bool delta, std::size_t text_from, std::size_t ids_from) {
    JsonWriter w;
    w.BeginObject();
    const Out& o = outs[i];
    w.Key("text").String(delta ? o.text.substr(text_from) : o.text);
    w.Key("output_ids").BeginArray();
    for (std::size_t k = delta ? ids_from : 0; k < o.ids.size(); ++k) w.Int(o.ids[k]);
    w.EndArray().Key("meta_info");
    meta(w, i, text_from);
    if (batch && in.stream) w.Key("index").Int(static_cast<int>(i));
    w.EndObject();
    return w.Take();
  };

  if (in.stream && !co_await conn.BeginStream(http::status::ok, "text/event-stream; charset=utf-8",
                                              req.keep_alive())) {
    co_return false;
  }
  while (job->remaining > 0) {
    if (!co_await Next(conn, *job)) co_return false;
    while (!job->ready.empty()) {
      Emission em = std::move(job->ready.front());
      job->ready.pop_front();
      const std::size_t i = static_cast<std::size_t>(em.idx);
      Out& o = outs[i];
      const std::size_t text_from = o.text.size(), ids_from = o.ids.size();
      o.text += em.text;
      for (const auto& t : em.tokens) o.ids.push_back(t.id);
      o.tokens += static_cast<int>(em.tokens.size());
      o.record = em.record;
      if (em.finished) {
        o.finished = true;
        o.reason = em.reason;
        o.stop = em.stop_reason;
        --job->remaining;
        co_await PdFinish(*job->reqs[i], job.get());
        {
          std::lock_guard lk(job->reqs[i]->mu);
          o.finished_ns = job->reqs[i]->span.timeline.transfer_end_ns
                              ? job->reqs[i]->span.timeline.transfer_end_ns
                              : em.sent_ns;
        }
      }
      if (in.stream && !job->write_failed &&
          !co_await conn.WriteChunk(
              "data: " + out_json(i, f.incremental_streaming_output, text_from, ids_from) +
              "\n\n")) {
        job->write_failed = true;
      }
    }
  }
  if (o_.metrics)
    o_.metrics->ObserveFuncLatency(static_cast<double>(MonoNanos() - func_start) / 1e9);
  if (in.stream) {
    if (!co_await conn.WriteChunk("data: [DONE]\n\n")) co_return false;
    co_return co_await conn.EndStream();
  }
  if (!batch) co_return co_await Json(conn, req, http::status::ok, out_json(0, false, 0, 0));
  std::string list = "[";
  for (std::size_t i = 0; i < outs.size(); ++i) list += (i ? "," : "") + out_json(i, false, 0, 0);
  list += "]";
  co_return co_await Json(conn, req, http::status::ok, list);
}

}  // namespace infertel::sim
