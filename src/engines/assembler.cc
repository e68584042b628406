#include "engines/assembler.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "analytics/latency_attributes.h"
#include "core/genai_dialect.h"
#include "core/semconv.h"
#include "core/static_key.h"
#include "core/thread_name.h"
#include "engines/registry.h"

namespace infertel::engines {

namespace {

namespace sc = semconv;

// The records table's key for a request id.
std::uint64_t RecordKey(std::string_view request_id) {
  return std::hash<std::string_view>{}(request_id);
}

// How far an engine span's clock may be from the gateway's before its times are moved: clocks
// read a few milliseconds apart on one host, and NTP keeps hosts closer than this.
constexpr std::int64_t kClockTolerance = 5'000'000;

// A joined engine span's request cannot start before the gateway had read it, nor end after the
// gateway had the whole response: when it evidently does, its engine's clock is off, and the
// span (before its phases are derived from it) moves to start where the gateway sent the
// request, keeping its length; the move is recorded on it. Returns the move (0: none).
// The bound is the request's arrival, not its dispatch: the gateway reads its clock once the
// write returned, and an engine on the same host may start the request before that (by as much
// as the gateway thread waited for a core between the two, tens of ms on a loaded machine).
std::int64_t AlignToGateway(Span* span, const JoinRecord& r) {
  if (r.dispatch_wall_ns == 0 || r.end_wall_ns < r.dispatch_wall_ns) return 0;
  const auto start = static_cast<std::int64_t>(span->start_time_unix_nano());
  const auto end = static_cast<std::int64_t>(span->end_time_unix_nano());
  const auto sent = static_cast<std::int64_t>(r.dispatch_wall_ns);
  const auto arrived = static_cast<std::int64_t>(r.start_wall_ns != 0 ? r.start_wall_ns : sent);
  const auto done = static_cast<std::int64_t>(r.end_wall_ns);
  if (start >= arrived - kClockTolerance && end <= done + kClockTolerance) return 0;
  const std::int64_t move = sent - start;
  span->set_start_time_unix_nano(static_cast<std::uint64_t>(start + move));
  span->set_end_time_unix_nano(static_cast<std::uint64_t>(std::max(end, start) + move));
  for (auto& e : *span->mutable_events())
    e.set_time_unix_nano(
        static_cast<std::uint64_t>(static_cast<std::int64_t>(e.time_unix_nano()) + move));
  AddAttr(span->mutable_attributes(), Key<sc::kInfertelClockCorrection>(), move);
  return move;
}

// The request's tenant on the engine's request span and on the phases made from it.
void InheritTenant(const JoinRecord& r, Span* span, const std::vector<Span*>& phases) {
  AddAttr(span->mutable_attributes(), Key<sc::kInfertelTenant>(), r.tenant);
  for (Span* p : phases) AddAttr(p->mutable_attributes(), Key<sc::kInfertelTenant>(), r.tenant);
}

}  // namespace

JoinRecord MakeJoinRecord(const openai::Exchange& ex) {
  JoinRecord r;
  r.request_id = ex.request_id;
  r.upstream = ex.upstream_name;
  r.engine = ex.engine;
  r.trace_id = ex.trace_id;
  r.entry_span_id = ex.span_id;
  r.model = ex.request.model ? ex.request.model : ex.response.model;
  r.cached_tokens = ex.response.usage.cached_tokens;
  r.output_tokens = ex.response.usage.output_tokens;
  r.streamed = ex.streamed;
  r.ok = ex.outcome == openai::Outcome::kOk;
  r.tracing_level = ex.tracing_level;
  r.pd_role = ex.pd_role;
  r.engine_index = ex.engine_index;
  if (ex.upstream_sent_mono_ns != 0) r.dispatch_wall_ns = ex.start.WallAt(ex.upstream_sent_mono_ns);
  if (ex.end_mono_ns != 0) r.end_wall_ns = ex.start.WallAt(ex.end_mono_ns);
  if (ex.first_token_mono_ns != 0) r.first_token_wall_ns = ex.start.WallAt(ex.first_token_mono_ns);
  r.deltas = ex.deltas;
  for (auto& d : r.deltas) d.mono_ns = ex.start.WallAt(d.mono_ns);  // now wall-clock ns
  r.deltas_dropped = ex.deltas_dropped;
  r.client_aborted = ex.outcome == openai::Outcome::kClientAborted;
  r.tenant = ex.tenant;
  r.slo = ex.slo;
  r.start_wall_ns = ex.start.wall_start_ns;
  r.input_tokens = ex.response.usage.input_tokens;
  r.client_wait_ns = ex.client_wait_ns;
  r.engine_failed = analytics::EngineFailed(ex);
  return r;
}

std::vector<Assembler::RequestEngine> Assembler::RequestEngines() {
  std::vector<RequestEngine> out;
  for (std::size_t i = 0; i < EngineCount(); ++i) {
    const EngineProfile& p = Profile(EngineId{static_cast<std::uint8_t>(i)});
    if (p.span_join() != SpanJoin::kRequestId || p.request_spans() == nullptr) continue;
    const EngineSwitches sw = p.switches();
    out.push_back({p.request_spans(), sw.enabled, sw.tracing_level});
  }
  return out;
}

std::vector<Assembler::NativeEngine> Assembler::NativeEngines() {
  std::vector<NativeEngine> out;
  for (std::size_t i = 0; i < EngineCount(); ++i) {
    const EngineId id{static_cast<std::uint8_t>(i)};
    const EngineProfile& p = Profile(id);
    if (p.span_join() != SpanJoin::kTraceId) continue;
    std::unique_ptr<NativeSpans> spans = p.MakeNativeSpans();
    if (!spans) continue;
    const EngineSwitches sw = p.switches();
    out.push_back({id, std::move(spans), sw.enabled, sw.tracing_level});
  }
  return out;
}

Assembler::NativeEngine* Assembler::NativeOf(EngineId id) {
  for (NativeEngine& n : native_engines_)
    if (n.id == id) return &n;
  return nullptr;
}

void AssemblerStats::Register(StatsRegistry* r) const {
  using T = StatsRegistry::Type;
  r->Add("infertel_assembler_engine_spans", "Engine request spans received", T::kCounter, "",
         &engine_spans);
  r->Add("infertel_assembler_joined", "Engine spans joined to a gateway exchange", T::kCounter, "",
         &joined);
  r->Add("infertel_assembler_unmatched", "Engine spans exported without a matching exchange",
         T::kCounter, "", &unmatched);
  r->Add("infertel_assembler_passthrough_spans", "Spans passed on unchanged", T::kCounter, "",
         &passthrough);
  r->Add("infertel_assembler_derived_spans", "Phase spans derived from engine spans", T::kCounter,
         "", &derived_spans);
  r->Add("infertel_assembler_released_early",
         "Engine spans exported unmatched before their wait ended (waiting table full)",
         T::kCounter, "", &released_early);
  r->Add("infertel_assembler_held_for_room",
         "Engine spans kept past their wait until the export queue had room for them", T::kCounter,
         "", &held_for_room);
  r->Add("infertel_assembler_records_evicted", "Join records evicted early by the size bound",
         T::kCounter, "", &records_evicted);
  r->Add("infertel_assembler_native_requests_evicted",
         "Requests whose tracing level an engine's table forgot early by its size bound (their "
         "native spans take the level in force when they arrive)",
         T::kCounter, "", &native_requests_evicted);
  r->Add("infertel_assembler_waiting_spans", "Engine spans waiting for their exchange", T::kGauge,
         "", &waiting);
  r->Add("infertel_assembler_join_records", "Finished exchanges kept for joining", T::kGauge, "",
         &records);
  r->Add("infertel_assembler_clock_corrected",
         "Engine spans moved to the gateway's clock: their own was evidently off", T::kCounter, "",
         &clock_corrected);
  r->Add("infertel_assembler_plugin_off_dropped",
         "Engine spans dropped: their engine's plugin switch (spec C1) is off", T::kCounter, "",
         &plugin_off_dropped);
  r->Add("infertel_assembler_sglang_spans", "SGLang native spans received", T::kCounter, "",
         &sglang_spans);
  r->Add("infertel_assembler_sglang_level_dropped",
         "SGLang native spans dropped: above the tracing level of their request", T::kCounter, "",
         &sglang_level_dropped);
  r->Add("infertel_assembler_sglang_pd_links",
         "Span links added between SGLang prefill and decode request spans", T::kCounter, "",
         &sglang_pd_links);
  const char* help =
      "Engine span latency attributes removed, and no phase derived from them: NaN or infinite "
      "(not_finite), negative or above 7 days (out_of_range)";
  r->Add("infertel_assembler_refused_latencies", help, T::kCounter, R"(reason="not_finite")",
         &latency_not_finite);
  r->Add("infertel_assembler_refused_latencies", help, T::kCounter, R"(reason="out_of_range")",
         &latency_out_of_range);
}

Assembler::Assembler(AssemblerOptions options, pipeline::TraceSink* out,
                     std::shared_ptr<config::ConfigStore> config)
    : options_(std::move(options)),
      out_(out),
      config_(std::move(config)),
      request_engines_(RequestEngines()),
      native_engines_(NativeEngines()) {
  timer_ = std::thread([this] {
    NameThisThread("assembler");
    TimerLoop();
  });
}

Assembler::~Assembler() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (timer_.joinable()) timer_.join();
  FlushWaiting();
}

