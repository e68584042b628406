// The SGLang simulator's native /generate: text or input_ids, sampling_params, meta_info, and
// the stream of cumulative or incremental outputs.

#include <simdjson.h>

#include <algorithm>
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

// The output of one rid so far (connection strand only).
struct NativeOut {
  std::string text;
  std::vector<TokenId> ids;
  int tokens = 0;
  FinishReason reason = FinishReason::kNone;
  std::string stop;
  RequestRecord record;
  bool finished = false;
  std::uint64_t finished_ns = 0;
};

}  // namespace

// One request to /generate, from its body to its answer (connection strand only).
struct SglGenerateCall {
  const SglangSimOptions* flags = nullptr;
  bool pp_rank = false, trace_levels = false;  // the era's meta_info fields
  SglIntake in;
  std::shared_ptr<SglJob> job;
  std::vector<NativeOut> outs;
};

// ---------------------------------------------------------------------------------------------
// Parse and validate the body; a refusal is {"error": {"message": …}} with 400.

namespace {

std::string NativeError(const std::string& message) {
  JsonWriter w;
  w.BeginObject().Key("error").BeginObject().Key("message").String(message).EndObject().EndObject();
  return w.Take();
}

// The prompts: text (a string or a batch of them), else input_ids (a list or a batch).
std::optional<std::string> Prompts(const object& body, SglIntake* in) {
  if (auto t = Field(body, "text")) {
    std::string_view sv;
    array arr;
    if (t->get_string().get(sv) == simdjson::SUCCESS) {
      in->texts.emplace_back(sv);
    } else if (t->get_array().get(arr) == simdjson::SUCCESS) {
      in->batch = true;
      for (element e : arr)
        if (e.get_string().get(sv) == simdjson::SUCCESS) in->texts.emplace_back(sv);
    }
    for (const auto& s : in->texts) in->prompts.push_back(Tokenize(s));
  } else if (auto ids = Field(body, "input_ids")) {
    array arr;
    std::int64_t tok;
    if (ids->get_array().get(arr) == simdjson::SUCCESS && arr.size() > 0) {
      if (arr.at(0).get_int64().get(tok) == simdjson::SUCCESS) {
        in->prompts.push_back(TokenIds(arr));
        in->texts.emplace_back();
      } else {
        in->batch = true;
        for (element e : arr) {
          array inner;
          if (e.get_array().get(inner) != simdjson::SUCCESS) continue;
          in->prompts.push_back(TokenIds(inner));
          in->texts.emplace_back();
        }
      }
    }
  }
  if (in->prompts.empty()) return "Either text, input_ids or input_embeds should be provided.";
  return std::nullopt;
}

// sampling_params, with SamplingParams' defaults.
std::optional<std::string> Sampling(const object& body, const SglangSimOptions& f, SglIntake* in) {
  object sp;
  const bool has_sp = body["sampling_params"].get_object().get(sp) == simdjson::SUCCESS;
  in->max_new_tokens = 128;
  in->stream_interval = f.stream_interval;
  if (has_sp) {
    if (auto v = GetInt(sp, "max_new_tokens")) in->max_new_tokens = static_cast<int>(*v);
    in->stop = GetStrList(sp, "stop");
    in->ignore_eos = GetBool(sp, "ignore_eos", false);
    in->temperature = GetDouble(sp, "temperature").value_or(1.0);
    in->top_p = GetDouble(sp, "top_p").value_or(1.0);
    in->top_k = static_cast<int>(GetInt(sp, "top_k").value_or(-1));
    in->n = static_cast<int>(GetInt(sp, "n").value_or(1));
    in->seed = static_cast<std::uint64_t>(GetInt(sp, "sampling_seed").value_or(0));
    if (auto v = GetInt(sp, "stream_interval")) {
      in->stream_interval = static_cast<int>(*v);
      in->log_stream_interval = true;
    }
  }
  if (in->max_new_tokens && *in->max_new_tokens < 0) {
    return "max_new_tokens must be at least 0, got " + std::to_string(*in->max_new_tokens) + ".";
  }
  if (in->n < 1) return "n must be at least 1.";
  return std::nullopt;
}

// Streaming, rids, PD room and trace context (an external_trace_header in the body wins over
// the HTTP headers).
void Routing(const object& body, const HttpRequest& req, SglIntake* in) {
  in->stream = GetBool(body, "stream", false);
  in->user_rids = GetStrList(body, "rid");
  if (auto re = Field(body, "rid")) in->rid_is_list = re->is_array();
  in->bootstrap_room = static_cast<std::uint64_t>(GetInt(body, "bootstrap_room").value_or(0));
  object eth;
  if (body["external_trace_header"].get_object().get(eth) == simdjson::SUCCESS) {
    in->traceparent = GetStr(eth, "traceparent").value_or("");
    in->tracestate = GetStr(eth, "tracestate").value_or("");
  } else {
    if (auto it = req.find("traceparent"); it != req.end())
      in->traceparent = std::string(it->value());
    if (auto it = req.find("tracestate"); it != req.end())
      in->tracestate = std::string(it->value());
  }
}

std::optional<std::string> ParseGenerate(const object& body, const HttpRequest& req,
                                         const SglangSimOptions& f, SglIntake* in) {
  auto err = Prompts(body, in);
  if (!err) err = Sampling(body, f, in);
  if (err) return err;
  Routing(body, req, in);
  in->reasoning = !f.reasoning_parser.empty();
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// The answer: text, output_ids and meta_info of each rid.

// When the scheduler ran the request (--enable-metrics).
void SchedulerTimes(JsonWriter& w, const RequestRecord& rec) {
  const std::int64_t off = static_cast<std::int64_t>(rec.arrival_wall_ns) -
                           static_cast<std::int64_t>(rec.arrival_mono_ns);
  auto wall_s = [&](std::uint64_t mono) {
    return static_cast<double>(static_cast<std::int64_t>(mono) + off) / 1e9;
  };
  w.Key("forward_entry_time").Double(wall_s(rec.scheduled_mono_ns));
  if (rec.first_token_mono_ns)
    w.Key("prefill_finished_time").Double(wall_s(rec.first_token_mono_ns));
  w.Key("queue_time")
      .Double(static_cast<double>(rec.scheduled_mono_ns - rec.arrival_mono_ns) / 1e9);
}

// Speculative decoding's acceptance (a finished request, --speculative-algorithm).
void SpecInfo(JsonWriter& w, const RequestRecord& rc) {
  const double rate =
      rc.spec_proposed ? static_cast<double>(rc.spec_accepted) / rc.spec_proposed : 0;
  const double len = rc.spec_verify_ct ? static_cast<double>(rc.spec_accepted + rc.spec_verify_ct) /
                                             rc.spec_verify_ct
                                       : 0;
  w.Key("spec_verify_ct").Int(rc.spec_verify_ct);
  w.Key("spec_accept_rate").Double(rate).Key("spec_accept_length").Double(len);
  w.Key("spec_num_correct_drafts").Int(rc.spec_accepted);
  w.Key("spec_num_proposed_drafts").Int(rc.spec_proposed);
  w.Key("spec_accepted_drafts").Int(rc.spec_accepted);
  w.Key("spec_proposed_drafts").Int(rc.spec_proposed);
}

// The request's timestamps and decode throughput (a finished request, --enable-metrics).
void FinishTimes(JsonWriter& w, const NativeOut& o, const SglangRequestTimeline& tl) {
  w.Key("request_received_ts").Double(WallSeconds(tl.created_ns));
  w.Key("api_server_dispatch_finish_ts").Double(WallSeconds(tl.dispatch_end_ns));
  w.Key("request_finished_ts").Double(WallSeconds(o.finished_ns));
  if (o.record.generated_tokens > 1 && o.record.last_token_mono_ns > o.record.first_token_mono_ns) {
    w.Key("decode_throughput")
        .Double(static_cast<double>(o.record.generated_tokens - 1) /
                (static_cast<double>(o.record.last_token_mono_ns - o.record.first_token_mono_ns) /
                 1e9));
  }
}

void MetaInfo(JsonWriter& w, const SglGenerateCall& call, std::size_t i) {
  const SglangSimOptions& f = *call.flags;
  const bool metrics_meta = f.enable_metrics;
  const NativeOut& o = call.outs[i];
  const SglReq& r = *call.job->reqs[i];
  const SglangRequestTimeline& tl = r.span.timeline;
  w.BeginObject();
  w.Key("id").String(r.rid).Key("finish_reason");
  FinishReasonObject(w, o.finished ? o.reason : FinishReason::kNone, o.stop, o.tokens);
  w.Key("prompt_tokens").Int(static_cast<std::int64_t>(r.prompt.size()));
  w.Key("weight_version").String(f.weight_version);
  if (call.pp_rank) w.Key("num_retractions").Int(o.record.preemptions);
  if (metrics_meta && o.record.scheduled_mono_ns) SchedulerTimes(w, o.record);
  if (call.trace_levels) w.Key("reasoning_tokens").Int(std::min(o.tokens, r.router.reasoning_len));
  w.Key("completion_tokens").Int(o.tokens);
  w.Key("cached_tokens").Int(o.record.cached_tokens);
  if (o.finished) {
    w.Key("e2e_latency").Double(WallSeconds(o.finished_ns - tl.created_ns));
    if (!f.speculative_algorithm.empty()) SpecInfo(w, o.record);
    if (metrics_meta) FinishTimes(w, o, tl);
    w.Key("response_sent_to_client_ts").Double(WallSeconds(WallNanos()));
  }
  w.EndObject();
}

// Rid i's output: whole, or (delta) only what came after text_from and ids_from.
std::string OutJson(const SglGenerateCall& call, std::size_t i, bool delta, std::size_t text_from,
                    std::size_t ids_from) {
  JsonWriter w;
  w.BeginObject();
  const NativeOut& o = call.outs[i];
  w.Key("text").String(delta ? o.text.substr(text_from) : o.text);
  w.Key("output_ids").BeginArray();
  for (std::size_t k = delta ? ids_from : 0; k < o.ids.size(); ++k) w.Int(o.ids[k]);
  w.EndArray().Key("meta_info");
  MetaInfo(w, call, i);
  if (call.outs.size() > 1 && call.in.stream) w.Key("index").Int(static_cast<int>(i));
  w.EndObject();
  return w.Take();
}

// The non-streaming answer: one output, or the list of a batch.
std::string NativeBody(const SglGenerateCall& call) {
  if (call.outs.size() <= 1) return OutJson(call, 0, false, 0, 0);
  std::string list = "[";
  for (std::size_t i = 0; i < call.outs.size(); ++i)
    list += (i ? "," : "") + OutJson(call, i, false, 0, 0);
  list += "]";
  return list;
}

// Absorbs one emission into its rid's output.
void Absorb(NativeOut& o, const SglEmission& em) {
  o.text += em.text;
  for (const auto& t : em.tokens) o.ids.push_back(t.id);
  o.tokens += static_cast<int>(em.tokens.size());
  o.record = em.record;
  if (em.finished) {
    o.finished = true;
    o.reason = em.reason;
    o.stop = em.stop_reason;
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The stages.

net::awaitable<bool> SglangSurface::RelayGenerate(HttpConnection& conn, HttpRequest& req,
                                                  SglGenerateCall& call) {
  SglJob& job = *call.job;
  const bool stream = call.in.stream;
  if (stream && !co_await conn.BeginStream(http::status::ok, "text/event-stream; charset=utf-8",
                                           req.keep_alive()))
    co_return false;
  while (job.remaining > 0) {
    if (!co_await Next(conn, job)) co_return false;
    while (!job.ready.empty()) {
      SglEmission em = std::move(job.ready.front());
      job.ready.pop_front();
      const std::size_t i = static_cast<std::size_t>(em.idx);
      NativeOut& o = call.outs[i];
      const std::size_t text_from = o.text.size(), ids_from = o.ids.size();
      Absorb(o, em);
      if (em.finished) {
        --job.remaining;
        SglReq& r = *job.reqs[i];
        co_await PdFinish(r, &job);
        std::lock_guard lk(r.mu);
        o.finished_ns =
            r.span.timeline.transfer_end_ns ? r.span.timeline.transfer_end_ns : em.sent_ns;
      }
      if (stream && !job.write_failed &&
          !co_await conn.WriteChunk(
              "data: " +
              OutJson(call, i, o_.flags.incremental_streaming_output, text_from, ids_from) +
              "\n\n")) {
        job.write_failed = true;
      }
    }
  }
  co_return true;
}

net::awaitable<bool> SglangSurface::Generate(HttpConnection& conn, HttpRequest& req) {
  const std::uint64_t created_ns = WallNanos();
  const std::uint64_t func_start = MonoNanos();
  simdjson::dom::parser parser;
  auto body = BodyObject(parser, req);
  if (!body) {
    co_return co_await Error(conn, req, http::status::bad_request, "Bad Request",
                             ValidationMessage("json_invalid", "'body', 0", "JSON decode error"));
  }
  SglGenerateCall call;
  call.flags = &o_.flags;
  call.pp_rank = era_.pp_rank;
  call.trace_levels = era_.trace_levels;
  std::optional<std::string> err = ParseGenerate(*body, req, o_.flags, &call.in);
  call.job = std::make_shared<SglJob>();
  if (!err) err = PrepareJob(call.in, created_ns, *call.job);
  if (err) co_return co_await Json(conn, req, http::status::bad_request, NativeError(*err));
  if (!co_await Admit(conn, call.job)) {
    co_return co_await Json(conn, req, http::status::bad_request,
                            NativeError("The engine refused the request."));
  }
  call.outs.resize(call.job->reqs.size());
  if (!co_await RelayGenerate(conn, req, call)) co_return false;
  if (o_.metrics)
    o_.metrics->ObserveFuncLatency(static_cast<double>(MonoNanos() - func_start) / 1e9);
  if (call.in.stream) {
    if (!co_await conn.WriteChunk("data: [DONE]\n\n")) co_return false;
    co_return co_await conn.EndStream();
  }
  co_return co_await Json(conn, req, http::status::ok, NativeBody(call));
}

}  // namespace infertel::sim
