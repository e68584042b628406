#include "sim/sglang/sglang_tracing.h"

#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <memory>

#include "core/ids.h"
#include "core/semconv.h"
#include "sim/otlp/python_resource.h"

namespace infertel::sim {

namespace sgl_stage {
// RequestStage (observability/req_time_stats.py): name, level, metrics_is_observed.
const SglangStage kTokenize{semconv::kSglStageTokenize, 1, false};
const SglangStage kApiServerDispatch{semconv::kSglStageApiServerDispatch, 2, false};
const SglangStage kDispatchOld{semconv::kSglStageDispatchOld, 2, false};
const SglangStage kRequestProcess{semconv::kSglStageRequestProcess, 2, true};
const SglangStage kPrefillWaiting{semconv::kSglStagePrefillWaiting, 1, false};
const SglangStage kPrefillForward{semconv::kSglStagePrefillForward, 1, true};
const SglangStage kChunkedPrefill{semconv::kSglStageChunkedPrefill, 3, true};
const SglangStage kDecodeWaiting{semconv::kSglStageDecodeWaiting, 1, true};
const SglangStage kDecodeForward{semconv::kSglStageDecodeForward, 1, false};
const SglangStage kDecodeLoop{semconv::kSglStageDecodeLoop, 3, false};
const SglangStage kSpecDraft{semconv::kSglStageSpecDraft, 2, false};
const SglangStage kSpecVerify{semconv::kSglStageSpecVerify, 2, false};
const SglangStage kSpecDraftExtend{semconv::kSglStageSpecDraftExtend, 3, false};
const SglangStage kPrefillPrepare{semconv::kSglStagePrefillPrepare, 1, false};
const SglangStage kPrefillBootstrap{semconv::kSglStagePrefillBootstrap, 1, true};
const SglangStage kPrefillTransferKvCache{semconv::kSglStagePrefillTransferKvCache, 1, true};
const SglangStage kDecodePrepare{semconv::kSglStageDecodePrepare, 1, true};
const SglangStage kDecodeBootstrap{semconv::kSglStageDecodeBootstrap, 1, true};
const SglangStage kDecodeTransferred{semconv::kSglStageDecodeTransferred, 1, true};
const SglangStage kFakeOutput{semconv::kSglStageFakeOutput, 3, true};
}  // namespace sgl_stage

AnyValue SglStr(std::string_view v) {
  AnyValue a;
  a.set_string_value(std::string(v));
  return a;
}
AnyValue SglInt(std::int64_t v) {
  AnyValue a;
  a.set_int_value(v);
  return a;
}
AnyValue SglDouble(double v) {
  AnyValue a;
  a.set_double_value(v);
  return a;
}

Resource BuildSglangResource(const SimEnvFn& env) {
  Resource r = PythonSdkResource(env);
  SetResourceString(&r, semconv::kServiceName, kSglangServiceName);
  return r;
}

std::string SglangHostId() {
  std::ifstream f("/etc/machine-id");
  std::string id;
  if (f && std::getline(f, id)) {
    while (!id.empty() && (id.back() == ' ' || id.back() == '\n' || id.back() == '\r'))
      id.pop_back();
    if (!id.empty()) return id;
  }
  return "unknown";
}

std::string SglangOrigRid(std::string_view rid) {
  auto pos = rid.rfind('_');
  return std::string(pos == std::string_view::npos ? rid : rid.substr(pos + 1));
}

std::string SglangReqSpanName(std::string_view role, std::string_view rid) {
  std::string orig = SglangOrigRid(rid);
  return std::string(role) + std::string(semconv::kSglReqSpanInfix) + orig.substr(0, 8);
}

std::string SglangThreadSpanName(std::string_view label, std::optional<int> tp,
                                 std::optional<int> pp, std::optional<int> dp,
                                 std::string_view host_id, int tid) {
  // The fragments each carry their own spaces, so several ranks give double spaces.
  std::string name(label);
  if (tp) name += fmt::format(" [TP {}] ", *tp);
  if (pp) name += fmt::format(" [PP {}] ", *pp);
  if (dp) name += fmt::format(" [DP {}] ", *dp);
  name += fmt::format("(host:{} | pid:{})", host_id.substr(0, 8), tid);
  return name;
}

// ---------------------------------------------------------------------------------------------
// The scheduler's calls (SchedulerReqTimeStats), replayed from the engine's steps.

namespace {

namespace st = sgl_stage;

// WalkSchedulerStages's walk: what the scheduler's time stats hold between its calls, and one
// method per kind of call.
class StageWalker {
 public:
  StageWalker(const SglangRequestTimeline& tl, bool overlap, bool spec_stages,
              SglangTraceSink& sink)
      : tl_(tl),
        overlap_(overlap),
        spec_stages_(spec_stages),
        sink_(sink),
        pd_prefill_(tl.role == "prefill"),
        pd_decode_(tl.role == "decode"),
        unified_(!pd_prefill_ && !pd_decode_) {}

