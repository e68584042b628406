#pragma once
// SGLang's native request tracing (facts/sglang.md §1, spec M4), rebuilt from one request's
// timeline after it ends: the `{role} Req {rid[:8]}` root span, one thread span per process
// that touched the request (tokenizer, each TP rank's scheduler) and the stage spans ("slices")
// of RequestStage, with links between consecutive first-level stages and the `retract` and
// `schedule` events.
//
// The stage sequence is produced by a walker that replays the calls SGLang's
// SchedulerReqTimeStats makes (slice start/end, complete slices, events, abort) against a
// sink. TraceThreadSim is a sink that behaves like SGLang's TraceReqContext (level filter,
// slice stack, event cache, links); StageLatencySink collects per-stage latencies for
// `sglang:per_stage_req_latency_seconds`. Everything here is pure and thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/telemetry.h"
#include "sim/engine/engine.h"
#include "sim/otlp/span_exporter.h"
#include "sim/sglang/sglang_options.h"

namespace infertel::sim {

// Instrumentation scope of every SGLang span, and the resource's service.name.
inline constexpr std::string_view kSglangScope = "sglang server";
inline constexpr std::string_view kSglangServiceName = "sglang";

// Python's Resource.create({"service.name": "sglang"}): telemetry.sdk.*, then
// OTEL_RESOURCE_ATTRIBUTES, then service.name = sglang (it overrides OTEL_SERVICE_NAME).
Resource BuildSglangResource(const SimEnvFn& env);

// Contents of /etc/machine-id, else "unknown" (SGLang's _get_host_id without the MAC step).
std::string SglangHostId();

// A stage of RequestStage: its span name, trace level and whether its latency is observed
// into sglang:per_stage_req_latency_seconds.
struct SglangStage {
  std::string_view name;
  int level;
  bool metrics;
};
namespace sgl_stage {
extern const SglangStage kTokenize, kApiServerDispatch, kDispatchOld, kRequestProcess,
    kPrefillWaiting, kPrefillForward, kChunkedPrefill, kDecodeWaiting, kDecodeForward, kDecodeLoop,
    kSpecDraft, kSpecVerify, kSpecDraftExtend, kPrefillPrepare, kPrefillBootstrap,
    kPrefillTransferKvCache, kDecodePrepare, kDecodeBootstrap, kDecodeTransferred, kFakeOutput;
}  // namespace sgl_stage

using SglAttrs = std::vector<std::pair<std::string, AnyValue>>;
AnyValue SglStr(std::string_view v);
AnyValue SglInt(std::int64_t v);
AnyValue SglDouble(double v);

// What SchedulerReqTimeStats calls on its trace context. Times are wall-clock ns.
class SglangTraceSink {
 public:
  virtual ~SglangTraceSink() = default;
  virtual void SliceStart(const SglangStage& stage, std::uint64_t ts) = 0;
  virtual void SliceEnd(const SglangStage& stage, std::uint64_t ts, bool thread_finish) = 0;
  virtual void Slice(const SglangStage& stage, std::uint64_t start, std::uint64_t end,
                     const SglAttrs& attrs) = 0;
  virtual void Event(std::string_view name, int level, std::uint64_t ts, const SglAttrs& attrs) = 0;
  // Closes everything; `abort_info` non-empty marks the thread span ERROR with those attributes.
  virtual void Abort(std::uint64_t ts, const SglAttrs& abort_info) = 0;
};

// One request's life, as SGLang's tokenizer and scheduler time it (wall-clock ns).
struct SglangRequestTimeline {
  std::string rid;
  std::string role;  // "", "prefill" or "decode"
  std::uint64_t bootstrap_room = 0;
  std::uint64_t created_ns = 0;  // request received (tokenizer)
  std::uint64_t tokenize_end_ns = 0;
  std::uint64_t dispatch_start_ns = 0;
  std::uint64_t dispatch_end_ns = 0;
  std::uint64_t recv_ns = 0;       // scheduler received it
  std::uint64_t pd_queue1_ns = 0;  // PD prefill: bootstrap queue; PD decode: prealloc queue
  std::uint64_t pd_queue2_ns = 0;  // PD decode: transfer queue
  std::uint64_t wait_queue_ns = 0;
  std::vector<StepTrace> steps;         // the engine's steps (monotonic ns)
  std::int64_t mono_to_wall = 0;        // wall = mono + mono_to_wall
  std::uint64_t transfer_start_ns = 0;  // PD prefill: KV transfer
  std::uint64_t transfer_end_ns = 0;
  std::uint64_t completion_ns = 0;  // scheduler finished (or aborted) it
  std::uint64_t finished_ns = 0;    // tokenizer finished it (root span end)
  bool aborted = false;
  std::string abort_message;  // "Aborted", "Abort in waiting queue"
};

// The scheduler's calls for `tl`, in order (one scheduler thread; TP ranks repeat them).
// `overlap`: SGLang's overlap scheduler (default) starts decode_forward when the prefill
// result is processed; without it a decode_waiting slice comes first.
void WalkSchedulerStages(const SglangRequestTimeline& tl, bool overlap, bool spec_stages,
                         SglangTraceSink& sink);

// Per-stage latencies (seconds) of the stages SGLang observes into its histogram.
class StageLatencySink : public SglangTraceSink {
 public:
  void SliceStart(const SglangStage& stage, std::uint64_t ts) override;
  void SliceEnd(const SglangStage& stage, std::uint64_t ts, bool thread_finish) override;
  void Slice(const SglangStage& stage, std::uint64_t start, std::uint64_t end,
             const SglAttrs& attrs) override;
  void Event(std::string_view, int, std::uint64_t, const SglAttrs&) override {}
  void Abort(std::uint64_t, const SglAttrs&) override { open_.clear(); }
  std::vector<std::pair<std::string, double>> latencies;