std::shared_ptr<const JoinRecord> Assembler::Lookup(const JoinKeyList& keys) {
  for (const auto& k : keys) {
    auto it = records_.find(RecordKey(k));
    if (it != records_.end() && it->second.record->request_id == k) return it->second.record;
  }
  return nullptr;
}

void Assembler::BeginOutput(Output* out) const {
  out->held = pipeline::Held<TracesRequest>::Make();
  out->settings = config_->Current();
}

void Assembler::CountRefusedLatencies(const SpanReport& report) noexcept {
  if (report.latency_not_finite + report.latency_out_of_range == 0) return;
  stats_.latency_not_finite.fetch_add(report.latency_not_finite, std::memory_order_relaxed);
  stats_.latency_out_of_range.fetch_add(report.latency_out_of_range, std::memory_order_relaxed);
  const std::int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::steady_clock::now().time_since_epoch())
                               .count();
  std::int64_t last = latency_logged_ns_.load(std::memory_order_relaxed);
  if (last != 0 && now - last < std::chrono::nanoseconds(std::chrono::minutes(1)).count()) return;
  if (!latency_logged_ns_.compare_exchange_strong(last, now, std::memory_order_relaxed)) return;
  spdlog::warn(
      "assembler: an engine span had {} NaN/infinite and {} negative or over-7-day latency "
      "attributes, removed (logged at most once a minute; see "
      "infertel_assembler_refused_latencies_total)",
      report.latency_not_finite, report.latency_out_of_range);
}