  // Intake up to the waiting queue.
  void Intake() {
    if (pd_prefill_) {
      sink_.Slice(st::kPrefillPrepare, tl_.recv_ns, tl_.pd_queue1_ns, {});
      sink_.Slice(st::kPrefillBootstrap, tl_.pd_queue1_ns, tl_.wait_queue_ns, {});
    } else if (pd_decode_) {
      sink_.Slice(st::kDecodePrepare, tl_.recv_ns, tl_.pd_queue1_ns, {});
      sink_.Slice(st::kDecodeBootstrap, tl_.pd_queue1_ns, tl_.pd_queue2_ns, {});
      sink_.Slice(st::kDecodeTransferred, tl_.pd_queue2_ns, tl_.wait_queue_ns, {});
    } else {
      sink_.Slice(st::kRequestProcess, tl_.recv_ns, tl_.wait_queue_ns, {});
    }
  }

  void Step(std::size_t i) {
    const StepTrace& step = tl_.steps[i];
    const std::uint64_t s = Wall(step.start_mono_ns);
    const std::uint64_t e = Wall(step.end_mono_ns);
    if (step.kind == StepTrace::Kind::kRetract) {
      // Back into the waiting queue: set_wait_queue_entry_time → set_retract_time.
      sink_.Event(semconv::kSglEventRetract, 1, s, {});
      last_forward_entry_ = last_prefill_finished_ = last_chunk_ = last_decode_finish_ =
          last_decode_scheduled_ = 0;
    } else if (step.kind == StepTrace::Kind::kPrefill) {
      Prefill(step, s, e, /*last=*/i + 1 == tl_.steps.size());
    } else {
      Decode(step, s, e);
    }
  }

  void Finish() {
    if (pd_prefill_ && tl_.transfer_end_ns > 0)
      sink_.Slice(st::kPrefillTransferKvCache, tl_.transfer_start_ns, tl_.transfer_end_ns, {});
    SglAttrs info;
    if (tl_.aborted) {
      // FINISH_ABORT.to_json(); its None fields (status_code, err_type) are dropped by the SDK.
      info.emplace_back("type", SglStr("abort"));
      info.emplace_back("message", SglStr(tl_.abort_message));
    }
    sink_.Abort(tl_.completion_ns, info);
  }

 private:
  std::uint64_t Wall(std::uint64_t mono) const {
    return static_cast<std::uint64_t>(static_cast<std::int64_t>(mono) + tl_.mono_to_wall);
  }

  void Schedule(const StepTrace& step, std::uint64_t ts, std::string_view mode) {
    sink_.Event(semconv::kSglEventSchedule, 3, ts,
                {{std::string(semconv::kSglBid), SglStr(fmt::format("{:08x}", step.batch_id))},
                 {std::string(semconv::kSglBatchSize), SglInt(step.batch_size)},
                 {std::string(semconv::kSglForwardMode), SglStr(mode)}});
  }