 private:
  std::vector<std::pair<const SglangStage*, std::uint64_t>> open_;
};

// The process-wide facts a span needs.
struct SglangTraceStyle {
  SglangEra era{SglangVersion{}};
  std::string host_id = "unknown";
  int tokenizer_tid = 0;
  std::vector<int> scheduler_tids = {0};  // one per TP rank
  bool overlap_schedule = true;
};

// The request span's attributes at a normal finish (make_span_attrs).
struct SglangRootAttrs {
  int completion_tokens = 0;
  int prompt_tokens = 0;
  int cached_tokens = 0;
  std::string request_id;
  std::optional<int> max_tokens;
  double top_p = 1.0;
  double temperature = 1.0;
  int top_k = -1;
  int n = 1;
  std::string model;
  std::string finish_reason;  // "stop", "length"
};

struct SglangSpanInput {
  SglangRequestTimeline timeline;
  std::string traceparent, tracestate;  // the incoming W3C headers, empty when absent
  int trace_level = 3;                  // captured when the request arrived
  std::uint64_t first_token_ns = 0;     // first output seen by the tokenizer
  std::optional<SglangRootAttrs> root;  // only at a normal finish
};

// All spans of one request, or none (trace level 0, or a caller's unsampled trace).
std::vector<Span> BuildSglangSpans(const SglangSpanInput& in, const SglangTraceStyle& style);

// The thread span name: label, " [TP n] ", " [PP n] ", " [DP n] " when set, then
// "(host:<8> | pid:<tid>)".
std::string SglangThreadSpanName(std::string_view label, std::optional<int> tp,
                                 std::optional<int> pp, std::optional<int> dp,
                                 std::string_view host_id, int tid);

// "Req" span name: "{role} Req {orig_rid[:8]}" with orig_rid = rid.split("_")[-1].
std::string SglangReqSpanName(std::string_view role, std::string_view rid);
std::string SglangOrigRid(std::string_view rid);

}  // namespace infertel::sim