void Assembler::Emit(Waiting&& w, const JoinRecord* record, Output* out) {
  std::vector<Span*>& phases = out->phases;
  phases.clear();
  const Origin& origin = *w.origin;
  {
    SpanContext ctx;
    ctx.record = record;
    std::string generation;  // the upstream's, as its facts say
    std::string model;       // unmatched: the single upstream's one model
    {
      std::lock_guard lock(hints_mu_);
      if (record != nullptr) {
        auto it = generations_.find(record->upstream);
        if (it != generations_.end()) generation = it->second;
      } else {
        model = default_model_;
      }
    }
    ctx.generation = generation;
    ctx.model = model;
    ctx.engine_index = options_.default_engine_index;
    if (record != nullptr && AlignToGateway(w.span, *record) != 0)
      stats_.clock_corrected.fetch_add(1, std::memory_order_relaxed);
    ctx.pd_role = options_.default_pd_role;
    ctx.max_events = options_.max_span_events;
    ctx.level = static_cast<int>(SwitchValue(*out->settings, w.engine->tracing_level, 1));
    const SpanReport report =
        w.engine->spans->Normalize(w.span, origin.scope->name(), ctx, w.memory->arena(), &phases);
    CountRefusedLatencies(report);
    if (record != nullptr && !record->tenant.empty()) InheritTenant(*record, w.span, phases);
    if (const GenAiDialect d = config::GenAiDialectIn(*out->settings); d != GenAiDialect::kModel) {
      ApplyGenAiDialect(w.span->mutable_attributes(), d);
      for (Span* p : phases) ApplyGenAiDialect(p->mutable_attributes(), d);
    }
    causes_.OnSpan(record, w.span, phases, report.timings);
    EngineSpanListener* listener = span_listener_.load(std::memory_order_acquire);
    if (record != nullptr && listener != nullptr && !report.timings.empty())
      listener->OnEngineSpanJoined(*record, report.timings);
  }
  (record ? stats_.joined : stats_.unmatched).fetch_add(1, std::memory_order_relaxed);
  stats_.derived_spans.fetch_add(phases.size(), std::memory_order_relaxed);
  out->held.memory->Keep(std::move(w.memory));
  if (out->last != &origin) {
    // Borrowed headers (pipeline/held.h): read, and sized, by whichever lane exports them.
    auto* rs = out->held.request->add_resource_spans();
    rs->unsafe_arena_set_allocated_resource(const_cast<Resource*>(origin.resource));
    rs->set_schema_url(origin.resource_schema_url);
    out->scope_spans = rs->add_scope_spans();
    out->scope_spans->unsafe_arena_set_allocated_scope(
        const_cast<otlp_common::InstrumentationScope*>(origin.scope));
    out->scope_spans->set_schema_url(origin.scope_schema_url);
    out->last = &origin;
  }
  auto* spans = out->scope_spans->mutable_spans();
  spans->UnsafeArenaAddAllocated(w.span);
  for (Span* p : phases) spans->UnsafeArenaAddAllocated(p);
}