  // A prefill step (a prebuilt one on a PD decode node): set_forward_entry_time, then the
  // chunk's or the prefill's finish.
  void Prefill(const StepTrace& step, std::uint64_t s, std::uint64_t e, bool last) {
    // set_forward_entry_time: the first time, the waiting slice and the open forward slice.
    if (forward_entry_ == 0) {
      forward_entry_ = last_forward_entry_ = s;
      sink_.Slice(pd_decode_ ? st::kDecodeWaiting : st::kPrefillWaiting, tl_.wait_queue_ns, s, {});
      sink_.SliceStart(pd_decode_ ? st::kDecodeForward : st::kPrefillForward, s);
    } else if (last_forward_entry_ == 0) {
      last_forward_entry_ = s;
    }
    Schedule(step, s, pd_decode_ ? "prebuilt" : "prefill");
    if (pd_decode_) {
      // The KV came from the prefill node; the first output is prebuilt.
      if (step.prefill_done) {
        prebuilt_finish_ = e;
        sink_.Slice(st::kFakeOutput, last_forward_entry_, e, {});
      }
      return;
    }
    if (!step.prefill_done) {
      // set_last_chunked_prefill_finish_time
      const std::uint64_t from = last_chunk_ ? last_chunk_ : last_forward_entry_;
      last_chunk_ = e;
      sink_.Slice(st::kChunkedPrefill, from, e, {});
      return;
    }
    PrefillFinished(e, last);
  }

  // set_prefill_finished_time
  void PrefillFinished(std::uint64_t e, bool last) {
    if (prefill_finished_ == 0) {
      prefill_finished_ = last_prefill_finished_ = e;
      if (last_chunk_ > 0) sink_.Slice(st::kChunkedPrefill, last_chunk_, e, {});
      sink_.SliceEnd(st::kPrefillForward, e, false);
      const bool finishes_here = last && !tl_.aborted;
      if (unified_ && overlap_ && !finishes_here) {
        // The overlap scheduler has already scheduled the next decode batch.
        sink_.SliceStart(st::kDecodeForward, e);
        last_decode_scheduled_ = e;
      }
    } else if (last_prefill_finished_ == 0) {
      // Recomputation after a retraction.
      last_prefill_finished_ = e;
      if (last_chunk_ > 0) {
        sink_.Slice(st::kChunkedPrefill, last_chunk_, e, {});
      } else {
        sink_.Slice(st::kPrefillForward, last_forward_entry_, e, {});
      }
    }
  }

  // A decode step: set_last_scheduled_time(decode), the speculative stages, then
  // set_last_decode_finish_time.
  void Decode(const StepTrace& step, std::uint64_t s, std::uint64_t e) {
    if (unified_ && last_decode_scheduled_ == 0 && last_prefill_finished_ > 0) {
      sink_.Slice(st::kDecodeWaiting, last_prefill_finished_, s, {});
      sink_.SliceStart(st::kDecodeForward, s);
      last_decode_finish_ = s;
    }
    Schedule(step, s, "decode");
    last_decode_scheduled_ = s;
    if (spec_stages_ && step.spec_proposed > 0) {
      // Draft, verify (with the count of accepted drafts) and draft extend share the step.
      const std::uint64_t d = e - s;
      const std::uint64_t t1 = s + d * 2 / 5, t2 = s + d * 4 / 5;
      sink_.Slice(st::kSpecDraft, s, t1, {});
      sink_.Slice(st::kSpecVerify, t1, t2,
                  {{std::string(semconv::kSglNumCorrectDrafts), SglInt(step.spec_accepted)},
                   {std::string(semconv::kSglAcceptedTokens), SglInt(step.spec_accepted)}});
      sink_.Slice(st::kSpecDraftExtend, t2, e, {});
    }
    std::uint64_t from = last_decode_finish_;
    if (from == 0) {
      if (pd_decode_) {
        from = prebuilt_finish_;
      } else {
        from = last_decode_scheduled_ < last_prefill_finished_ ? last_prefill_finished_
                                                               : last_decode_scheduled_;
      }
    }
    sink_.Slice(st::kDecodeLoop, from, e,
                {{std::string(semconv::kSglDecodeCt), SglInt(decode_ct_)}});
    ++decode_ct_;
    last_decode_finish_ = e;
  }

