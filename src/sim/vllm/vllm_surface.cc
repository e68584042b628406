#include "sim/vllm/vllm_surface.h"

#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <deque>
#include <mutex>
#include <optional>
#include <random>

#include "core/clock.h"
#include "core/hex.h"
#include "sim/engine/prometheus_text.h"
#include "sim/engine/tokenizer.h"
#include "sim/json_fields.h"
#include "sim/json_writer.h"

namespace infertel::sim {
namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

constexpr const char* kVersionV1 = "0.11.0";
constexpr const char* kVersionV0 = "0.7.3";

std::string RandomHex(int n) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* kHex = "0123456789abcdef";
  std::string s(n, '0');
  for (int i = 0; i < n; ++i) s[i] = kHex[rng() & 15];
  return s;
}

std::string_view PathOf(std::string_view target) {
  auto q = target.find('?');
  return q == std::string_view::npos ? target : target.substr(0, q);
}

// A Python-repr-like pydantic error list, the way FastAPI's RequestValidationError renders.
std::string ValidationMessage(std::string_view type, std::string_view loc, std::string_view msg) {
  return "[{'type': '" + std::string(type) + "', 'loc': (" + std::string(loc) + "), 'msg': '" +
         std::string(msg) + "'}]";
}

// The request body as a JSON object; false when it is not one (the caller answers 400).
bool ParseBodyObject(simdjson::dom::parser& parser, const HttpRequest& req, object* body) {
  element doc;
  return parser.parse(req.body()).get(doc) == simdjson::SUCCESS &&
         doc.get_object().get(*body) == simdjson::SUCCESS;
}

// FastAPI's message for a body that is not JSON.
std::string JsonDecodeError() {
  return ValidationMessage("json_invalid", "'body', 0", "JSON decode error");
}

// vLLM's 404 message when the body names a model this server does not serve.
std::optional<std::string> UnknownModel(const object& body, const std::string& served) {
  auto model = GetStr(body, "model");
  if (!model || *model == served) return std::nullopt;
  return "The model `" + *model + "` does not exist.";
}

void Usage(JsonWriter& w, int prompt, int completion, std::optional<int> cached,
           bool details_null) {
  w.BeginObject();
  w.Key("prompt_tokens").Int(prompt);
  w.Key("total_tokens").Int(prompt + completion);
  w.Key("completion_tokens").Int(completion);
  if (cached) {
    w.Key("prompt_tokens_details").BeginObject().Key("cached_tokens").Int(*cached).EndObject();
  } else if (details_null) {
    w.Key("prompt_tokens_details").Null();
  }
  w.EndObject();
}

void TokenBytes(JsonWriter& w, std::string_view text) {
  w.BeginArray();
  for (unsigned char c : text) w.Int(c);
  w.EndArray();
}

// Alternatives for top_logprobs: the sampled token first, then vocabulary words.
std::vector<std::pair<std::string, double>> TopAlternatives(const GeneratedToken& t, int k) {
  std::vector<std::pair<std::string, double>> out;
  if (k <= 0) return out;
  out.emplace_back(t.text, t.logprob);
  const auto& vocab = Vocabulary();
  bool leading_space = !t.text.empty() && t.text[0] == ' ';
  std::size_t start = t.id % vocab.size();
  for (std::size_t i = 1; static_cast<int>(out.size()) < k && i < vocab.size(); ++i) {
    std::string alt = (leading_space ? " " : "") + vocab[(start + i) % vocab.size()];
    if (alt == t.text) continue;
    out.emplace_back(alt, t.logprob - 0.75 * static_cast<double>(out.size()));
  }
  return out;
}

void ChatLogprobs(JsonWriter& w, const std::vector<GeneratedToken>& toks, int top) {
  w.BeginObject().Key("content").BeginArray();
  for (const auto& t : toks) {
    w.BeginObject();
    w.Key("token").String(t.text);
    w.Key("logprob").Double(t.logprob);
    w.Key("bytes");
    TokenBytes(w, t.text);
    w.Key("top_logprobs").BeginArray();
    for (const auto& [text, lp] : TopAlternatives(t, top)) {
      w.BeginObject().Key("token").String(text).Key("logprob").Double(lp).Key("bytes");
      TokenBytes(w, text);
      w.EndObject();
    }
    w.EndArray().EndObject();
  }
  w.EndArray().EndObject();
}

