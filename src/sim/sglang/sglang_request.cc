// A request body turned into the SGLang simulator's job (one engine sequence per prompt and
// sample, with their rids), and its lines in the request log (received, finished).

#include <fmt/format.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "sim/json_writer.h"
#include "sim/sglang/sglang_surface.h"
#include "sim/sglang/sglang_surface_internal.h"

namespace infertel::sim {
namespace {

// A list of strings, or (not `list`) its first one.
void StringOrList(JsonWriter& w, bool list, const std::vector<std::string>& v) {
  if (list) {
    w.BeginArray();
    for (const auto& x : v) w.String(x);
    w.EndArray();
  } else {
    w.String(v.empty() ? "" : v[0]);
  }
}

// The rids of a request with `total` sequences.
std::vector<std::string> MakeRids(const SglIntake& in, int total) {
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

// The request log's "request.finished" event (JSON format).
std::string FinishedJson(const SglReq& r, const SglangRequestTimeline& tl, std::size_t max_len,
                         bool skip_out) {
  const RequestRecord& rec = r.record;
  JsonWriter w;
  w.BeginObject().Key("event").String("request.finished").Key("rid").String(r.rid);
  w.Key("obj").Raw(r.log_obj_json.empty() ? "{}" : r.log_obj_json).Key("out").BeginObject();
  if (!skip_out) {
    w.Key("text").String(r.text.size() > max_len ? r.text.substr(0, max_len / 2) + "..." +
                                                       r.text.substr(r.text.size() - max_len / 2)
                                                 : r.text);
    w.Key("output_ids").BeginArray();
    for (TokenId t : r.ids) w.Int(t);
    w.EndArray();
  }
  w.Key("meta_info").BeginObject().Key("id").String(r.rid).Key("finish_reason");
  FinishReasonObject(w, rec.finish_reason, r.stop_reason, rec.generated_tokens);
  w.Key("prompt_tokens").Int(rec.prompt_tokens).Key("completion_tokens").Int(rec.generated_tokens);
  w.Key("cached_tokens").Int(rec.cached_tokens);
  w.Key("e2e_latency").Double(WallSeconds(tl.finished_ns - tl.created_ns));
  w.EndObject().EndObject().EndObject();
  return w.Take();
}

// The request log's "Finish: obj=…, out=…" line (text format): the output as Python prints it.
std::string FinishedText(const SglReq& r, const SglangRequestTimeline& tl, std::size_t max_len,
                         bool skip_out, const std::string& weight_version) {
  const RequestRecord& rec = r.record;
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
         ", 'weight_version': " + PyRepr(weight_version) +
         ", 'completion_tokens': " + std::to_string(rec.generated_tokens) +
         ", 'cached_tokens': " + std::to_string(rec.cached_tokens) +
         ", 'e2e_latency': " + PyFloat(WallSeconds(tl.finished_ns - tl.created_ns)) + "}}";
  return "Finish: obj=" + r.log_obj_text + ", out=" + out;
}

}  // namespace

std::string SamplingRepr(const SglIntake& in, bool with_interval) {
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

std::string ObjJson(int level, const std::vector<std::string>& texts, bool batch,
                    const SglIntake& in, const std::vector<std::string>& rids) {
  JsonWriter w;
  w.BeginObject();
  if (level >= 2) {
    w.Key("text");
    StringOrList(w, batch, texts);
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
  StringOrList(w, batch, rids);
  w.Key("stream").Bool(in.stream).Key("log_metrics").Bool(true).EndObject();
  return w.Take();
}

std::optional<std::string> BuildJob(const SglIntake& in, int context_len, SglJob* job,
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

std::optional<std::string> SglangSurface::PrepareJob(const SglIntake& in, std::uint64_t created_ns,
                                                     SglJob& job) {
  job.stream = in.stream;
  std::vector<std::string> rids;
  if (auto err = BuildJob(in, engine_->config().max_model_len, &job, &rids)) return err;
  const std::uint64_t tokenized_ns = WallNanos();
  const LogConfig lc = log_config();
  const std::string sampling = SamplingRepr(in, in.log_stream_interval);
  for (auto& r : job.reqs) {
    r->span.timeline.created_ns = created_ns;
    r->span.timeline.tokenize_end_ns = tokenized_ns;
    r->span.trace_level = trace_level_.load();
    if (in.reasoning)
      r->router.reasoning_len = 2 + static_cast<int>(std::hash<std::string>{}(r->rid) % 5);
    r->router.num_calls = in.tool_calls;
    if (lc.log_requests) {
      const std::string& t = in.texts[static_cast<std::size_t>(r->prompt_index)];
      r->log_obj_text = ObjText(lc.level, {t}, false, sampling, {r->rid}, in.stream);
      r->log_obj_json = ObjJson(lc.level, {t}, false, in, {r->rid});
    }
  }
  if (lc.log_requests) LogReceived(in, job, rids, lc, sampling);
  return std::nullopt;
}

void SglangSurface::LogReceived(const SglIntake& in, const SglJob& job,
                                const std::vector<std::string>& rids, const LogConfig& lc,
                                const std::string& sampling) {
  const bool batch = job.reqs.size() > 1;
  std::vector<std::string> texts;
  for (auto& r : job.reqs) texts.push_back(in.texts[static_cast<std::size_t>(r->prompt_index)]);
  if (lc.format == "json") {
    JsonWriter w;
    w.BeginObject().Key("event").String("request.received").Key("rid");
    StringOrList(w, batch && in.log_rid_list, rids);
    w.Key("obj").Raw(ObjJson(lc.level, texts, batch, in, rids)).EndObject();
    Log(w.Take());
  } else {
    Log("Receive: obj=" + ObjText(lc.level, texts, batch, sampling, rids, in.stream));
  }
}

void SglangSurface::LogFinished(const SglReq& r, const SglangRequestTimeline& tl) {
  const LogConfig lc = log_config();
  if (!lc.log_requests) return;
  const std::size_t max_len = lc.level == 2 ? 2048 : (std::size_t{1} << 30);
  const bool skip_out = lc.level <= 1;
  if (lc.format == "json")
    Log(FinishedJson(r, tl, max_len, skip_out));
  else
    Log(FinishedText(r, tl, max_len, skip_out, o_.flags.weight_version));
}

}  // namespace infertel::sim