  const SglangRequestTimeline& tl_;
  const bool overlap_;
  const bool spec_stages_;
  SglangTraceSink& sink_;
  const bool pd_prefill_;
  const bool pd_decode_;
  const bool unified_;
  std::uint64_t forward_entry_ = 0, last_forward_entry_ = 0, prefill_finished_ = 0,
                last_prefill_finished_ = 0, last_chunk_ = 0, last_decode_finish_ = 0,
                last_decode_scheduled_ = 0, prebuilt_finish_ = 0;
  std::int64_t decode_ct_ = 0;
};

}  // namespace

void WalkSchedulerStages(const SglangRequestTimeline& tl, bool overlap, bool spec_stages,
                         SglangTraceSink& sink) {
  StageWalker walk(tl, overlap, spec_stages, sink);
  walk.Intake();
  for (std::size_t i = 0; i < tl.steps.size(); ++i) walk.Step(i);
  walk.Finish();
}

void StageLatencySink::SliceStart(const SglangStage& stage, std::uint64_t ts) {
  open_.emplace_back(&stage, ts);
}
void StageLatencySink::SliceEnd(const SglangStage& stage, std::uint64_t ts, bool) {
  for (auto it = open_.rbegin(); it != open_.rend(); ++it) {
    if (it->first->name != stage.name) continue;
    if (stage.metrics)
      latencies.emplace_back(std::string(stage.name),
                             (static_cast<double>(ts) - static_cast<double>(it->second)) / 1e9);
    open_.erase(std::next(it).base());
    return;
  }
}
void StageLatencySink::Slice(const SglangStage& stage, std::uint64_t start, std::uint64_t end,
                             const SglAttrs&) {
  if (stage.metrics)
    latencies.emplace_back(std::string(stage.name),
                           (static_cast<double>(end) - static_cast<double>(start)) / 1e9);
}

// ---------------------------------------------------------------------------------------------
// TraceReqContext for one thread, producing OTLP spans.

namespace {

struct SpanRef {
  std::string trace_id, span_id, trace_state;
};

class SpanBuilder {
 public:
  SpanBuilder(std::string trace_id, std::string trace_state, std::vector<Span>* out)
      : trace_id_(std::move(trace_id)), trace_state_(std::move(trace_state)), out_(out) {}
  std::unique_ptr<Span> Start(std::string_view name, std::uint64_t ts, const std::string& parent,
                              const std::optional<SpanRef>& link) const {
    auto s = std::make_unique<Span>();
    s->set_trace_id(trace_id_);
    s->set_span_id(std::string(AsBytes(NewSpanId())));
    if (!parent.empty()) s->set_parent_span_id(parent);
    if (!trace_state_.empty()) s->set_trace_state(trace_state_);
    s->set_name(std::string(name));
    // tracer.start_span() without a kind.
    s->set_kind(otlp_trace::Span::SPAN_KIND_INTERNAL);
    s->set_start_time_unix_nano(ts);
    if (link) {
      auto* l = s->add_links();
      l->set_trace_id(link->trace_id);
      l->set_span_id(link->span_id);
      if (!link->trace_state.empty()) l->set_trace_state(link->trace_state);
    }
    return s;
  }
  void End(std::unique_ptr<Span> s, std::uint64_t ts) const {
    s->set_end_time_unix_nano(ts);
    out_->push_back(std::move(*s));
  }
  SpanRef Ref(const Span& s, bool with_state) const {
    return {s.trace_id(), s.span_id(), with_state ? s.trace_state() : std::string()};
  }