void Assembler::Submit(TracesRequest&& request) noexcept {
  SubmitHeld(pipeline::Hold(std::move(request)));
}

void Assembler::SubmitHeld(pipeline::Held<TracesRequest>&& in) noexcept {
  Take(Split(std::move(in)), /*admit=*/false);
}

bool Assembler::Offer(pipeline::Held<TracesRequest>&& in) noexcept {
  return Take(Split(std::move(in)), /*admit=*/true);
}

const Assembler::NativeEngine* Assembler::NativeGroupOf(const otlp_trace::ResourceSpans& rs,
                                                        const otlp_trace::ScopeSpans& ss) const {
  for (const NativeEngine& n : native_engines_)
    if (n.spans->ClaimsScope(rs.resource(), ss.scope())) return &n;
  // A request-span engine's own scopes hold no native span: not searching them spares a look
  // at every attribute of every span (about 1 % of the agent's CPU per span).
  for (const RequestEngine& r : request_engines_)
    if (r.spans->OwnsScope(ss.scope().name())) return nullptr;
  for (const NativeEngine& n : native_engines_)
    if (n.spans->HasOwnSpan(ss)) return &n;
  return nullptr;
}

void Assembler::SplitNative(const NativeEngine& engine, const config::Settings& settings,
                            otlp_trace::ResourceSpans& rs, otlp_trace::ScopeSpans& ss,
                            otlp_trace::ResourceSpans** native_rs, Incoming* result) {
  if (!SwitchOn(settings, engine.enabled)) {  // C1: the plugin is off, its spans with it
    result->plugin_off += ss.spans_size();
    pipeline::Unlink(ss.mutable_spans(), 0, ss.spans_size());
    return;
  }
  result->native_spans += ss.spans_size();
  const int level = static_cast<int>(SwitchValue(settings, engine.tracing_level, 1));
  const NativeResult pr = engine.spans->Process(ss.mutable_spans(), level);
  if (const GenAiDialect d = config::GenAiDialectIn(settings); d != GenAiDialect::kModel)
    for (Span& s : *ss.mutable_spans()) ApplyGenAiDialect(s.mutable_attributes(), d);
  result->native_level_dropped += pr.dropped;
  result->native_pd_links += pr.pd_links;
  result->native_kept += ss.spans_size();
  if (ss.spans_size() > 0) {
    if (*native_rs == nullptr) {
      TracesRequest*& out = result->native_out;
      if (out == nullptr)
        out = google::protobuf::Arena::CreateMessage<TracesRequest>(result->held.memory->arena());
      *native_rs = out->add_resource_spans();
      if (options_.agent_resource.attributes_size() > 0) {
        *(*native_rs)->mutable_resource() =
            engine.spans->MergeResource(options_.agent_resource, rs.resource());
      } else {
        *(*native_rs)->mutable_resource() = rs.resource();
        (*native_rs)->set_schema_url(rs.schema_url());
      }
    }
    auto* moved = (*native_rs)->add_scope_spans();
    *moved->mutable_scope() = ss.scope();
    moved->set_schema_url(ss.schema_url());
    moved->mutable_spans()->Swap(ss.mutable_spans());  // one arena: pointers only
  }
  pipeline::Unlink(ss.mutable_spans(), 0, ss.spans_size());
}

