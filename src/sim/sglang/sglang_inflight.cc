// Requests of the SGLang simulator in the engine: submitted, their outputs batched as the
// scheduler hands them to the tokenizer, the client-disconnect aborts, the PD queues, and the
// end of each request (spans, metrics, request log).

#include <algorithm>
#include <chrono>
#include <memory>
#include <random>
#include <string>

#include "core/clock.h"
#include "sim/json_writer.h"
#include "sim/sglang/sglang_surface.h"
#include "sim/sglang/sglang_surface_internal.h"

namespace infertel::sim {
namespace {

// Non-streaming requests still get an internal output every this many tokens.
constexpr int kForceStreamInterval = 50;

}  // namespace

net::awaitable<bool> SglangSurface::Admit(HttpConnection& conn,
                                          const std::shared_ptr<SglJob>& job) {
  co_await PdIntake(*job);
  if (!Submit(*job, job, conn)) co_return false;
  requests_.fetch_add(1);
  conn.StartDisconnectWatch();
  co_return true;
}

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
  SglEmission em;
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
  if (!aborted && r.log_metrics) LogFinished(r, tl);
}

void SglangSurface::AbortUnfinished(SglJob& job) {
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
  if (job.stream) {
    // The StreamingResponse's background task: sleep, then abort every rid.
    co_await Sleep(std::chrono::milliseconds(o_.flags.stream_abort_delay_ms));
    AbortUnfinished(job);
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
  AbortUnfinished(job);
  co_return false;
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

}  // namespace infertel::sim
