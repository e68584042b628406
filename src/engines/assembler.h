#pragma once
// The assembler joins the engine's own spans (arriving through the OTLP receiver) with the
// gateway's view of the same requests, has each engine normalize its own (engine_spans.h,
// asked of the profiles in the registry), and passes everything on to the trace pipeline.
// Spans no engine recognises pass through unchanged.
//
// Joining by request id (RequestSpans): the gateway sends every request with an X-Request-Id,
// and the engine names its request span after it. A finished exchange leaves a JoinRecord for a
// while (record_ttl); an engine span that arrives before its exchange has finished waits
// (join_window) and is then exported normalized but unmatched, and counted. Both tables are
// bounded. Native spans (NativeSpans) join by the trace id the gateway propagated: each
// engine's processor keeps what it needs, and the assembler moves them on a scope at a time.
//
// Thread-safety: Submit (receiver threads) and OnExchangeFinished (gateway workers) may be
// called concurrently; neither blocks beyond a short critical section. A timer thread
// releases spans whose wait ran out, as far as the output has room for them (see Saturated).

#include <absl/container/flat_hash_map.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "config/settings.h"
#include "core/stats.h"
#include "engines/engine_spans.h"
#include "engines/join.h"
#include "engines/profile.h"
#include "engines/span_causes.h"
#include "engines/waiting_index.h"
#include "openai/exchange.h"
#include "pipeline/exporter.h"

namespace infertel::engines {

struct AssemblerOptions {
  std::chrono::milliseconds join_window{3000};  // an early engine span waits this long
  // A finished exchange is kept this long for its engine spans. vLLM exports a finished
  // request's span within its BatchSpanProcessor delay (5 s by default); records of an engine
  // that sends no spans are pure cost (about 0.3–0.5 KiB each), so the wait is not longer.
  std::chrono::seconds record_ttl{30};
  std::size_t max_records = 50'000;  // beyond it the oldest go first (counted)
  // Slots of the waiting table; beyond it the oldest span goes out unmatched (counted). A
  // matched span's slot is freed when it reaches the front of the table. From three quarters
  // of it on the assembler is saturated (see Saturated).
  std::size_t max_waiting_spans = 50'000;
  std::size_t max_span_events = 128;  // OTEL_SPAN_EVENT_COUNT_LIMIT
  // When an engine span matches no exchange: the PD role and engine index of the upstream,
  // when there is exactly one whose engine sends request spans (and, for the index, it runs
  // one engine).
  std::string default_pd_role = "none";
  std::optional<std::int64_t> default_engine_index;
  // Native spans are exported with this resource (the agent's own, so that they and the entry
  // spans are one application; see NativeSpans::MergeResource). Empty: the engine's resource
  // is kept.
  Resource agent_resource;
};

struct AssemblerStats {
  std::atomic<std::uint64_t> engine_spans{0};        // engine request spans seen
  std::atomic<std::uint64_t> joined{0};              // matched with a gateway exchange
  std::atomic<std::uint64_t> unmatched{0};           // exported without a match
  std::atomic<std::uint64_t> passthrough{0};         // spans passed on unchanged
  std::atomic<std::uint64_t> derived_spans{0};       // phase spans made
  std::atomic<std::uint64_t> released_early{0};      // sent unmatched: waiting table full
  std::atomic<std::uint64_t> held_for_room{0};       // released late: the export queue was full
  std::atomic<std::uint64_t> records_evicted{0};     // records dropped before their TTL (bound)
  std::atomic<std::uint64_t> waiting{0};             // gauge
  std::atomic<std::uint64_t> records{0};             // gauge
  std::atomic<std::uint64_t> plugin_off_dropped{0};  // engine spans of a plugin switched off
  std::atomic<std::uint64_t> clock_corrected{0};     // joined spans moved to the gateway's clock
  // Native spans (NativeSpans). Their metrics keep the names they were documented with, after
  // the one engine whose spans came this way then.
  std::atomic<std::uint64_t> sglang_spans{0};          // native spans received
  std::atomic<std::uint64_t> sglang_level_dropped{0};  // dropped: above the request's level
  std::atomic<std::uint64_t> sglang_pd_links{0};       // links added between PD request spans
  // Requests whose level an engine's table forgot before their time (its bound), as
  // NativeSpans::OnRequestStarted tells them.
  std::atomic<std::uint64_t> native_requests_evicted{0};
  // Latency attributes removed by an engine's Normalize (SpanReport), by reason.
  std::atomic<std::uint64_t> latency_not_finite{0};
  std::atomic<std::uint64_t> latency_out_of_range{0};
  void Register(StatsRegistry* registry) const;
};

class Assembler : public pipeline::TraceSink, public openai::ExchangeListener {
 public:
  Assembler(AssemblerOptions options, pipeline::TraceSink* out,
            std::shared_ptr<config::ConfigStore> config);
  ~Assembler() override;