void Assembler::SplitRequestSpans(const config::Settings& settings,
                                  const otlp_trace::ResourceSpans& rs, otlp_trace::ScopeSpans& ss,
                                  Incoming* result) {
  auto* spans = ss.mutable_spans();
  std::shared_ptr<const Origin> origin;  // made for the first engine span of the scope
  int keep = 0;
  for (int i = 0; i < spans->size(); ++i) {
    Span* span = spans->Mutable(i);
    const AnyValue* request_id = nullptr;
    const RequestEngine* engine = nullptr;
    for (const RequestEngine& r : request_engines_) {
      if ((request_id = r.spans->RequestSpanId(*span)) != nullptr) {
        engine = &r;
        break;
      }
    }
    if (request_id == nullptr) {
      if (keep != i) spans->SwapElements(keep, i);
      ++keep;
      continue;
    }
    if (!SwitchOn(settings, engine->enabled)) {  // C1: the plugin is off, its spans with it
      ++result->plugin_off;
      continue;  // unlinked below with the engine spans
    }
    if (!origin) {
      auto o = std::make_shared<Origin>();
      o->resource = &rs.resource();
      o->resource_schema_url = rs.schema_url();
      o->scope = &ss.scope();
      o->scope_schema_url = ss.schema_url();
      origin = std::move(o);
    }
    Waiting w;  // a request span: Emit normalizes it without checking again
    w.origin = origin;
    w.engine = engine;
    w.span = span;
    w.memory = result->held.memory;
    w.keys = engine->spans->JoinKeys(*request_id);
    result->engine.push_back(std::move(w));
  }
  // The engine spans leave the container, not the arena: their Waiting points at them.
  pipeline::Unlink(spans, keep, spans->size() - keep);
}

Assembler::Incoming Assembler::Split(pipeline::Held<TracesRequest>&& in) {
  // Everything below stays on `memory`'s arena: spans are moved between containers by
  // pointer, never copied (pipeline/held.h). Taken, so that the caller holds nothing after.
  Incoming result;
  result.held = std::move(in);
  TracesRequest& request = *result.held.request;
  auto settings = config_->Current();
  // Split: native span groups and engine request spans are taken out; everything else stays
  // where it is.
  for (auto& rs : *request.mutable_resource_spans()) {
    otlp_trace::ResourceSpans* native_rs = nullptr;  // native scopes of rs, moved
    for (auto& ss : *rs.mutable_scope_spans()) {
      if (const NativeEngine* native = NativeGroupOf(rs, ss))
        SplitNative(*native, *settings, rs, ss, &native_rs, &result);
      else if (!request_engines_.empty())
        SplitRequestSpans(*settings, rs, ss, &result);
    }
  }
  result.passthrough = CountSpans(request);
  if (result.passthrough > 0) {
    // Drop emptied scopes and resources so the pass-through request stays well formed.
    for (auto& rs : *request.mutable_resource_spans()) {
      auto* scopes = rs.mutable_scope_spans();
      for (int i = scopes->size() - 1; i >= 0; --i)
        if (scopes->Get(i).spans_size() == 0) scopes->DeleteSubrange(i, 1);
    }
    auto* rss = request.mutable_resource_spans();
    for (int i = rss->size() - 1; i >= 0; --i)
      if (rss->Get(i).scope_spans_size() == 0) rss->DeleteSubrange(i, 1);
  }
  return result;
}

std::optional<pipeline::Reservation> Assembler::ReserveForEngineSpans(std::size_t spans,
                                                                      bool divisible) noexcept {
  const std::size_t items = spans * kMaxSpansOutPerEngineSpan;
  return out_->Reserve(items, items * kReservedBytesPerSpan, divisible);
}