 private:
  std::string trace_id_, trace_state_;
  std::vector<Span>* out_;
};

void SetAttrs(Span& s, const SglAttrs& attrs) {
  for (const auto& [k, v] : attrs) {
    auto* kv = s.add_attributes();
    kv->set_key(k);
    *kv->mutable_value() = v;
  }
}

struct ThreadInfo {
  std::string label;
  std::optional<int> tp, pp, dp;
  std::string host_id;
  int tid = 0;
};

class TraceThreadSim : public SglangTraceSink {
 public:
  TraceThreadSim(const SpanBuilder& b, int level, std::string root_span_id,
                 std::optional<SpanRef> last, const ThreadInfo& info, std::uint64_t ts)
      : b_(b), level_(level), last_(std::move(last)) {
    thread_ = b_.Start(
        SglangThreadSpanName(info.label, info.tp, info.pp, info.dp, info.host_id, info.tid), ts,
        root_span_id, std::nullopt);
    SglAttrs a;
    if (info.tp) a.emplace_back(std::string(semconv::kSglTpRank), SglInt(*info.tp));
    if (info.pp) a.emplace_back(std::string(semconv::kSglPpRank), SglInt(*info.pp));
    if (info.dp) a.emplace_back(std::string(semconv::kSglDpRank), SglInt(*info.dp));
    a.emplace_back(std::string(semconv::kSglHostId), SglStr(info.host_id));
    a.emplace_back(std::string(semconv::kSglPid), SglInt(info.tid));
    a.emplace_back(std::string(semconv::kSglThreadLabel), SglStr(info.label));
    SetAttrs(*thread_, a);
  }

  void SliceStart(const SglangStage& stage, std::uint64_t ts) override {
    if (Skip(stage.level)) return;
    auto span = b_.Start(stage.name, ts, Parent(), stack_.empty() ? last_ : std::nullopt);
    stack_.push_back({&stage, ts, std::move(span)});
  }

  void SliceEnd(const SglangStage& stage, std::uint64_t ts, bool thread_finish) override {
    if (Skip(stage.level)) return;
    if (stack_.empty()) return;  // SGLang logs "No matching with the SLICE_START event"
    Open& top = stack_.back();
    if (top.stage->name != stage.name || top.stage->level != stage.level) {
      // A mismatch only logs a warning; the popped span is never ended, so never exported.
      stack_.pop_back();
      return;
    }
    AttachEvents(*top.span, top.start, ts);
    SpanRef ref = b_.Ref(*top.span, true);
    b_.End(std::move(top.span), ts);
    stack_.pop_back();
    if (stack_.empty()) last_ = ref;  // only first-level slices chain
    if (thread_finish) Abort(ts, {});
  }

  void Slice(const SglangStage& stage, std::uint64_t start, std::uint64_t end,
             const SglAttrs& attrs) override {
    if (Skip(stage.level)) return;
    auto span = b_.Start(stage.name, start, Parent(), stack_.empty() ? last_ : std::nullopt);
    SetAttrs(*span, attrs);
    AttachEvents(*span, start, end);
    SpanRef ref = b_.Ref(*span, true);
    b_.End(std::move(span), end);
    if (stack_.empty()) last_ = ref;
  }

  void Event(std::string_view name, int level, std::uint64_t ts, const SglAttrs& attrs) override {
    if (Skip(level)) return;
    events_.push_back({std::string(name), ts, attrs});
  }

  void Abort(std::uint64_t ts, const SglAttrs& abort_info) override {
    if (!thread_) return;
    // Open slices just end (no events are attached to them here).
    while (!stack_.empty()) {
      b_.End(std::move(stack_.back().span), ts);
      stack_.pop_back();
    }
    if (!abort_info.empty()) {
      thread_->mutable_status()->set_code(otlp_trace::Status::STATUS_CODE_ERROR);
      SetAttrs(*thread_, abort_info);
    }
    for (auto& ev : events_) AddEvent(*thread_, ev);
    events_.clear();
    b_.End(std::move(thread_), ts);
  }

  // What a pickled copy of this context links its first slice to: the open first-level
  // slice if any, else the last finished one.
  std::optional<SpanRef> PickleLink() const {
    if (!stack_.empty()) {
      SpanRef r = b_.Ref(*stack_.front().span, false);
      return r;
    }
    if (last_) return SpanRef{last_->trace_id, last_->span_id, ""};
    return std::nullopt;
  }

 private:
  struct Open {
    const SglangStage* stage;
    std::uint64_t start;
    std::unique_ptr<Span> span;
  };
  struct CachedEvent {
    std::string name;
    std::uint64_t ts;
    SglAttrs attrs;
  };