  // From the receiver: engine spans are joined and normalized, the rest passes through.
  void Submit(TracesRequest&& request) noexcept override;
  // The same without copying (pipeline/held.h): a waiting span stays on the arena it was
  // received on, its phases are made there, and everything leaves as views of it. Unadmitted:
  // when the waiting table is full the oldest span leaves early, room or not (counted).
  void SubmitHeld(pipeline::Held<TracesRequest>&& request) noexcept override;
  // Admission (pipeline::Sink): takes the request only if the output has room now for what
  // leaves at once (pass-through spans, SGLang's, engine spans whose exchange is known, with
  // their phases) and the waiting table has a slot for every engine span that must wait; all
  // or nothing. A waiting span's room in the output is reserved when it leaves: until then it
  // stays in the table, so nothing taken here is shed (see TimerLoop).
  bool Offer(pipeline::Held<TracesRequest>&& request) noexcept override;
  // True while spans past their wait are held back for want of room in the output (they leave
  // only into room, so that they never push queued spans out: see TimerLoop), while the
  // waiting table is three-quarters full (beyond it spans leave early, room or not), and
  // while the output is. Spans merely waiting are not counted against the output: they leave
  // as their deadlines pass, into whatever room the lanes have made by then.
  bool Saturated(std::size_t coming = 0) const noexcept override;
  // The output's: spans leave here into its queue, so only its lanes free room.
  pipeline::RoomBell* Room() noexcept override { return out_->Room(); }
  static constexpr std::size_t kSpansOutPerEngineSpan = 4;  // llm_request, wait, prefill, decode
  // Reserved in the output per engine span: the span and at most four phases (wait, kv
  // transfer, prefill, decode); what is not used is given back when the span leaves.
  static constexpr std::size_t kMaxSpansOutPerEngineSpan = 5;
  // Bytes reserved in the output per span leaving the assembler: an estimate (a normalized
  // vLLM span is about 1 KiB on the wire, a phase less), counted exactly once queued.
  static constexpr std::size_t kReservedBytesPerSpan = 1024;
  // Due spans released by the timer in one request at most (one reservation).
  static constexpr std::size_t kMaxReleasedAtOnce = 1024;
  // From the gateway: the level of a request whose engine sends native spans, by trace id.
  void OnExchangeStarted(const openai::Exchange& exchange) noexcept override;
  // From the gateway: remembers the exchange and releases engine spans that waited for it.
  void OnExchangeFinished(const openai::Exchange& exchange) noexcept override;

  // What an upstream's facts (or its configuration) say about the generation of its spans
  // (EngineFacts::span_generation), for spans whose own attributes do not tell; an empty
  // generation leaves what was known.
  void SetEngineFacts(const std::string& upstream, const EngineFacts& facts);
  // Told of every joined engine span (the metrics); may be set while spans arrive. The
  // listener must outlive the assembler.
  void SetSpanListener(EngineSpanListener* listener) {
    span_listener_.store(listener, std::memory_order_release);
  }
  // The model an engine span that matches no exchange is named after: the one model the
  // single upstream serves (its /v1/models); empty: none is added.
  void SetDefaultModel(std::string model);
  // Releases every waiting span now (shutdown, tests).
  void FlushWaiting();
  const AssemblerStats& stats() const { return stats_; }

 private:
  // The resource and scope a group of engine spans arrived under, in the received request
  // (kept alive by the spans' Memory) and shared by its spans. Only read from here on.
  struct Origin {
    const Resource* resource = nullptr;
    const otlp_common::InstrumentationScope* scope = nullptr;
    std::string resource_schema_url, scope_schema_url;
  };
  // The engines the registry holds whose spans come one way or the other, with the switches
  // that govern them; made once, at construction.
  struct RequestEngine {
    const RequestSpans* spans = nullptr;
    std::optional<config::Key> enabled, tracing_level;
  };
  struct NativeEngine {
    EngineId id;
    std::unique_ptr<NativeSpans> spans;
    std::optional<config::Key> enabled, tracing_level;
  };
  static std::vector<RequestEngine> RequestEngines();
  static std::vector<NativeEngine> NativeEngines();
  NativeEngine* NativeOf(EngineId id);

  struct Waiting {
    std::shared_ptr<const Origin> origin;
    const RequestEngine* engine = nullptr;     // whose request span it is
    Span* span = nullptr;                      // on memory's arena, or in a request it owns
    std::shared_ptr<pipeline::Memory> memory;  // what the span was received in
    JoinKeyList keys;                          // views into *span's request id
    std::chrono::steady_clock::time_point deadline;
    // The exchange, when it finished while the output had no room for the span: the span then
    // stays here, joined, and leaves with the others into room (see OnExchangeFinished).
    std::shared_ptr<const JoinRecord> record;
    bool taken = false;  // matched and moved out; leaves the table when it reaches the front
  };
  // An outgoing request being filled: a view (pipeline/held.h) of the released spans and
  // their phases, which stay where they were received. Consecutive spans of one origin share
  // one ResourceSpans/ScopeSpans, and what Emit needs from the settings is read once.
  struct Output {
    pipeline::Held<TracesRequest> held;
    const Origin* last = nullptr;
    otlp_trace::ScopeSpans* scope_spans = nullptr;
    std::shared_ptr<const config::Settings> settings;  // the levels, read once
    std::vector<Span*> phases;                         // reused
  };
  struct Stored {
    std::shared_ptr<const JoinRecord> record;
    std::chrono::steady_clock::time_point expires;
  };