bool Assembler::Take(Incoming&& in, bool admit) {
  const std::shared_ptr<pipeline::Memory> memory = in.held.memory;
  std::vector<std::pair<Waiting, std::shared_ptr<const JoinRecord>>> ready;
  // What leaves at once, reserved in the output when admitted: one part per request sent.
  pipeline::Reservation pass_room, native_room, ready_room;
  bool wake_timer = false;
  {
    std::lock_guard lock(mu_);
    std::vector<Waiting> wait;
    for (auto& w : in.engine) {
      if (auto rec = Lookup(w.keys))
        ready.emplace_back(std::move(w), std::move(rec));
      else
        wait.push_back(std::move(w));
    }
    if (admit) {
      // All or nothing: a slot for every span that waits, and output room for the rest.
      if (waiting_.size() + wait.size() > options_.max_waiting_spans) return false;
      const std::size_t now_items =
          in.passthrough + in.native_kept + ready.size() * kMaxSpansOutPerEngineSpan;
      if (now_items > 0) {
        auto room = out_->Reserve(now_items, now_items * kReservedBytesPerSpan);
        if (!room) return false;
        pass_room = native_room = ready_room = *room;
        pass_room.items = in.passthrough;
        native_room.items = in.native_kept;
        ready_room.items = ready.size() * kMaxSpansOutPerEngineSpan;
        pass_room.bytes = pass_room.items * kReservedBytesPerSpan;
        native_room.bytes = native_room.items * kReservedBytesPerSpan;
        ready_room.bytes = ready_room.items * kReservedBytesPerSpan;
      }
    }
    wake_timer = waiting_.empty() && !wait.empty();  // the timer sleeps without a deadline
    auto deadline = std::chrono::steady_clock::now() + options_.join_window;
    for (auto& w : wait) {
      while (waiting_.size() >= options_.max_waiting_spans) {
        // Unadmitted only (admission made room): the oldest waiting span goes out unmatched
        // rather than being lost.
        Waiting old;
        if (!PopWaiting(&old)) continue;  // already matched: only its slot was left
        std::shared_ptr<const JoinRecord> rec = std::move(old.record);
        ready.emplace_back(std::move(old), std::move(rec));
        stats_.released_early.fetch_add(1, std::memory_order_relaxed);
      }
      w.deadline = deadline;
      PushWaiting(std::move(w));
    }
    stats_.waiting.store(waiting_live_, std::memory_order_relaxed);
  }
  if (wake_timer) cv_.notify_all();
  stats_.engine_spans.fetch_add(in.engine.size(), std::memory_order_relaxed);
  stats_.passthrough.fetch_add(in.passthrough, std::memory_order_relaxed);
  stats_.plugin_off_dropped.fetch_add(in.plugin_off, std::memory_order_relaxed);
  stats_.sglang_spans.fetch_add(in.native_spans, std::memory_order_relaxed);
  stats_.sglang_level_dropped.fetch_add(in.native_level_dropped, std::memory_order_relaxed);
  stats_.sglang_pd_links.fetch_add(in.native_pd_links, std::memory_order_relaxed);
  if (in.passthrough > 0)
    out_->SubmitReserved({in.held.request, memory}, pass_room);
  else
    out_->Cancel(pass_room);
  if (in.native_out != nullptr)
    out_->SubmitReserved({in.native_out, memory}, native_room);
  else
    out_->Cancel(native_room);
  if (ready.empty()) {
    out_->Cancel(ready_room);
    return true;
  }
  Output joined;
  BeginOutput(&joined);
  for (auto& [w, rec] : ready) Emit(std::move(w), rec.get(), &joined);
  out_->SubmitReserved(std::move(joined.held), ready_room);
  return true;
}

bool Assembler::Saturated(std::size_t coming) const noexcept {
  {
    std::lock_guard lock(mu_);
    if (held_back_) return true;
    // Slots of spans already matched count until they leave, as they do for the bound.
    if (waiting_.size() * 4 >= options_.max_waiting_spans * 3) return true;
  }
  return out_->Saturated(coming);
}

void Assembler::OnExchangeStarted(const openai::Exchange& ex) noexcept {
  if (Profile(ex.engine).span_join() != SpanJoin::kTraceId || IsZero(ex.trace_id)) return;
  if (NativeEngine* n = NativeOf(ex.engine))
    if (std::size_t evicted = n->spans->OnRequestStarted(ex.trace_id, ex.tracing_level, ex.tenant))
      stats_.native_requests_evicted.fetch_add(evicted, std::memory_order_relaxed);
}

