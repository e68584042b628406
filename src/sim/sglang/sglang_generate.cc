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

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

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
  SglIntake in;
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
      SglEmission em = std::move(job->ready.front());
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