  bool Skip(int level) const { return !thread_ || level > level_; }
  std::string Parent() const {
    return stack_.empty() ? thread_->span_id() : stack_.back().span->span_id();
  }
  static void AddEvent(Span& s, const CachedEvent& ev) {
    auto* e = s.add_events();
    e->set_name(ev.name);
    e->set_time_unix_nano(ev.ts);
    for (const auto& [k, v] : ev.attrs) {
      auto* kv = e->add_attributes();
      kv->set_key(k);
      *kv->mutable_value() = v;
    }
  }
  void AttachEvents(Span& s, std::uint64_t start, std::uint64_t end) {
    std::vector<CachedEvent> keep;
    for (auto& ev : events_) {
      if (ev.ts >= start && ev.ts < end)
        AddEvent(s, ev);
      else
        keep.push_back(std::move(ev));
    }
    events_ = std::move(keep);
  }

  const SpanBuilder& b_;
  int level_;
  std::optional<SpanRef> last_;
  std::unique_ptr<Span> thread_;
  std::vector<Open> stack_;
  std::vector<CachedEvent> events_;
};

double Secs(std::uint64_t from, std::uint64_t to) {
  return (static_cast<double>(to) - static_cast<double>(from)) / 1e9;
}

}  // namespace

std::vector<Span> BuildSglangSpans(const SglangSpanInput& in, const SglangTraceStyle& style) {
  std::vector<Span> out;
  const SglangRequestTimeline& tl = in.timeline;
  const SglangEra& era = style.era;
  // Before trace levels existed every slice was recorded.
  const int level = era.trace_levels ? in.trace_level : 1 << 20;
  if (level <= 0) return out;

  std::string trace_id, parent_id, trace_state;
  if (auto parent = TraceParent::Parse(in.traceparent)) {
    if ((parent->flags & 1) == 0) return out;  // ParentBased(ALWAYS_ON): not sampled
    trace_id = std::string(AsBytes(parent->trace_id));
    parent_id = std::string(AsBytes(parent->span_id));
    std::string_view ts = in.tracestate;
    while (!ts.empty() && (ts.front() == ' ' || ts.front() == '\t')) ts.remove_prefix(1);
    while (!ts.empty() && (ts.back() == ' ' || ts.back() == '\t')) ts.remove_suffix(1);
    trace_state = std::string(ts);
  } else {
    // TraceCustomIdGenerator: 64 random bits, so the upper half of the trace id is zero.
    TraceId id{};
    SpanId low = NewSpanId();
    std::copy(low.begin(), low.end(), id.begin() + 8);
    trace_id = std::string(AsBytes(id));
  }
  SpanBuilder b(trace_id, trace_state, &out);

  const std::string room_hex = tl.bootstrap_room ? fmt::format("0x{:x}", tl.bootstrap_room) : "";
  std::unique_ptr<Span> room_span;
  if (era.bootstrap_room_span && !tl.role.empty() && tl.bootstrap_room != 0) {
    room_span = b.Start(std::string(semconv::kSglBootstrapRoomSpanPrefix) + room_hex, tl.created_ns,
                        parent_id, std::nullopt);
    SetAttrs(*room_span, {{std::string(semconv::kSglBootstrapRoom), SglStr(room_hex)}});
    parent_id = room_span->span_id();
  }

  // trace_req_start: the root span and the tokenizer's thread span.
  auto root = b.Start(SglangReqSpanName(tl.role, tl.rid), tl.created_ns, parent_id, std::nullopt);
  {
    SglAttrs a{{std::string(semconv::kSglRid), SglStr(SglangOrigRid(tl.rid))}};
    if (era.pp_rank) a.emplace_back(std::string(semconv::kSglModule), SglStr("sglang::request"));
    if (!room_hex.empty())
      a.emplace_back(std::string(semconv::kSglBootstrapRoom), SglStr(room_hex));
    SetAttrs(*root, a);
  }
  const std::string role_prefix =
      tl.role == "prefill" ? "Prefill" : (tl.role == "decode" ? "Decode" : "");
  ThreadInfo tok_info{
      role_prefix + "Tokenizer", std::nullopt, std::nullopt, std::nullopt, style.host_id,
      style.tokenizer_tid};
  TraceThreadSim tok(b, level, root->span_id(), std::nullopt, tok_info, tl.created_ns);
  tok.Slice(sgl_stage::kTokenize, tl.created_ns, tl.tokenize_end_ns, {});
  const SglangStage& dispatch =
      era.api_server_dispatch_name ? sgl_stage::kApiServerDispatch : sgl_stage::kDispatchOld;
  tok.SliceStart(dispatch, tl.dispatch_start_ns);
  // The context is pickled to the schedulers while the dispatch slice is open.
  const std::optional<SpanRef> handover = tok.PickleLink();
  tok.SliceEnd(dispatch, tl.dispatch_end_ns, true);

  const std::string sched_label = tl.role == "prefill"
                                      ? "Prefill Scheduler"
                                      : (tl.role == "decode" ? "Decode Scheduler" : "Scheduler");
  for (std::size_t rank = 0; rank < style.scheduler_tids.size(); ++rank) {
    ThreadInfo info{
        sched_label,  static_cast<int>(rank), era.pp_rank ? std::optional<int>(0) : std::nullopt,
        std::nullopt, style.host_id,          style.scheduler_tids[rank]};
    TraceThreadSim sched(b, level, root->span_id(), handover, info, tl.recv_ns);
    WalkSchedulerStages(tl, style.overlap_schedule, era.spec_stages, sched);
  }

  // trace_req_finish: close the tokenizer thread if still open, set the attributes, end.
  tok.Abort(tl.finished_ns, {});
  if (in.root && era.trace_levels) {
    const SglangRootAttrs& r = *in.root;
    SglAttrs a;
    a.emplace_back(std::string(semconv::kGenAiUsageCompletionTokens), SglInt(r.completion_tokens));
    a.emplace_back(std::string(semconv::kGenAiUsagePromptTokens), SglInt(r.prompt_tokens));
    a.emplace_back(std::string(semconv::kGenAiUsageCachedTokens), SglInt(r.cached_tokens));
    a.emplace_back(std::string(semconv::kGenAiRequestId), SglStr(r.request_id));
    if (r.max_tokens)
      a.emplace_back(std::string(semconv::kGenAiRequestMaxTokens), SglInt(*r.max_tokens));
    // Python truthiness: 0 and 0.0 are left out, -1 is kept.
    if (r.top_p != 0) a.emplace_back(std::string(semconv::kGenAiRequestTopP), SglDouble(r.top_p));
    if (r.temperature != 0)
      a.emplace_back(std::string(semconv::kGenAiRequestTemperature), SglDouble(r.temperature));
    if (r.top_k != 0) a.emplace_back(std::string(semconv::kGenAiRequestTopK), SglInt(r.top_k));
    if (r.n != 0) a.emplace_back(std::string(semconv::kGenAiRequestN), SglInt(r.n));
    a.emplace_back(std::string(semconv::kGenAiResponseModel), SglStr(r.model));
    a.emplace_back(std::string(semconv::kGenAiResponseFinishReasons),
                   SglStr("[\"" + r.finish_reason + "\"]"));
    if (in.first_token_ns)
      a.emplace_back(std::string(semconv::kGenAiLatencyTimeToFirstToken),
                     SglDouble(Secs(tl.created_ns, in.first_token_ns)));
    a.emplace_back(std::string(semconv::kGenAiLatencyE2e),
                   SglDouble(Secs(tl.created_ns, tl.finished_ns)));
    if (in.first_token_ns) {
      a.emplace_back(std::string(semconv::kGenAiLatencyTimeInModelDecode),
                     SglDouble(Secs(in.first_token_ns, tl.finished_ns)));
    }
    a.emplace_back(std::string(semconv::kGenAiLatencyTimeInModelInference),
                   SglDouble(Secs(tl.dispatch_end_ns, tl.finished_ns)));
    if (in.first_token_ns) {
      a.emplace_back(std::string(semconv::kGenAiLatencyTimeInModelPrefill),
                     SglDouble(Secs(tl.dispatch_end_ns, in.first_token_ns)));
    }
    SetAttrs(*root, a);
  }
  b.End(std::move(root), tl.finished_ns);
  if (room_span) b.End(std::move(room_span), tl.finished_ns);
  return out;
}

}  // namespace infertel::sim