void Assembler::OnExchangeFinished(const openai::Exchange& ex) noexcept {
  // Spans that join by trace id (NativeSpans) need no JoinRecord.
  if (Profile(ex.engine).span_join() == SpanJoin::kTraceId) {
    if (NativeEngine* n = NativeOf(ex.engine); n != nullptr && !IsZero(ex.trace_id))
      n->spans->OnRequestFinished(ex.trace_id);
    return;
  }
  if (ex.request_id.empty()) return;
  auto record = std::make_shared<const JoinRecord>(MakeJoinRecord(ex));
  std::vector<Waiting> matched;
  pipeline::Reservation room;
  {
    std::lock_guard lock(mu_);
    auto now = std::chrono::steady_clock::now();
    const std::uint64_t key = RecordKey(ex.request_id);
    records_[key] = {record, now + options_.record_ttl};
    expiry_.emplace_back(now + options_.record_ttl, key);
    while (records_.size() > options_.max_records && !expiry_.empty()) {
      records_.erase(expiry_.front().second);
      expiry_.pop_front();
      stats_.records_evicted.fetch_add(1, std::memory_order_relaxed);
    }
    stats_.records.store(records_.size(), std::memory_order_relaxed);
    // The matched spans leave now if the output has room for them; otherwise they stay in the
    // table with their exchange and leave, joined, with the others into room (TimerLoop).
    TakeWaiting(ex.request_id, record, &matched, &room);
    stats_.waiting.store(waiting_live_, std::memory_order_relaxed);
  }
  if (matched.empty()) return;
  Output out;
  BeginOutput(&out);
  for (auto& w : matched) Emit(std::move(w), record.get(), &out);
  out_->SubmitReserved(std::move(out.held), room);
}

void Assembler::SetDefaultModel(std::string model) {
  std::lock_guard lock(hints_mu_);
  default_model_ = std::move(model);
}

void Assembler::SetEngineFacts(const std::string& upstream, const EngineFacts& facts) {
  if (facts.span_generation.empty()) return;  // not known: the hint stays as it was
  std::lock_guard lock(hints_mu_);
  generations_[upstream] = facts.span_generation;
}

void Assembler::PushWaiting(Waiting&& w) {
  const std::uint64_t seq = waiting_front_seq_ + waiting_.size();
  for (const auto& k : w.keys) waiting_index_.Insert(RecordKey(k), seq);
  waiting_.push_back(std::move(w));
  ++waiting_live_;
}

bool Assembler::PopWaiting(Waiting* out) {
  Waiting& front = waiting_.front();
  const bool live = !front.taken;
  if (live) {
    *out = std::move(front);
    --waiting_live_;
  }
  waiting_.pop_front();
  ++waiting_front_seq_;
  // The span stays in the index until its whole generation has left (waiting_index.h).
  waiting_index_.DropBefore(waiting_front_seq_);
  return live;
}

void Assembler::TakeWaiting(std::string_view request_id,
                            const std::shared_ptr<const JoinRecord>& record,
                            std::vector<Waiting>* matched, pipeline::Reservation* room) {
  std::vector<std::uint64_t> seqs;
  waiting_index_.ForEach(RecordKey(request_id), [&](std::uint64_t seq) { seqs.push_back(seq); });
  if (seqs.empty()) return;
  std::sort(seqs.begin(), seqs.end());  // released in arrival order, as before
  std::vector<Waiting*> found;
  for (std::uint64_t seq : seqs) {
    // The index still holds spans that have left the table, released or matched.
    if (seq < waiting_front_seq_) continue;
    Waiting& w = waiting_[static_cast<std::size_t>(seq - waiting_front_seq_)];
    // A hash collision or a second key of the same span: the id itself decides.
    if (w.taken || std::find(w.keys.begin(), w.keys.end(), request_id) == w.keys.end()) continue;
    found.push_back(&w);
  }
  if (found.empty()) return;
  auto reserved = ReserveForEngineSpans(found.size());
  if (!reserved) {
    for (Waiting* w : found) w->record = record;
    return;
  }
  *room = *reserved;
  for (Waiting* w : found) {
    matched->push_back(std::move(*w));
    w->taken = true;
    --waiting_live_;
  }
  // A matched span's slot is freed when it reaches the front (it counts towards the bound
  // until then); slots already there go now.
  Waiting none;
  while (!waiting_.empty() && waiting_.front().taken) PopWaiting(&none);
}

