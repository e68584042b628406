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

struct ToolDef {
  std::string name, param = "input";
};

}  // namespace

// One request to /v1/chat/completions or /v1/completions, from its body to its answer
// (connection strand only).
struct SglOpenAiCall {
  bool chat = false;
  std::string model;
  SglIntake in;
  std::vector<ToolDef> tools;
  bool include_usage = false, continuous_usage = false;
  bool cache_report = false;
  std::shared_ptr<SglJob> job;
  std::vector<ChoiceOut> ch;
  std::vector<int> finish_order;
  std::string last_rid;
};

// ---------------------------------------------------------------------------------------------
// Parse and validate the body, in SGLang's order of checks.

namespace {

// A body the endpoint refuses with 400: SGLang's error type and message.
struct BadBody {
  std::string type, message;
};

std::optional<BadBody> CheckContentType(const HttpRequest& req) {
  std::string ct(req[http::field::content_type]);
  std::transform(ct.begin(), ct.end(), ct.begin(), [](unsigned char c) { return std::tolower(c); });
  std::string media = ct.substr(0, ct.find(';'));
  while (!media.empty() && media.back() == ' ') media.pop_back();
  if (media == "application/json") return std::nullopt;
  return BadBody{"Bad Request",
                 ValidationMessage("value_error", "'header', 'content-type'",
                                   "Unsupported Media Type: Only 'application/json' is allowed")};
}

// The tools offered (their names and first parameters), rendered into the system turn.
void ReadTools(const object& body, SglOpenAiCall* call, std::string* text) {
  auto te = Field(body, "tools");
  array tarr;
  if (!te || te->get_array().get(tarr) != simdjson::SUCCESS || tarr.size() == 0) return;
  for (element t : tarr) {
    ToolDef d;
    std::string_view name;
    if (t["function"]["name"].get_string().get(name) == simdjson::SUCCESS)
      d.name = std::string(name);
    object props;
    if (t["function"]["parameters"]["properties"].get_object().get(props) == simdjson::SUCCESS) {
      for (auto [k, v] : props) {
        d.param = std::string(k);
        break;
      }
    }
    call->tools.push_back(std::move(d));
  }
  *text += "<|im_start|>system\n# Tools\n" + simdjson::minify(*te) + "<|im_end|>\n";
}

// The chat prompt; whether the tool-call and reasoning parsers apply.
std::optional<BadBody> ChatPrompt(const object& body, const SglangSimOptions& f,
                                  SglOpenAiCall* call) {
  auto msgs = Field(body, "messages");
  array arr;
  if (!msgs || msgs->get_array().get(arr) != simdjson::SUCCESS) {
    return BadBody{"Bad Request",
                   ValidationMessage("missing", "'body', 'messages'", "Field required")};
  }
  std::string text;
  ReadTools(body, call, &text);
  std::string choice = GetStr(body, "tool_choice").value_or(call->tools.empty() ? "none" : "auto");
  std::string_view named;
  if (body["tool_choice"]["function"]["name"].get_string().get(named) == simdjson::SUCCESS) {
    choice = "named";
    for (auto& t : call->tools) t.name = std::string(named);
  }
  const bool parallel_tools = GetBool(body, "parallel_tool_calls", true);
  const bool tool_mode = !call->tools.empty() && choice != "none" && !f.tool_call_parser.empty();
  if (tool_mode) call->in.tool_calls = parallel_tools ? 2 : 1;
  AppendChatTurns(arr, &text);
  call->in.texts.push_back(text);
  call->in.prompts.push_back(Tokenize(text));
  bool reasoning = !f.reasoning_parser.empty() && GetBool(body, "separate_reasoning", true);
  bool thinking_off = false;
  if (body["chat_template_kwargs"]["enable_thinking"].get_bool().get(thinking_off) ==
          simdjson::SUCCESS &&
      !thinking_off)
    reasoning = false;
  if (GetStr(body, "reasoning_effort").value_or("") == "none") reasoning = false;
  call->in.reasoning = reasoning;
  return std::nullopt;
}

// The completion's prompt: a string, token ids, or a batch of either.
std::optional<BadBody> CompletionPrompt(const object& body, SglIntake* in) {
  auto p = Field(body, "prompt");
  if (!p) {
    return BadBody{"Bad Request",
                   ValidationMessage("missing", "'body', 'prompt'", "Field required")};
  }
  std::string_view sv;
  array arr;
  std::int64_t tok;
  if (p->get_string().get(sv) == simdjson::SUCCESS) {
    in->texts.emplace_back(sv);
    in->prompts.push_back(Tokenize(sv));
  } else if (p->get_array().get(arr) == simdjson::SUCCESS && arr.size() > 0) {
    if (arr.at(0).get_int64().get(tok) == simdjson::SUCCESS) {
      in->texts.emplace_back();
      in->prompts.push_back(TokenIds(arr));
    } else {
      for (element e : arr) {
        array inner;
        if (e.get_string().get(sv) == simdjson::SUCCESS) {
          in->texts.emplace_back(sv);
          in->prompts.push_back(Tokenize(sv));
        } else if (e.get_array().get(inner) == simdjson::SUCCESS) {
          in->texts.emplace_back();
          in->prompts.push_back(TokenIds(inner));
        }
      }
      in->batch = in->prompts.size() > 1;
    }
  }
  if (in->prompts.empty() || in->prompts[0].empty())
    return BadBody{"BadRequestError", "The input is empty."};
  return std::nullopt;
}

// Sampling, streaming, rids and trace context.
std::optional<BadBody> Sampling(const object& body, const HttpRequest& req,
                                const SglangSimOptions& f, SglOpenAiCall* call) {
  SglIntake& in = call->in;
  in.n = static_cast<int>(GetInt(body, "n").value_or(1));
  if (in.n < 1) return BadBody{"BadRequestError", "n must be at least 1."};
  std::optional<std::int64_t> mt = GetInt(body, "max_completion_tokens");
  if (!mt) mt = GetInt(body, "max_tokens");
  if (!call->chat && !mt) mt = 16;
  if (mt && *mt <= 0) {
    return BadBody{"Bad Request", ValidationMessage("value_error", "'body', 'max_tokens'",
                                                    "Value error, max_tokens must be positive",
                                                    std::to_string(*mt))};
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
  call->include_usage = f.stream_response_default_include_usage;
  if (auto so = Field(body, "stream_options")) {
    object soo;
    if (so->get_object().get(soo) == simdjson::SUCCESS) {
      call->include_usage = GetBool(soo, "include_usage", call->include_usage);
      call->continuous_usage = GetBool(soo, "continuous_usage_stats", false);
    }
  }
  in.user_rids = GetStrList(body, "rid");
  if (auto re = Field(body, "rid")) in.rid_is_list = re->is_array();
  if (auto it = req.find("traceparent"); it != req.end()) in.traceparent = std::string(it->value());
  if (auto it = req.find("tracestate"); it != req.end()) in.tracestate = std::string(it->value());
  in.bootstrap_room = static_cast<std::uint64_t>(GetInt(body, "bootstrap_room").value_or(0));
  return std::nullopt;
}

std::optional<BadBody> ParseOpenAi(const HttpRequest& req, const SglangSimOptions& f,
                                   SglOpenAiCall* call) {
  if (auto err = CheckContentType(req)) return err;
  simdjson::dom::parser parser;
  auto body = BodyObject(parser, req);
  if (!body) {
    return BadBody{"Bad Request",
                   ValidationMessage("json_invalid", "'body', 0", "JSON decode error")};
  }
  call->model = GetStr(*body, "model").value_or("default");
  call->in.log_rid_list = true;
  auto err = call->chat ? ChatPrompt(*body, f, call) : CompletionPrompt(*body, &call->in);
  if (!err) err = Sampling(*body, req, f, call);
  return err;
}

// ---------------------------------------------------------------------------------------------
// The choices' output: tokens routed to reasoning, content and tool calls, and their frames.

// The response state of each choice, with its tool calls' ids and names.
void InitChoices(SglOpenAiCall& call) {
  call.ch.resize(call.job->reqs.size());
  for (std::size_t i = 0; i < call.ch.size(); ++i) {
    call.ch[i].rid = call.job->reqs[i]->rid;
    const int calls = call.job->reqs[i]->router.num_calls;
    for (int k = 0; k < calls && !call.tools.empty(); ++k) {
      ToolCallOut t;
      t.id = "call_" + RandomHex(24);
      t.name = call.tools[static_cast<std::size_t>(k) % call.tools.size()].name;
      call.ch[i].calls.push_back(std::move(t));
    }
  }
}

// The usage of the choices `which`: prompt and cached tokens once per prompt, completion and
// reasoning per choice.
std::string UsageOf(const SglOpenAiCall& call, const std::vector<int>& which) {
  int prompt = 0, completion = 0, cached = 0, reasoning_tokens = 0;
  for (int i : which) {
    const SglReq& r = *call.job->reqs[static_cast<std::size_t>(i)];
    const ChoiceOut& c = call.ch[static_cast<std::size_t>(i)];
    if (i % call.in.n == 0) {
      prompt += static_cast<int>(r.prompt.size());
      cached += c.record.cached_tokens;
    }
    completion += c.tokens;
    reasoning_tokens += c.reasoning_tokens;
  }
  JsonWriter w;
  UsageJson(w, prompt, completion, cached, call.cache_report, reasoning_tokens);
  return w.Take();
}

std::vector<int> AllChoices(const SglOpenAiCall& call) {
  std::vector<int> all;
  for (int i = 0; i < static_cast<int>(call.ch.size()); ++i) all.push_back(i);
  return all;
}

// Consecutive tokens of one emission that go to the same part (reasoning, content, call k).
struct Group {
  int route;
  std::string text;
};

// Counts the emission's tokens into `c` and splits its text over them (a stop string may have
// cut the last ones short).
std::vector<Group> SplitText(const SglEmission& em, bool chat, const SglRouter& router,
                             ChoiceOut& c) {
  std::size_t pos = 0;
  std::vector<Group> groups;
  for (const auto& t : em.tokens) {
    const int route = chat ? router.Route(c.tokens) : -1;
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
  return groups;
}

// A text_completion chunk; `last` carries the finish reason. No usage when `usage` is empty.
std::string CompletionChunk(const std::string& rid, const std::string& model, int idx,
                            const std::string& text, bool last, const SglEmission& em,
                            const std::string& usage) {
  JsonWriter w;
  w.BeginObject().Key("id").String(rid).Key("object").String("text_completion");
  w.Key("created").Int(std::time(nullptr)).Key("model").String(model);
  w.Key("choices").BeginArray().BeginObject().Key("index").Int(idx);
  w.Key("text").String(text).Key("logprobs").Null();
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
  if (!usage.empty())
    w.Raw(usage);
  else
    w.Null();
  w.EndObject();
  return w.Take();
}

// Closes the open tool call of `c` (its arguments' closing quote and brace).
void CloseCall(const SglOpenAiCall& call, ChoiceOut& c, int idx, std::vector<std::string>* frames) {
  if (c.cur_call < 0 || c.calls[c.cur_call].closed) return;
  c.calls[c.cur_call].args_text += "\"}";
  c.calls[c.cur_call].closed = true;
  ToolDelta d{c.cur_call, nullptr, nullptr, "\"}"};
  if (call.in.stream) frames->push_back(FullChunk(c.rid, call.model, idx, nullptr, &d));
}

// Text routed to tool call `k`: opens it (id, name, the argument's key), then its arguments.
void ToolCallFrames(const SglOpenAiCall& call, ChoiceOut& c, int idx, int k,
                    const std::string& text, std::vector<std::string>* frames) {
  if (c.cur_call != k) CloseCall(call, c, idx, frames);
  c.cur_call = k;
  ToolCallOut& tc = c.calls[static_cast<std::size_t>(k)];
  std::string args;
  if (!tc.started) {
    tc.started = true;
    ToolDelta head{k, &tc.id, &tc.name, ""};
    if (call.in.stream) frames->push_back(FullChunk(c.rid, call.model, idx, nullptr, &head));
    const std::string param =
        call.tools.empty() ? std::string("input")
                           : call.tools[static_cast<std::size_t>(k) % call.tools.size()].param;
    args = "{\"" + EscapeInner(param) + "\": \"";
  }
  args += EscapeInner(text);
  tc.args_text += args;
  ToolDelta d{k, nullptr, nullptr, args};
  if (call.in.stream && !args.empty())
    frames->push_back(FullChunk(c.rid, call.model, idx, nullptr, &d));
}

// Absorbs one emission into its choice; its stream frames (none when not streaming).
std::vector<std::string> EmissionFrames(SglOpenAiCall& call, const SglEmission& em) {
  const int idx = em.idx;
  ChoiceOut& c = call.ch[static_cast<std::size_t>(idx)];
  const SglReq& r = *call.job->reqs[static_cast<std::size_t>(idx)];
  const bool stream = call.in.stream;
  std::vector<std::string> frames;
  if (stream && call.chat && !c.first_sent) {
    const std::string empty;
    frames.push_back(FastChunk(c.rid, call.model, idx, "assistant", &empty, nullptr, "",
                               FinishReason::kNone, "", ""));
  }
  c.first_sent = true;
  const std::vector<Group> groups = SplitText(em, call.chat, r.router, c);
  const std::string usage_now = call.continuous_usage ? UsageOf(call, {idx}) : "";
  for (const Group& g : groups) {
    c.text += g.text;
    if (g.route == -2) {
      c.reasoning += g.text;
      if (stream && !g.text.empty())
        frames.push_back(FastChunk(c.rid, call.model, idx, nullptr, nullptr, &g.text, "",
                                   FinishReason::kNone, "", usage_now));
    } else if (g.route == -1) {
      c.content += g.text;
      if (!stream || g.text.empty()) continue;
      const bool last = em.finished && &g == &groups.back();
      if (!call.chat)
        frames.push_back(CompletionChunk(c.rid, call.model, idx, g.text, last, em, usage_now));
      else if (c.calls.empty())
        frames.push_back(FastChunk(c.rid, call.model, idx, nullptr, &g.text, nullptr, "",
                                   FinishReason::kNone, "", usage_now));
      else
        frames.push_back(FullChunk(c.rid, call.model, idx, &g.text, nullptr));
    } else {
      ToolCallFrames(call, c, idx, g.route, g.text, &frames);
    }
  }
  return frames;
}

// The last emission of a choice: its open tool call closed, its finish kept.
void FinishChoice(SglOpenAiCall& call, const SglEmission& em, std::vector<std::string>* frames) {
  ChoiceOut& c = call.ch[static_cast<std::size_t>(em.idx)];
  CloseCall(call, c, em.idx, frames);
  c.finished = true;
  c.reason = em.reason;
  c.stop_reason = em.stop_reason;
  c.record = em.record;
  call.finish_order.push_back(em.idx);
  --call.job->remaining;
}

// ---------------------------------------------------------------------------------------------
// The end of the answer: the stream's finish, usage and [DONE] frames, or the whole body.

net::awaitable<bool> EndStream(HttpConnection& conn, const SglOpenAiCall& call) {
  auto send = [&](const std::string& json) -> net::awaitable<bool> {
    co_return co_await conn.WriteChunk("data: " + json + "\n\n");
  };
  if (call.chat) {
    for (int idx : call.finish_order) {
      const ChoiceOut& c = call.ch[static_cast<std::size_t>(idx)];
      if (!co_await send(FastChunk(c.rid, call.model, idx, nullptr, nullptr, nullptr,
                                   FinishName(c.reason, !c.calls.empty() && c.calls[0].started),
                                   c.reason, c.stop_reason, "")))
        co_return false;
    }
  }
  if (call.include_usage) {
    JsonWriter w;
    w.BeginObject().Key("id").String(call.last_rid);
    w.Key("object").String(call.chat ? "chat.completion.chunk" : "text_completion");
    w.Key("created").Int(std::time(nullptr)).Key("model").String(call.model);
    w.Key("choices").BeginArray().EndArray().Key("usage").Raw(UsageOf(call, AllChoices(call)));
    w.EndObject();
    if (!co_await send(w.Take())) co_return false;
  }
  if (!co_await send("[DONE]")) co_return false;
  co_return co_await conn.EndStream();
}

// The chat message of a choice: content, reasoning and tool calls.
void ChatMessage(JsonWriter& w, const ChoiceOut& c, bool called) {
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
}

std::string CompletionBody(const SglOpenAiCall& call, const std::string& weight_version) {
  JsonWriter w;
  w.BeginObject().Key("id").String(call.ch.empty() ? "" : call.ch[0].rid);
  w.Key("object").String(call.chat ? "chat.completion" : "text_completion");
  w.Key("created").Int(std::time(nullptr)).Key("model").String(call.model);
  w.Key("choices").BeginArray();
  for (int i = 0; i < static_cast<int>(call.ch.size()); ++i) {
    const ChoiceOut& c = call.ch[static_cast<std::size_t>(i)];
    const bool called = !c.calls.empty() && c.calls[0].started;
    w.BeginObject().Key("index").Int(i);
    if (call.chat)
      ChatMessage(w, c, called);
    else
      w.Key("text").String(c.content);
    w.Key("logprobs").Null().Key("finish_reason").String(FinishName(c.reason, called));
    w.Key("matched_stop");
    MatchedStop(w, c.reason, c.stop_reason);
    w.EndObject();
  }
  w.EndArray().Key("usage").Raw(UsageOf(call, AllChoices(call)));
  w.Key("metadata").BeginObject().Key("weight_version").String(weight_version).EndObject();
  w.EndObject();
  return w.Take();
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The stages.

net::awaitable<bool> SglangSurface::RelayOpenAi(HttpConnection& conn, HttpRequest& req,
                                                SglOpenAiCall& call) {
  SglJob& job = *call.job;
  if (call.in.stream && !co_await conn.BeginStream(
                            http::status::ok, "text/event-stream; charset=utf-8", req.keep_alive()))
    co_return false;
  call.last_rid = call.ch.empty() ? "" : call.ch[0].rid;
  while (job.remaining > 0) {
    if (!co_await Next(conn, job)) co_return false;
    while (!job.ready.empty()) {
      SglEmission em = std::move(job.ready.front());
      job.ready.pop_front();
      const ChoiceOut& c = call.ch[static_cast<std::size_t>(em.idx)];
      call.last_rid = c.rid;
      std::vector<std::string> frames = EmissionFrames(call, em);
      if (em.finished) {
        FinishChoice(call, em, &frames);
        co_await PdFinish(*job.reqs[static_cast<std::size_t>(em.idx)], &job);
        // A completion whose last step produced no visible text still reports its finish.
        if (call.in.stream && !call.chat && em.tokens.empty())
          frames.push_back(CompletionChunk(c.rid, call.model, em.idx, "", true, em, ""));
      } else {
        call.ch[static_cast<std::size_t>(em.idx)].record = em.record;
      }
      for (const auto& fr : frames) {
        if (job.write_failed) break;
        // A failed write is a disconnect; the next wait aborts.
        if (!co_await conn.WriteChunk("data: " + fr + "\n\n")) job.write_failed = true;
      }
    }
  }
  co_return true;
}

net::awaitable<bool> SglangSurface::OpenAi(HttpConnection& conn, HttpRequest& req, bool chat) {
  const std::uint64_t created_ns = WallNanos();
  const std::uint64_t func_start = MonoNanos();
  SglOpenAiCall call;
  call.chat = chat;
  call.cache_report = o_.flags.enable_cache_report;
  if (auto err = ParseOpenAi(req, o_.flags, &call))
    co_return co_await Error(conn, req, http::status::bad_request, err->type, err->message);
  call.job = std::make_shared<SglJob>();
  if (auto err = PrepareJob(call.in, created_ns, *call.job))
    co_return co_await Error(conn, req, http::status::bad_request, "BadRequestError", *err);
  if (!co_await Admit(conn, call.job)) {
    co_return co_await Error(conn, req, http::status::internal_server_error, "InternalServerError",
                             "The engine refused the request.");
  }
  InitChoices(call);
  if (!co_await RelayOpenAi(conn, req, call)) co_return false;
  if (o_.metrics)
    o_.metrics->ObserveFuncLatency(static_cast<double>(MonoNanos() - func_start) / 1e9);
  if (call.in.stream) co_return co_await EndStream(conn, call);
  co_return co_await Json(conn, req, http::status::ok,
                          CompletionBody(call, o_.flags.weight_version));
}

}  // namespace infertel::sim