  // A received request split (Split): its pass-through spans stay in `held`, native spans
  // move to `native_out` (on the same arena), request spans to `engine`. The counts are added
  // to the stats once the request is taken.
  struct Incoming {
    pipeline::Held<TracesRequest> held;
    TracesRequest* native_out = nullptr;
    std::vector<Waiting> engine;
    std::size_t passthrough = 0, native_spans = 0, native_kept = 0;
    std::size_t native_level_dropped = 0, native_pd_links = 0;
    std::size_t plugin_off = 0;  // engine spans dropped: their plugin is off
  };
  Incoming Split(pipeline::Held<TracesRequest>&& in);
  // The engine whose native spans one scope holds, if any.
  const NativeEngine* NativeGroupOf(const otlp_trace::ResourceSpans& rs,
                                    const otlp_trace::ScopeSpans& ss) const;
  // Moves one scope of native spans, processed, to result->native_out (under *native_rs, made
  // for the first such scope of rs); drops them when the engine's plugin is off.
  void SplitNative(const NativeEngine& engine, const config::Settings& settings,
                   otlp_trace::ResourceSpans& rs, otlp_trace::ScopeSpans& ss,
                   otlp_trace::ResourceSpans** native_rs, Incoming* result);
  // Takes the request spans out of one scope into result->engine (dropped when their
  // engine's plugin is off).
  void SplitRequestSpans(const config::Settings& settings, const otlp_trace::ResourceSpans& rs,
                         otlp_trace::ScopeSpans& ss, Incoming* result);
  // Takes a split request: admitted (all or nothing; false when refused) or not.
  bool Take(Incoming&& in, bool admit);
  // Reserves output room for `spans` engine spans leaving with their phases; mu_ may be held.
  // `divisible`: the caller asks again for fewer when refused (Sink::Reserve).
  std::optional<pipeline::Reservation> ReserveForEngineSpans(std::size_t spans,
                                                             bool divisible = false) noexcept;
  // Normalizes one engine span (record may be null) and appends it and its phases to `out`.
  void Emit(Waiting&& w, const JoinRecord* record, Output* out);
  // Counts what Normalize refused; logs it at most once a minute.
  void CountRefusedLatencies(const SpanReport& report) noexcept;
  void BeginOutput(Output* out) const;
  std::shared_ptr<const JoinRecord> Lookup(const JoinKeyList& keys);  // mu_ held
  // The waiting table (mu_ held): a deque in deadline order, indexed by the hash of each join
  // key so that a finished exchange finds its spans without walking every waiting span.
  void PushWaiting(Waiting&& w);
  bool PopWaiting(Waiting* out);  // false when the front had been taken (nothing to release)
  // Moves the spans waiting for `request_id` to `matched` with their output room reserved in
  // `room`; when the output has none, leaves them in the table with `record` attached.
  void TakeWaiting(std::string_view request_id, const std::shared_ptr<const JoinRecord>& record,
                   std::vector<Waiting>* matched, pipeline::Reservation* room);
  void TimerLoop();

  AssemblerOptions options_;
  pipeline::TraceSink* out_;
  std::shared_ptr<config::ConfigStore> config_;
  AssemblerStats stats_;
  std::atomic<EngineSpanListener*> span_listener_{nullptr};
  SpanCauses causes_;  // latency causes of joined request spans (locks itself)
  std::atomic<std::int64_t> latency_logged_ns_{0};  // CountRefusedLatencies's last log

  mutable std::mutex mu_;  // guards records_, expiry_, waiting_, stop_
  // Keyed by a hash of the request id, so the id is stored once (in the record, which
  // Lookup compares); a colliding id replaces the older record. Open addressing: at the bound
  // (50,000 records) every finished request inserts one and evicts the oldest, and a node-based
  // map's buckets and nodes were each a cache miss (docs/performance-history.md, "Join records in a
  // flat table").
  absl::flat_hash_map<std::uint64_t, Stored> records_;
  std::deque<std::pair<std::chrono::steady_clock::time_point, std::uint64_t>> expiry_;
  std::deque<Waiting> waiting_;
  std::uint64_t waiting_front_seq_ = 0;  // sequence number of waiting_.front()
  std::size_t waiting_live_ = 0;         // entries of waiting_ not taken
  WaitingIndex waiting_index_;           // join-key hash → sequence
  bool stop_ = false;
  // Spans past their wait are kept here because the output had no room (see TimerLoop); the
  // timer then waits on the output's RoomBell, and Saturated() is true.
  bool held_back_ = false;
  std::condition_variable cv_;
  std::mutex hints_mu_;                             // guards generations_
  std::map<std::string, std::string> generations_;  // upstream → span generation
  std::string default_model_;                       // guarded by hints_mu_
  const std::vector<RequestEngine> request_engines_;
  std::vector<NativeEngine> native_engines_;  // each processor locks its own state
  std::thread timer_;
};

}  // namespace infertel::engines