void CompletionLogprobs(JsonWriter& w, const std::vector<GeneratedToken>& toks, int top,
                        int offset_base) {
  w.BeginObject();
  w.Key("text_offset").BeginArray();
  int off = offset_base;
  for (const auto& t : toks) {
    w.Int(off);
    off += static_cast<int>(t.text.size());
  }
  w.EndArray();
  w.Key("token_logprobs").BeginArray();
  for (const auto& t : toks) w.Double(t.logprob);
  w.EndArray();
  w.Key("tokens").BeginArray();
  for (const auto& t : toks) w.String(t.text);
  w.EndArray();
  w.Key("top_logprobs").BeginArray();
  for (const auto& t : toks) {
    w.BeginObject();
    for (const auto& [text, lp] : TopAlternatives(t, std::max(top, 1))) w.Key(text).Double(lp);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

// JSON string content without the quotes (for tool-call argument fragments).
std::string EscapeInner(std::string_view s) {
  std::string out;
  AppendJsonString(&out, s);
  return out.substr(1, out.size() - 2);
}

float EmbeddingValue(std::uint64_t seed, int i) {
  std::uint64_t h = seed ^ (0x9e3779b97f4a7c15ull * static_cast<std::uint64_t>(i + 1));
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 29;
  return static_cast<float>(static_cast<double>(h % 20001) / 10000.0 - 1.0);
}

double Relevance(const std::string& query, const std::string& doc) {
  auto q = Tokenize(query);
  auto d = Tokenize(doc);
  std::sort(d.begin(), d.end());
  int shared = 0;
  for (TokenId t : q) shared += std::binary_search(d.begin(), d.end(), t) ? 1 : 0;
  double overlap = q.empty() ? 0 : static_cast<double>(shared) / q.size();
  std::uint64_t h = 1469598103934665603ull;
  for (TokenId t : d) h = (h ^ t) * 1099511628211ull;
  double jitter = static_cast<double>(h % 1000) / 1000.0;
  double x = 6.0 * overlap - 3.0 + jitter;
  return 1.0 / (1.0 + std::exp(-x));
}

}  // namespace

// Events from the engine thread to the connection coroutine.
struct VllmInbox {
  std::mutex mu;
  std::deque<std::pair<int, RequestOutput>> events;
};

// One choice of a response (connection strand only).
struct VllmChoice {
  std::string engine_id;
  std::string text;
  std::vector<GeneratedToken> tokens;
  int num_tokens = 0;
  bool finished = false;
  FinishReason reason = FinishReason::kNone;
  std::string stop_reason;
  bool tool_header_sent = false;
  int text_offset = 0;
};

// One chat or completions request: what it asks, parsed once, then the state of its response
// (connection strand only).
struct VllmGeneration {
  bool chat = false;
  bool v0 = false;
  bool details = false;  // --enable-prompt-tokens-details
  bool stream = false, include_usage = false, continuous_usage = false;
  std::vector<std::vector<TokenId>> prompt_ids;  // one per prompt
  std::string tool_name, tool_param = "input";
  bool tools_on = false;
  int n = 1;
  std::optional<std::int64_t> max_tokens;
  int logprobs_top = -1;  // -1: no logprobs
  SamplingSpec spec;
  double temperature = 1.0, top_p = 1.0;
  std::string model, body_request_id, traceparent, tracestate;
  std::uint64_t arrival_wall_ns = 0;
  std::string id;
  std::int64_t created = 0;

  std::vector<VllmChoice> choices;  // prompt-major: choice i is of prompt i / n
  int remaining = 0;                // choices not finished
  std::optional<int> cached;
  bool first_event = true;

  bool tool_mode() const { return chat && tools_on && !tool_name.empty(); }
  const char* object_chunk() const { return chat ? "chat.completion.chunk" : "text_completion"; }
  int prompt_tokens(int choice) const { return static_cast<int>(prompt_ids[choice / n].size()); }
  int total_prompt_tokens() const {
    int total = 0;
    for (const auto& ids : prompt_ids) total += static_cast<int>(ids.size());
    return total;
  }
  int completion_tokens() const {
    int total = 0;
    for (const auto& c : choices) total += c.num_tokens;
    return total;
  }
};

// Per API prompt: what the front end knows of its sequences (touched on the engine thread
// only, as every callback of the engine runs there).
struct GroupTelemetry {
  struct Child {
    std::uint64_t first_token_wall_ns = 0;
    int tokens = 0;
    bool finished = false;
    RequestRecord record;
  };
  std::string request_id;
  std::string traceparent, tracestate;
  std::uint64_t arrival_wall_ns = 0;
  double temperature = 1.0, top_p = 1.0;
  int max_tokens = 0;
  int n = 1;
  int finished = 0;
  std::vector<Child> children;
};

void VllmSurface::OnEngineOutput(GroupTelemetry& g, int child, const RequestOutput& out) {
  if (!options_.metrics && !options_.spans) return;
  const std::uint64_t now = WallNanos();
  auto seconds_since_arrival = [&](std::uint64_t t) {
    return (static_cast<double>(t) - static_cast<double>(g.arrival_wall_ns)) / 1e9;
  };
  GroupTelemetry::Child& c = g.children[child];
  if (c.first_token_wall_ns == 0 && !out.tokens.empty()) {
    c.first_token_wall_ns = now;
    if (options_.metrics) options_.metrics->ObserveFirstToken(seconds_since_arrival(now));
  }
  c.tokens += static_cast<int>(out.tokens.size());
  if (!out.finished) return;
  c.finished = true;
  c.record = out.record;
  ++g.finished;
  if (options_.metrics)
    options_.metrics->ObserveFinished(out.record, seconds_since_arrival(now), g.max_tokens);
  LlmRequestSpanInput in;
  in.traceparent = g.traceparent;
  in.tracestate = g.tracestate;
  in.request_id = g.request_id;
  in.arrival_wall_ns = g.arrival_wall_ns;
  in.end_wall_ns = now;
  in.temperature = g.temperature;
  in.top_p = g.top_p;
  in.max_tokens = g.max_tokens;
  if (options_.spans && !options_.v0) {
    // One span per sequence, each with n = 1 (vLLM's child requests).
    in.first_token_wall_ns = c.first_token_wall_ns;
    in.record = c.record;
    in.completion_tokens = c.tokens;
    in.n = 1;
    if (auto span = BuildLlmRequestSpanV1(in)) options_.spans->OnEnd(std::move(*span));
  }
  if (g.finished < static_cast<int>(g.children.size())) return;
  int max_gen = 0;
  for (const auto& ch : g.children) max_gen = std::max(max_gen, ch.tokens);
  if (options_.metrics) options_.metrics->ObserveParentFinished(g.n, max_gen);
  if (options_.spans && options_.v0) {
    // V0: one span per sequence group.
    in.record = g.children[0].record;
    in.first_token_wall_ns = 0;
    in.scheduled_wall_ns = 0;
    in.completion_tokens = 0;
    for (const auto& ch : g.children) {
      const RequestRecord& r = ch.record;
      std::uint64_t sched = r.arrival_wall_ns + (r.scheduled_mono_ns - r.arrival_mono_ns);
      if (in.scheduled_wall_ns == 0 || sched < in.scheduled_wall_ns) in.scheduled_wall_ns = sched;
      if (in.first_token_wall_ns == 0 || ch.first_token_wall_ns < in.first_token_wall_ns)
        in.first_token_wall_ns = ch.first_token_wall_ns;
      in.completion_tokens += ch.tokens;
      in.record.execute_ns = std::max(in.record.execute_ns, r.execute_ns);
      in.record.forward_ns = std::max(in.record.forward_ns, r.forward_ns);
      in.record.scheduler_ns = std::max(in.record.scheduler_ns, r.scheduler_ns);
    }
    in.n = g.n;
    in.num_sequences = static_cast<int>(g.children.size());
    in.model_path = options_.model_path.empty() ? options_.model : options_.model_path;
    in.detailed = options_.detailed;
    if (auto span = BuildLlmRequestSpanV0(in)) options_.spans->OnEnd(std::move(*span));
  }
}

VllmSurface::VllmSurface(Engine* engine, VllmSurfaceOptions options)
    : engine_(engine), options_(std::move(options)), started_unix_(std::time(nullptr)) {}

const char* VllmSurface::version() const {
  if (options_.v0) return kVersionV0;
  return options_.vllm_version.empty() ? kVersionV1 : options_.vllm_version.c_str();
}

net::awaitable<bool> VllmSurface::Json(HttpConnection& conn, HttpRequest& req, http::status status,
                                       std::string body) {
  co_return co_await conn.Reply(status, "application/json", std::move(body), req.keep_alive());
}

net::awaitable<bool> VllmSurface::Error(HttpConnection& conn, HttpRequest& req, http::status status,
                                        std::string_view type, std::string_view message,
                                        std::string_view param) {
  JsonWriter w;
  if (options_.v0) {
    w.BeginObject().Key("object").String("error").Key("message").String(message);
    w.Key("type").String(type).Key("param");
    if (param.empty())
      w.Null();
    else
      w.String(param);
    w.Key("code").Int(static_cast<int>(status)).EndObject();
  } else {
    w.BeginObject().Key("error").BeginObject().Key("message").String(message);
    w.Key("type").String(type).Key("param");
    if (param.empty())
      w.Null();
    else
      w.String(param);
    w.Key("code").Int(static_cast<int>(status)).EndObject().EndObject();
  }
  co_return co_await Json(conn, req, status, w.Take());
}

std::string VllmSurface::BaseRequestId(const HttpRequest& req,
                                       std::string_view body_request_id) const {
  auto it = req.find("X-Request-Id");
  if (it != req.end() && !it->value().empty()) return std::string(it->value());
  if (!body_request_id.empty()) return std::string(body_request_id);
  // random_uuid(): 16 hex characters since late 2025, a full uuid4 hex before.
  return RandomHex(options_.v0 ? 32 : 16);
}

std::string VllmSurface::StatsJson() const {
  EngineStats s = engine_->Stats();
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
  w.EndObject();
  return w.Take();
}

std::string VllmSurface::ModelsJson() const {
  JsonWriter w;
  w.BeginObject().Key("object").String("list").Key("data").BeginArray();
  w.BeginObject();
  w.Key("id").String(options_.model);
  w.Key("object").String("model");
  w.Key("created").Int(std::time(nullptr));
  w.Key("owned_by").String("vllm");
  w.Key("root").String(options_.model);
  w.Key("parent").Null();
  w.Key("max_model_len").Int(engine_->config().max_model_len);
  w.Key("permission").BeginArray().BeginObject();
  w.Key("id").String("modelperm-" + RandomHex(options_.v0 ? 32 : 16));
  w.Key("object").String("model_permission");
  w.Key("created").Int(std::time(nullptr));
  w.Key("allow_create_engine").Bool(false);
  w.Key("allow_sampling").Bool(true);
  w.Key("allow_logprobs").Bool(true);
  w.Key("allow_search_indices").Bool(false);
  w.Key("allow_view").Bool(true);
  w.Key("allow_fine_tuning").Bool(false);
  w.Key("organization").String("*");
  w.Key("group").Null();
  w.Key("is_blocking").Bool(false);
  w.EndObject().EndArray();
  w.EndObject();
  w.EndArray().EndObject();
  return w.Take();
}

net::awaitable<bool> VllmSurface::Handle(HttpConnection& conn, HttpRequest& req) {
  const std::string_view path = PathOf(req.target());
  const bool get = req.method() == http::verb::get;
  const bool post = req.method() == http::verb::post;
  auto method_not_allowed = [&]() -> net::awaitable<bool> {
    co_return co_await Json(conn, req, http::status::method_not_allowed,
                            R"({"detail":"Method Not Allowed"})");
  };

  if (path == "/health") {
    if (!get) co_return co_await method_not_allowed();
    co_return co_await conn.Reply(http::status::ok, "", "", req.keep_alive());
  }
  if (path == "/version") {
    if (!get) co_return co_await method_not_allowed();
    JsonWriter w;
    w.BeginObject().Key("version").String(version()).EndObject();
    co_return co_await Json(conn, req, http::status::ok, w.Take());
  }
  if (path == "/v1/models") {
    if (!get) co_return co_await method_not_allowed();
    co_return co_await Json(conn, req, http::status::ok, ModelsJson());
  }
  if (path == "/metrics" && options_.metrics) {
    if (!get) co_return co_await method_not_allowed();
    co_return co_await conn.Reply(http::status::ok, kPrometheusContentType,
                                  options_.metrics->Render(), req.keep_alive());
  }
  if (path == "/_sim/stats") {
    if (!get) co_return co_await method_not_allowed();
    co_return co_await Json(conn, req, http::status::ok, StatsJson());
  }
  if (path == "/v1/chat/completions" || path == "/v1/completions") {
    if (!post) co_return co_await method_not_allowed();
    co_return co_await Generate(conn, req, path == "/v1/chat/completions");
  }
  if (path == "/v1/embeddings") {
    if (!post) co_return co_await method_not_allowed();
    co_return co_await Embeddings(conn, req);
  }
  if (path == "/v1/rerank" || path == "/rerank" || path == "/v2/rerank") {
    if (!post) co_return co_await method_not_allowed();
    co_return co_await Rerank(conn, req);
  }
  if (path == "/v1/score" || path == "/score") {
    if (!post) co_return co_await method_not_allowed();
    co_return co_await Score(conn, req);
  }
  co_return co_await Json(conn, req, http::status::not_found, R"({"detail":"Not Found"})");
}

// ---------------------------------------------------------------------------------------------
// /v1/chat/completions and /v1/completions, as stages: parse and validate the request, admit
// its sequences to the engine, relay or collect the engine's output, then the stream's end or
// the whole body.

namespace {

// An error answer decided while parsing.
struct ApiError {
  http::status status;
  std::string type, message, param;
};

std::optional<ApiError> BadRequest(std::string type, std::string message, std::string param = {}) {
  return ApiError{http::status::bad_request, std::move(type), std::move(message), std::move(param)};
}

// The chat messages (and tools) rendered as a ChatML-style template, and the first tool.
std::optional<ApiError> ChatPrompt(const object& body, const char* validation, VllmGeneration* g) {
  auto msgs = Field(body, "messages");
  array arr;
  if (!msgs || msgs->get_array().get(arr) != simdjson::SUCCESS) {
    return BadRequest(validation,
                      ValidationMessage("missing", "'body', 'messages'", "Field required"));
  }
  std::string text;
  if (auto tools = Field(body, "tools")) {
    array tarr;
    if (tools->get_array().get(tarr) == simdjson::SUCCESS && tarr.size() > 0) {
      std::string choice = GetStr(body, "tool_choice").value_or("auto");
      g->tools_on = choice != "none";
      element first = tarr.at(0);
      std::string_view name;
      if (first["function"]["name"].get_string().get(name) == simdjson::SUCCESS)
        g->tool_name = std::string(name);
      std::string_view named;
      if (body["tool_choice"]["function"]["name"].get_string().get(named) == simdjson::SUCCESS) {
        g->tool_name = std::string(named);
        g->tools_on = true;
      }
      object props;
      if (first["function"]["parameters"]["properties"].get_object().get(props) ==
          simdjson::SUCCESS) {
        for (auto [k, v] : props) {
          g->tool_param = std::string(k);
          break;
        }
      }
      text += "<|im_start|>system\n# Tools\n" + simdjson::minify(*tools) + "<|im_end|>\n";
    }
  }
  AppendChatTurns(arr, &text);
  g->prompt_ids.push_back(Tokenize(text));
  return std::nullopt;
}

std::vector<TokenId> TokenIds(const array& arr) {
  std::vector<TokenId> ids;
  std::int64_t tok;
  for (element e : arr) {
    if (e.get_int64().get(tok) == simdjson::SUCCESS) ids.push_back(static_cast<TokenId>(tok));
  }
  return ids;
}

// The completions API's prompt: a string, a list of token ids, or a list of either. Token
// prompts come first, then the text prompts, tokenized.
std::optional<ApiError> CompletionPrompts(const object& body, const char* validation,
                                          VllmGeneration* g) {
  auto p = Field(body, "prompt");
  if (!p) {
    return BadRequest(validation,
                      ValidationMessage("missing", "'body', 'prompt'", "Field required"));
  }
  std::vector<std::string> texts;
  std::string_view s;
  array arr;
  if (p->get_string().get(s) == simdjson::SUCCESS) {
    texts.emplace_back(s);
  } else if (p->get_array().get(arr) == simdjson::SUCCESS && arr.size() > 0) {
    std::int64_t tok;
    if (arr.at(0).get_int64().get(tok) == simdjson::SUCCESS) {
      g->prompt_ids.push_back(TokenIds(arr));
    } else {
      for (element e : arr) {
        array inner;
        if (e.get_string().get(s) == simdjson::SUCCESS) {
          texts.emplace_back(s);
        } else if (e.get_array().get(inner) == simdjson::SUCCESS) {
          g->prompt_ids.push_back(TokenIds(inner));
        }
      }
    }
  }
  if (texts.empty() && g->prompt_ids.empty())
    return BadRequest("BadRequestError", "Prompt cannot be empty");
  for (const std::string& t : texts) g->prompt_ids.push_back(Tokenize(t));
  return std::nullopt;
}

std::optional<ApiError> StreamOptions(const object& body, const char* validation,
                                      VllmGeneration* g) {
  g->stream = GetBool(body, "stream", false);
  if (Field(body, "stream_options") && !g->stream) {
    return BadRequest(
        validation,
        ValidationMessage("value_error", "'body',",
                          "Value error, Stream options can only be defined when `stream=True`."));
  }
  if (auto so = Field(body, "stream_options")) {
    object soo;
    if (so->get_object().get(soo) == simdjson::SUCCESS) {
      g->include_usage = GetBool(soo, "include_usage", false);
      g->continuous_usage = g->include_usage && GetBool(soo, "continuous_usage_stats", false);
    }
  }
  return std::nullopt;
}

// n, the token limit, logprobs and the engine's sampling parameters.
std::optional<ApiError> Sampling(const object& body, VllmGeneration* g) {
  g->n = static_cast<int>(GetInt(body, "n").value_or(1));
  if (g->n < 1) {
    return BadRequest("BadRequestError", "n must be at least 1, got " + std::to_string(g->n) + ".",
                      "n");
  }
  g->max_tokens = GetInt(body, "max_completion_tokens");
  if (!g->max_tokens) g->max_tokens = GetInt(body, "max_tokens");
  if (!g->chat && !g->max_tokens) g->max_tokens = 16;  // the completions API default
  if (g->max_tokens && *g->max_tokens < 1) {
    return BadRequest("BadRequestError",
                      "max_tokens must be at least 1, got " + std::to_string(*g->max_tokens) + ".",
                      "max_tokens");
  }
  if (g->chat) {
    if (GetBool(body, "logprobs", false))
      g->logprobs_top = static_cast<int>(GetInt(body, "top_logprobs").value_or(0));
  } else if (auto lp = GetInt(body, "logprobs")) {
    g->logprobs_top = static_cast<int>(*lp);
  }
  SamplingSpec& spec = g->spec;
  if (g->max_tokens) spec.max_tokens = static_cast<int>(*g->max_tokens);
  if (auto st = Field(body, "stop")) {
    std::string_view s;
    array arr;
    if (st->get_string().get(s) == simdjson::SUCCESS) {
      spec.stop.emplace_back(s);
    } else if (st->get_array().get(arr) == simdjson::SUCCESS) {
      for (element e : arr) {
        if (e.get_string().get(s) == simdjson::SUCCESS) spec.stop.emplace_back(s);
      }
    }
  }
  spec.include_stop_str_in_output = GetBool(body, "include_stop_str_in_output", false);
  spec.ignore_eos = GetBool(body, "ignore_eos", false);
  spec.seed = static_cast<std::uint64_t>(GetInt(body, "seed").value_or(0));
  g->temperature = GetDouble(body, "temperature").value_or(1.0);
  g->top_p = GetDouble(body, "top_p").value_or(1.0);
  return std::nullopt;
}

std::optional<ApiError> ContextLength(const VllmGeneration& g, int max_len) {
  for (const auto& ids : g.prompt_ids) {
    int p = static_cast<int>(ids.size());
    int want = p + (g.max_tokens ? static_cast<int>(*g.max_tokens) : 0);
    if (p >= max_len || want > max_len) {
      return BadRequest(
          "BadRequestError",
          "This model's maximum context length is " + std::to_string(max_len) +
              " tokens. However, you requested " + std::to_string(want) + " tokens (" +
              std::to_string(p) + " in the messages, " + std::to_string(want - p) +
              " in the completion). Please reduce the length of the messages or completion.");
    }
  }
  return std::nullopt;
}

// What every chunk of the stream starts with, up to the choices array.
void ChunkHead(JsonWriter& w, const VllmGeneration& g) {
  w.BeginObject();
  w.Key("id").String(g.id).Key("object").String(g.object_chunk()).Key("created").Int(g.created);
  w.Key("model").String(g.model).Key("choices").BeginArray();
}

// Closes a chunk of choice `idx`: its running usage, or the fields vLLM leaves null.
void ChunkTail(JsonWriter& w, const VllmGeneration& g, int idx, bool first_chunk) {
  w.EndArray();
  if (g.continuous_usage) {
    w.Key("usage");
    Usage(w, g.prompt_tokens(idx), g.choices[idx].num_tokens, std::nullopt, false);
  } else if (!g.chat) {
    w.Key("usage").Null();
  }
  if (g.chat && first_chunk && !g.v0) w.Key("prompt_token_ids").Null();
  w.EndObject();
}

// The chat stream's first frames: the assistant role for every choice, sent at the first event.
void RoleFrames(const VllmGeneration& g, std::vector<std::string>* frames) {
  for (int i = 0; i < static_cast<int>(g.choices.size()); ++i) {
    JsonWriter w;
    ChunkHead(w, g);
    w.BeginObject().Key("index").Int(i);
    w.Key("delta").BeginObject().Key("role").String("assistant").Key("content").String("");
    w.EndObject().Key("logprobs").Null().Key("finish_reason").Null().EndObject();
    if (g.continuous_usage) {
      w.EndArray().Key("usage");
      Usage(w, g.prompt_tokens(i), 0, std::nullopt, false);
      if (!g.v0) w.Key("prompt_token_ids").Null();
      w.EndObject();
    } else {
      ChunkTail(w, g, i, true);
    }
    frames->push_back(w.Take());
  }
}

void LogprobsValue(JsonWriter& w, const VllmGeneration& g, const std::vector<GeneratedToken>& toks,
                   int text_offset) {
  if (g.logprobs_top < 0) {
    w.Null();
  } else if (g.chat) {
    ChatLogprobs(w, toks, g.logprobs_top);
  } else {
    CompletionLogprobs(w, toks, g.logprobs_top, text_offset);
  }
}

void FinishFields(JsonWriter& w, const VllmGeneration& g, const VllmChoice& c, bool finished) {
  if (!finished) {
    w.Key("finish_reason").Null();
    if (!g.chat) w.Key("stop_reason").Null();
    return;
  }
  std::string reason = FinishReasonName(c.reason);
  if (g.tool_mode() && c.reason == FinishReason::kStop) reason = "tool_calls";
  w.Key("finish_reason").String(reason).Key("stop_reason");
  if (c.stop_reason.empty())
    w.Null();
  else
    w.String(c.stop_reason);
}

// A tool call streamed: its header once, the arguments as they come, then the finish.
void ToolFrames(VllmGeneration& g, int idx, const RequestOutput& out,
                std::vector<std::string>* frames) {
  VllmChoice& c = g.choices[idx];
  std::string args;
  if (!c.tool_header_sent) {
    JsonWriter w;
    ChunkHead(w, g);
    w.BeginObject().Key("index").Int(idx).Key("delta").BeginObject();
    w.Key("tool_calls").BeginArray().BeginObject();
    w.Key("id").String("chatcmpl-tool-" + RandomHex(32)).Key("type").String("function");
    w.Key("index").Int(0).Key("function").BeginObject().Key("name").String(g.tool_name);
    w.EndObject().EndObject().EndArray().EndObject();
    w.Key("logprobs").Null().Key("finish_reason").Null().EndObject();
    ChunkTail(w, g, idx, false);
    frames->push_back(w.Take());
    c.tool_header_sent = true;
    args = "{\"" + EscapeInner(g.tool_param) + "\": \"";
  }
  args += EscapeInner(out.text_delta);
  if (out.finished) args += "\"}";
  JsonWriter w;
  ChunkHead(w, g);
  w.BeginObject().Key("index").Int(idx).Key("delta").BeginObject();
  w.Key("tool_calls").BeginArray().BeginObject().Key("index").Int(0);
  w.Key("function").BeginObject().Key("arguments").String(args).EndObject();
  w.EndObject().EndArray().EndObject();
  w.Key("logprobs");
  LogprobsValue(w, g, out.tokens, c.text_offset);
  w.Key("finish_reason").Null();
  if (!g.v0) w.Key("token_ids").Null();
  w.EndObject();
  ChunkTail(w, g, idx, false);
  frames->push_back(w.Take());
  if (!out.finished) return;
  JsonWriter f;
  ChunkHead(f, g);
  f.BeginObject().Key("index").Int(idx);
  f.Key("delta").BeginObject().Key("content").String("").EndObject();
  f.Key("logprobs").Null();
  FinishFields(f, g, c, true);
  f.EndObject();
  ChunkTail(f, g, idx, false);
  frames->push_back(f.Take());
}

void ContentFrame(const VllmGeneration& g, int idx, const RequestOutput& out,
                  std::vector<std::string>* frames) {
  const VllmChoice& c = g.choices[idx];
  JsonWriter w;
  ChunkHead(w, g);
  w.BeginObject().Key("index").Int(idx);
  if (g.chat) {
    w.Key("delta").BeginObject().Key("content").String(out.text_delta).EndObject();
  } else {
    w.Key("text").String(out.text_delta);
  }
  w.Key("logprobs");
  LogprobsValue(w, g, out.tokens, c.text_offset);
  FinishFields(w, g, c, out.finished);
  if (!g.v0 && g.chat) w.Key("token_ids").Null();
  w.EndObject();
  ChunkTail(w, g, idx, false);
  frames->push_back(w.Take());
}

// Takes one engine output of choice `idx` into the response state.
void Absorb(VllmGeneration& g, int idx, const RequestOutput& out) {
  VllmChoice& c = g.choices[idx];
  if (!g.cached && out.cached_tokens > 0 && g.details) g.cached = out.cached_tokens;
  c.text += out.text_delta;
  c.num_tokens += static_cast<int>(out.tokens.size());
  for (auto& t : out.tokens) c.tokens.push_back(t);
  if (out.finished) {
    c.finished = true;
    c.reason = out.finish_reason;
    c.stop_reason = out.stop_reason;
    --g.remaining;
  }
}

// The stream's frames for one engine output.
std::vector<std::string> EventFrames(VllmGeneration& g, int idx, const RequestOutput& out) {
  std::vector<std::string> frames;
  if (g.chat && g.first_event) RoleFrames(g, &frames);
  g.first_event = false;
  if (g.tool_mode())
    ToolFrames(g, idx, out, &frames);
  else
    ContentFrame(g, idx, out, &frames);
  g.choices[idx].text_offset += static_cast<int>(out.text_delta.size());
  return frames;
}

// The stream's last chunk: usage over every choice, with no choices.
std::string UsageChunk(const VllmGeneration& g) {
  JsonWriter w;
  w.BeginObject();
  w.Key("id").String(g.id).Key("object").String(g.object_chunk()).Key("created").Int(g.created);
  w.Key("model").String(g.model).Key("choices").BeginArray().EndArray();
  w.Key("usage");
  Usage(w, g.total_prompt_tokens(), g.completion_tokens(), g.cached, false);
  w.EndObject();
  return w.Take();
}

void ChatMessage(JsonWriter& w, const VllmGeneration& g, const VllmChoice& c) {
  const bool v0 = g.v0;
  w.Key("message").BeginObject().Key("role").String("assistant");
  if (v0) w.Key("reasoning_content").Null();
  w.Key("content");
  if (g.tool_mode())
    w.Null();
  else
    w.String(c.text);
  if (!v0) {
    w.Key("refusal").Null().Key("annotations").Null().Key("audio").Null();
    w.Key("function_call").Null();
  }
  w.Key("tool_calls").BeginArray();
  if (g.tool_mode()) {
    w.BeginObject().Key("id").String("chatcmpl-tool-" + RandomHex(32));
    w.Key("type").String("function").Key("function").BeginObject();
    w.Key("name").String(g.tool_name);
    w.Key("arguments")
        .String("{\"" + EscapeInner(g.tool_param) + "\": \"" + EscapeInner(c.text) + "\"}");
    w.EndObject().EndObject();
  }
  w.EndArray();
  if (!v0) w.Key("reasoning_content").Null();
  w.EndObject();
}

void ChoiceJson(JsonWriter& w, const VllmGeneration& g, int i) {
  const VllmChoice& c = g.choices[i];
  const bool v0 = g.v0, chat = g.chat;
  std::string reason = FinishReasonName(c.reason);
  if (g.tool_mode() && c.reason == FinishReason::kStop) reason = "tool_calls";
  w.BeginObject().Key("index").Int(i);
  if (chat) {
    ChatMessage(w, g, c);
    w.Key("logprobs");
    if (g.logprobs_top < 0)
      w.Null();
    else
      ChatLogprobs(w, c.tokens, g.logprobs_top);
  } else {
    w.Key("text").String(c.text).Key("logprobs");
    if (g.logprobs_top < 0)
      w.Null();
    else
      CompletionLogprobs(w, c.tokens, g.logprobs_top, 0);
  }
  w.Key("finish_reason").String(reason).Key("stop_reason");
  if (c.stop_reason.empty())
    w.Null();
  else
    w.String(c.stop_reason);
  if (!v0) w.Key("token_ids").Null();
  if (!chat) w.Key("prompt_logprobs").Null();
  if (!chat && !v0) w.Key("prompt_token_ids").Null();
  w.EndObject();
}

// The non-streaming response.
std::string CompletionBody(const VllmGeneration& g) {
  const bool v0 = g.v0, chat = g.chat;
  JsonWriter w;
  w.BeginObject();
  w.Key("id").String(g.id).Key("object").String(chat ? "chat.completion" : "text_completion");
  w.Key("created").Int(g.created).Key("model").String(g.model).Key("choices").BeginArray();
  for (int i = 0; i < static_cast<int>(g.choices.size()); ++i) ChoiceJson(w, g, i);
  w.EndArray();
  if (!v0) w.Key("service_tier").Null().Key("system_fingerprint").Null();
  w.Key("usage");
  Usage(w, g.total_prompt_tokens(), g.completion_tokens(), g.cached, true);
  if (chat) w.Key("prompt_logprobs").Null();
  if (chat && !v0) w.Key("prompt_token_ids").Null();
  if (!v0) w.Key("kv_transfer_params").Null();
  w.EndObject();
  return w.Take();
}

// Parses and validates the request in vLLM's order of checks; fills `g` up to its id.
std::optional<ApiError> ParseGeneration(const HttpRequest& req, const VllmSurfaceOptions& o,
                                        int max_len, VllmGeneration* g) {
  const char* validation = o.v0 ? "BadRequestError" : "Bad Request";
  simdjson::dom::parser parser;
  object body;
  if (!ParseBodyObject(parser, req, &body)) return BadRequest(validation, JsonDecodeError());
  auto known_model = [&]() -> std::optional<ApiError> {
    auto unknown = UnknownModel(body, o.model);
    if (!unknown) return std::nullopt;
    return ApiError{http::status::not_found, "NotFoundError", *unknown, o.v0 ? "" : "model"};
  };
  auto err = g->chat ? ChatPrompt(body, validation, g) : CompletionPrompts(body, validation, g);
  if (!err) err = StreamOptions(body, validation, g);
  if (!err) err = known_model();
  if (!err) err = Sampling(body, g);
  if (!err) err = ContextLength(*g, max_len);
  if (err) return err;
  g->v0 = o.v0;
  g->details = o.enable_prompt_tokens_details;
  g->model = o.model;
  g->body_request_id = GetStr(body, "request_id").value_or("");
  if (o.spans) {
    // Only the two W3C headers are propagated.
    if (auto it = req.find("traceparent"); it != req.end())
      g->traceparent = std::string(it->value());
    if (auto it = req.find("tracestate"); it != req.end()) g->tracestate = std::string(it->value());
  }
  g->choices.resize(g->prompt_ids.size() * static_cast<std::size_t>(g->n));
  g->remaining = static_cast<int>(g->choices.size());
  return std::nullopt;
}

}  // namespace

bool VllmSurface::Admit(HttpConnection& conn, VllmGeneration& g,
                        const std::shared_ptr<VllmInbox>& inbox) {
  auto waker = conn.Waker();
  const int num_prompts = static_cast<int>(g.prompt_ids.size());
  const int n = g.n;
  const int max_len = engine_->config().max_model_len;
  const std::string suffix = RandomHex(8);
  for (int pi = 0; pi < num_prompts; ++pi) {
    auto group = std::make_shared<GroupTelemetry>();
    group->request_id = g.id + (num_prompts > 1 ? "_" + std::to_string(pi) : "");
    group->traceparent = g.traceparent;
    group->tracestate = g.tracestate;
    group->arrival_wall_ns = g.arrival_wall_ns;
    group->temperature = g.temperature;
    group->top_p = g.top_p;
    group->max_tokens = g.max_tokens ? static_cast<int>(*g.max_tokens)
                                     : max_len - static_cast<int>(g.prompt_ids[pi].size());
    group->n = n;
    group->children.resize(static_cast<std::size_t>(n));
    for (int c = 0; c < n; ++c) {
      int idx = pi * n + c;
      SamplingSpec s = g.spec;
      s.choice_index = c;
      g.choices[idx].engine_id = g.id + (num_prompts > 1 ? "_" + std::to_string(pi) : "") + "-" +
                                 suffix + (n > 1 ? "_" + std::to_string(c) : "");
      bool ok = engine_->Submit(g.choices[idx].engine_id, g.prompt_ids[pi], std::move(s),
                                [this, group, c, inbox, waker, idx](const RequestOutput& out) {
                                  OnEngineOutput(*group, c, out);
                                  {
                                    std::lock_guard lk(inbox->mu);
                                    inbox->events.emplace_back(idx, out);
                                  }
                                  waker();
                                });
      if (!ok) {
        for (int j = 0; j < idx; ++j) engine_->Abort(g.choices[j].engine_id);
        return false;
      }
    }
  }
  return true;
}

void VllmSurface::AbortUnfinished(const VllmGeneration& g) {
  for (const auto& c : g.choices) {
    if (!c.finished) engine_->Abort(c.engine_id);
  }
}

net::awaitable<bool> VllmSurface::Relay(HttpConnection& conn, HttpRequest& req, VllmGeneration& g,
                                        VllmInbox& inbox) {
  if (g.stream && !co_await conn.BeginStream(http::status::ok, "text/event-stream; charset=utf-8",
                                             req.keep_alive())) {
    AbortUnfinished(g);
    co_return false;
  }
  while (g.remaining > 0) {
    co_await conn.Wait();
    if (conn.peer_closed()) {
      AbortUnfinished(g);
      co_return false;
    }
    std::deque<std::pair<int, RequestOutput>> events;
    {
      std::lock_guard lk(inbox.mu);
      events.swap(inbox.events);
    }
    for (auto& [idx, out] : events) {
      Absorb(g, idx, out);
      if (!g.stream) continue;
      for (const auto& f : EventFrames(g, idx, out)) {
        if (!co_await conn.WriteChunk("data: " + f + "\n\n")) {
          AbortUnfinished(g);
          co_return false;
        }
      }
    }
  }
  co_return true;
}

net::awaitable<bool> VllmSurface::Generate(HttpConnection& conn, HttpRequest& req, bool chat) {
  VllmGeneration g;
  // vLLM's arrival_time: wall clock when rendering starts, before templating and tokenizing.
  g.arrival_wall_ns = WallNanos();
  g.chat = chat;
  if (auto err = ParseGeneration(req, options_, engine_->config().max_model_len, &g))
    co_return co_await Error(conn, req, err->status, err->type, err->message, err->param);
  g.id = (chat ? "chatcmpl-" : "cmpl-") + BaseRequestId(req, g.body_request_id);
  g.created = std::time(nullptr);
  auto inbox = std::make_shared<VllmInbox>();
  if (!Admit(conn, g, inbox)) {
    co_return co_await Error(conn, req, http::status::internal_server_error, "InternalServerError",
                             "The engine refused the request.");
  }
  conn.StartDisconnectWatch();
  if (!co_await Relay(conn, req, g, *inbox)) co_return false;
  co_await conn.StopDisconnectWatch();
  if (!g.stream) co_return co_await Json(conn, req, http::status::ok, CompletionBody(g));
  if (g.include_usage && !co_await conn.WriteChunk("data: " + UsageChunk(g) + "\n\n"))
    co_return false;
  if (!co_await conn.WriteChunk("data: [DONE]\n\n")) co_return false;
  co_return co_await conn.EndStream();
}

net::awaitable<bool> VllmSurface::Embeddings(HttpConnection& conn, HttpRequest& req) {
  simdjson::dom::parser parser;
  object body;
  if (!ParseBodyObject(parser, req, &body)) {
    co_return co_await Error(conn, req, http::status::bad_request,
                             options_.v0 ? "BadRequestError" : "Bad Request", JsonDecodeError());
  }
  if (auto unknown = UnknownModel(body, options_.model)) {
    co_return co_await Error(conn, req, http::status::not_found, "NotFoundError", *unknown,
                             options_.v0 ? "" : "model");
  }
  std::vector<std::vector<TokenId>> inputs;
  auto in = Field(body, "input");
  std::string_view s;
  array arr;
  if (in && in->get_string().get(s) == simdjson::SUCCESS) {
    inputs.push_back(Tokenize(s));
  } else if (in && in->get_array().get(arr) == simdjson::SUCCESS) {
    std::int64_t tok;
    if (arr.size() > 0 && arr.at(0).get_int64().get(tok) == simdjson::SUCCESS) {
      std::vector<TokenId> ids;
      for (element e : arr) {
        if (e.get_int64().get(tok) == simdjson::SUCCESS) ids.push_back(static_cast<TokenId>(tok));
      }
      inputs.push_back(std::move(ids));
    } else {
      for (element e : arr) {
        if (e.get_string().get(s) == simdjson::SUCCESS) inputs.push_back(Tokenize(s));
      }
    }
  }
  if (inputs.empty()) {
    co_return co_await Error(conn, req, http::status::bad_request,
                             options_.v0 ? "BadRequestError" : "Bad Request",
                             ValidationMessage("missing", "'body', 'input'", "Field required"));
  }
  int dim = static_cast<int>(GetInt(body, "dimensions").value_or(options_.embedding_dim));
  dim = std::clamp(dim, 1, 8192);
  const std::string id = "embd-" + BaseRequestId(req, GetStr(body, "request_id").value_or(""));
  int prompt_tokens = 0;
  JsonWriter w;
  w.BeginObject().Key("id").String(id).Key("object").String("list");
  w.Key("created").Int(std::time(nullptr)).Key("model").String(options_.model);
  w.Key("data").BeginArray();
  for (int i = 0; i < static_cast<int>(inputs.size()); ++i) {
    prompt_tokens += static_cast<int>(inputs[i].size());
    std::uint64_t seed = 1469598103934665603ull;
    for (TokenId t : inputs[i]) seed = (seed ^ t) * 1099511628211ull;
    std::vector<float> v(dim);
    double norm = 0;
    for (int k = 0; k < dim; ++k) {
      v[k] = EmbeddingValue(seed, k);
      norm += static_cast<double>(v[k]) * v[k];
    }
    norm = norm > 0 ? std::sqrt(norm) : 1;
    w.BeginObject().Key("index").Int(i).Key("object").String("embedding");
    w.Key("embedding").BeginArray();
    for (int k = 0; k < dim; ++k) w.Double(static_cast<float>(v[k] / norm));
    w.EndArray().EndObject();
  }
  w.EndArray();
  w.Key("usage");
  Usage(w, prompt_tokens, 0, std::nullopt, true);
  w.EndObject();
  co_return co_await Json(conn, req, http::status::ok, w.Take());
}

net::awaitable<bool> VllmSurface::Rerank(HttpConnection& conn, HttpRequest& req) {
  simdjson::dom::parser parser;
  object body;
  if (!ParseBodyObject(parser, req, &body)) {
    co_return co_await Error(conn, req, http::status::bad_request, "Bad Request",
                             JsonDecodeError());
  }
  if (auto unknown = UnknownModel(body, options_.model)) {
    co_return co_await Error(conn, req, http::status::not_found, "NotFoundError", *unknown,
                             "model");
  }
  auto query = GetStr(body, "query");
  auto docs_el = Field(body, "documents");
  array docs;
  if (!query || !docs_el || docs_el->get_array().get(docs) != simdjson::SUCCESS) {
    co_return co_await Error(
        conn, req, http::status::bad_request, "Bad Request",
        ValidationMessage("missing", query ? "'body', 'documents'" : "'body', 'query'",
                          "Field required"));
  }
  std::vector<std::string> texts;
  for (element d : docs) {
    std::string_view s;
    if (d.get_string().get(s) == simdjson::SUCCESS ||
        d["text"].get_string().get(s) == simdjson::SUCCESS) {
      texts.emplace_back(s);
    } else {
      texts.emplace_back();
    }
  }
  struct Result {
    int index;
    double score;
  };
  std::vector<Result> results;
  int total_tokens = 0;
  const int query_tokens = static_cast<int>(Tokenize(*query).size());
  for (int i = 0; i < static_cast<int>(texts.size()); ++i) {
    results.push_back({i, Relevance(*query, texts[i])});
    total_tokens += query_tokens + static_cast<int>(Tokenize(texts[i]).size());
  }
  std::stable_sort(results.begin(), results.end(),
                   [](const Result& a, const Result& b) { return a.score > b.score; });
  int top_n = static_cast<int>(GetInt(body, "top_n").value_or(0));
  if (top_n > 0 && top_n < static_cast<int>(results.size())) results.resize(top_n);
  JsonWriter w;
  w.BeginObject();
  w.Key("id").String("score-" + BaseRequestId(req, GetStr(body, "request_id").value_or("")));
  w.Key("model").String(options_.model);
  w.Key("usage").BeginObject().Key("total_tokens").Int(total_tokens).EndObject();
  w.Key("results").BeginArray();
  for (const Result& r : results) {
    w.BeginObject().Key("index").Int(r.index);
    w.Key("document").BeginObject().Key("text").String(texts[r.index]).EndObject();
    w.Key("relevance_score").Double(r.score).EndObject();
  }
  w.EndArray().EndObject();
  co_return co_await Json(conn, req, http::status::ok, w.Take());
}

net::awaitable<bool> VllmSurface::Score(HttpConnection& conn, HttpRequest& req) {
  simdjson::dom::parser parser;
  object body;
  if (!ParseBodyObject(parser, req, &body)) {
    co_return co_await Error(conn, req, http::status::bad_request, "Bad Request",
                             JsonDecodeError());
  }
  if (auto unknown = UnknownModel(body, options_.model)) {
    co_return co_await Error(conn, req, http::status::not_found, "NotFoundError", *unknown,
                             "model");
  }
  auto texts_of = [&](std::string_view k1, std::string_view k2) {
    std::vector<std::string> out;
    auto e = Field(body, k1);
    if (!e) e = Field(body, k2);
    if (!e) return out;
    std::string_view s;
    array arr;
    if (e->get_string().get(s) == simdjson::SUCCESS) {
      out.emplace_back(s);
    } else if (e->get_array().get(arr) == simdjson::SUCCESS) {
      for (element x : arr) {
        if (x.get_string().get(s) == simdjson::SUCCESS) out.emplace_back(s);
      }
    }
    return out;
  };
  std::vector<std::string> left = texts_of("text_1", "queries");
  std::vector<std::string> right = texts_of("text_2", "documents");
  if (left.empty() || right.empty()) {
    co_return co_await Error(
        conn, req, http::status::bad_request, "Bad Request",
        ValidationMessage("missing", left.empty() ? "'body', 'text_1'" : "'body', 'text_2'",
                          "Field required"));
  }
  if (left.size() != 1 && left.size() != right.size()) {
    co_return co_await Error(conn, req, http::status::bad_request, "BadRequestError",
                             "Input lengths must be either 1:1, 1:N or N:N");
  }
  const std::string id = "score-" + BaseRequestId(req, GetStr(body, "request_id").value_or(""));
  JsonWriter w;
  w.BeginObject().Key("id").String(id).Key("object").String("list");
  w.Key("created").Int(std::time(nullptr)).Key("model").String(options_.model);
  w.Key("data").BeginArray();
  int tokens = 0;
  for (int i = 0; i < static_cast<int>(right.size()); ++i) {
    const std::string& q = left.size() == 1 ? left[0] : left[i];
    tokens += static_cast<int>(Tokenize(q).size() + Tokenize(right[i]).size());
    w.BeginObject().Key("index").Int(i).Key("object").String("score");
    w.Key("score").Double(Relevance(q, right[i])).EndObject();
  }
  w.EndArray().Key("usage");
  Usage(w, tokens, 0, std::nullopt, true);
  w.EndObject();
  co_return co_await Json(conn, req, http::status::ok, w.Take());
}

}  // namespace infertel::sim