void Assembler::FlushWaiting() {
  std::deque<Waiting> all;
  {
    std::lock_guard lock(mu_);
    all.swap(waiting_);
    waiting_front_seq_ += all.size();
    waiting_index_.Clear();
    waiting_live_ = 0;
    stats_.waiting.store(0, std::memory_order_relaxed);
  }
  if (all.empty()) return;
  Output out;
  BeginOutput(&out);
  for (auto& w : all) {
    if (w.taken) continue;
    const std::shared_ptr<const JoinRecord> record = std::move(w.record);
    Emit(std::move(w), record.get(), &out);
  }
  out_->SubmitHeld(std::move(out.held));
}

void Assembler::TimerLoop() {
  // Rung by the output's lanes as they take batches, while something counts itself waiting.
  pipeline::RoomBell* bell = out_->Room();
  const std::size_t listening = bell == nullptr ? 0 : bell->Listen([this] {
    {
      std::lock_guard lock(mu_);  // the timer is either before its look at the queue or waiting
      if (!held_back_) return;
    }
    cv_.notify_all();
  });
  std::unique_lock lock(mu_);
  while (!stop_) {
    // Wake when the oldest waiting span is due (Submit wakes this wait when the table was
    // empty), else every 100 ms for the record expiry. Releasing each span when its window
    // ends, rather than on a 100 ms tick, keeps the releases small: a tick's worth of spans
    // (4 out per span in) could exceed the export queue at once and be dropped. While spans
    // are held back, the bell wakes this wait; the short timeout covers a sink without one.
    auto now = std::chrono::steady_clock::now();
    auto wake = now + std::chrono::milliseconds(100);
    if (held_back_)
      wake = now + std::chrono::milliseconds(bell == nullptr ? 1 : 10);
    else if (!waiting_.empty())
      wake = std::min(wake, waiting_.front().deadline);
    cv_.wait_until(lock, wake);
    now = std::chrono::steady_clock::now();
    while (!expiry_.empty() && expiry_.front().first <= now) {
      auto it = records_.find(expiry_.front().second);
      // A newer record under the same id has a later expiry entry of its own.
      if (it != records_.end() && it->second.expires <= now) records_.erase(it);
      expiry_.pop_front();
    }
    stats_.records.store(records_.size(), std::memory_order_relaxed);
    // Due spans leave only into room reserved for them: released into a full queue they would
    // be dropped there after the receiver had accepted them. As many as fit: a reservation
    // for all that are due, else for fewer, halving (a due span's slot in the table is its
    // promise until then).
    std::vector<Waiting> due;
    std::size_t due_live = 0;
    for (std::size_t i = 0;
         i < waiting_.size() && waiting_[i].deadline <= now && due_live < kMaxReleasedAtOnce; ++i)
      if (!waiting_[i].taken) ++due_live;
    pipeline::Reservation release_room;
    bool room = true;
    for (std::size_t want = due_live; want > 0; want /= 2) {
      // One span is asked for whole, so that a queue smaller than its phases still takes it.
      auto r = ReserveForEngineSpans(want, /*divisible=*/want > 1);
      if (!r) {
        room = false;
        continue;
      }
      release_room = *r;
      room = want == due_live;
      while (due.size() < want) {
        Waiting w;
        if (PopWaiting(&w)) due.push_back(std::move(w));
      }
      break;
    }
    if (due_live == 0) room = true;
    // Spans released after a look that found no room waited for it.
    if (held_back_) stats_.held_for_room.fetch_add(due.size(), std::memory_order_relaxed);
    if (!room && !held_back_) {
      // Counted as waiting before the next look at the queue (RoomBell's protocol).
      if (bell != nullptr) bell->BeginWait();
    } else if (room && held_back_ && bell != nullptr) {
      bell->EndWait();
    }
    held_back_ = !room;
    stats_.waiting.store(waiting_live_, std::memory_order_relaxed);
    if (due.empty()) continue;
    lock.unlock();
    Output out;
    BeginOutput(&out);
    for (auto& w : due) {
      const std::shared_ptr<const JoinRecord> record = std::move(w.record);
      Emit(std::move(w), record.get(), &out);
    }
    out_->SubmitReserved(std::move(out.held), release_room);
    lock.lock();
  }
  if (held_back_ && bell != nullptr) bell->EndWait();
  held_back_ = false;
  lock.unlock();
  if (bell != nullptr) bell->Unlisten(listening);
}

}  // namespace infertel::engines
