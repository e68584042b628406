#pragma once
// What the agent remembers about SGLang's native spans across OTLP batches:
//
// - the tracing level each request arrived with (otel.instrumentation.sglang.tracing.level,
//   recorded by the gateway per exchange), keyed by trace id: SGLang continues the trace the
//   gateway's `traceparent` names, so every native span of a request carries its trace id.
//   Spans above that level are dropped (the engine may trace more than asked). Spans of a
//   trace the gateway did not start use the level in force when they arrive.
// - spans dropped by level, briefly, so that a kept span whose parent or link pointed at one
//   is re-attached to what the dropped span pointed at (what SGLang itself would have linked
//   at that level).
// - PD request spans by `bootstrap_room`: prefill and decode are two traces by SGLang's
//   design; when both reach the agent within the window, the later one gets a span link to
//   the earlier one. (Beyond the spec.)
//
// Every table is bounded in entries and time. Thread-safe: one mutex, held only while a
// batch's spans are walked (no I/O under it).

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "core/ids.h"
#include "core/telemetry.h"

namespace infertel::engines::sglang {

struct TrackerOptions {
  std::chrono::seconds request_ttl{120};        // level kept this long after the exchange ended
  std::chrono::seconds open_request_ttl{3600};  // ... and this long while it is still open
  std::size_t max_requests = 200'000;
  std::chrono::seconds dropped_ttl{60};
  std::size_t max_dropped = 100'000;
  std::chrono::seconds pd_window{600};  // prefill and decode request spans this far apart
  std::size_t max_rooms = 100'000;
};

struct ProcessResult {
  std::size_t kept = 0;
  std::size_t dropped = 0;         // spans above the level
  std::size_t events_dropped = 0;  // events above the level
  std::size_t reattached = 0;      // parents or links moved past a dropped span
  std::size_t pd_links = 0;        // links added between PD request spans
};

class Tracker {
 public:
  using Clock = std::chrono::steady_clock;
  explicit Tracker(TrackerOptions options = {});

  // The gateway saw a request start (level in force then) and end, for trace `trace`.
  // `tenant` (may be empty): the request's, given to its request spans as infertel.tenant.
  // Returns how many older requests were forgotten before their time to make room (the bound,
  // max_requests): their spans then take the level in force when they arrive.
  std::size_t OnRequestStarted(const TraceId& trace, int level, std::string_view tenant = {},
                               Clock::time_point now = Clock::now());
  void OnRequestFinished(const TraceId& trace, Clock::time_point now = Clock::now());
  // The level recorded for `trace`, if any.
  std::optional<int> LevelOf(const TraceId& trace, Clock::time_point now = Clock::now());

  // Processes the spans of one SGLang scope in place: drops spans (and events) above their
  // request's level (`current_level` when the trace is unknown), re-attaches parents and links
  // that pointed at dropped spans, and links PD request spans. Names, kinds, events, links and
  // statuses of kept spans are otherwise unchanged.
  ProcessResult Process(google::protobuf::RepeatedPtrField<Span>* spans, int current_level,
                        Clock::time_point now = Clock::now());

  std::size_t requests() const;
  std::size_t rooms() const;

 private:
  struct Link {
    std::string trace_id, span_id, trace_state;
  };
  struct Dropped {
    std::string trace_id, parent_span_id;
    std::vector<Link> links;
  };
  struct Peer {
    std::string trace_id, span_id;
    bool present = false;
  };
  struct Room {
    Peer prefill, decode;
  };
  // A bounded map with per-entry expiry: a deque of (expiry, key, generation) in insertion
  // order; an entry refreshed later has a newer generation, so its old deque item is skipped.
  template <typename V>
  struct Table {
    struct Entry {
      V value;
      Clock::time_point expires;
      std::uint64_t gen = 0;
    };
    std::unordered_map<std::string, Entry> map;
    std::deque<std::tuple<Clock::time_point, std::string, std::uint64_t>> order;
    std::uint64_t next_gen = 0;
    std::size_t max = 0;
    std::uint64_t evicted = 0;  // live entries removed by the bound

    V* Find(const std::string& key, Clock::time_point now);
    V& Put(const std::string& key, V value, Clock::time_point expires);
    void Touch(const std::string& key, Clock::time_point expires);
    void Purge(Clock::time_point now);
  };

  const Dropped* FindDropped(const std::string& span_id, Clock::time_point now);
  // Process's passes over one span (tracker.cc says what each does); mu_ held.
  bool LevelSpan(Span& s, int current_level, Clock::time_point now, ProcessResult* r);
  void Reattach(Span& s, Clock::time_point now, ProcessResult* r);
  void LinkPdPeer(Span& s, Clock::time_point now, ProcessResult* r);

  TrackerOptions options_;
  mutable std::mutex mu_;  // guards the tables
  struct Request {
    int level = 1;
    std::string tenant;
  };
  Table<Request> levels_;
  Table<Dropped> dropped_;
  Table<Room> rooms_;
};

}  // namespace infertel::engines::sglang
