// The SGLang simulator's OpenAI endpoints: /v1/chat/completions and /v1/completions, with
// SGLang's ids, chunk shapes, usage, reasoning and tool-call parsers.

#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/clock.h"
#include "sim/engine/tokenizer.h"
#include "sim/json_fields.h"
#include "sim/json_writer.h"
#include "sim/sglang/sglang_surface.h"
#include "sim/sglang/sglang_surface_internal.h"

namespace infertel::sim {
namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

std::string EscapeInner(std::string_view s) {
  std::string out;
  AppendJsonString(&out, s);
  return out.substr(1, out.size() - 2);
}

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
  SglIntake in;

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
    SglRouter rt;
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
      SglEmission em = std::move(job->ready.front());
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

}  // namespace infertel::sim
