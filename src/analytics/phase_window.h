#pragma once
// The recent request phases of each engine, for the evidence a request's own span cannot give:
// how many requests were still waiting when it was queued (requests ahead), and which other
// requests' prefills ran while it decoded (interference: a prefill batched with decodes slows
// every decode step of the batch).
//
// Fed with each engine request span as the assembler normalizes it, and asked when a request
// is explained. A request is seen only once its own span has arrived: one that overlaps this
// request but finishes (and exports its span) after it is not counted, so the evidence is a
// lower bound (docs/telemetry-reference.md, "Latency causes").
//
// Bounded: at most `per_engine` requests per engine (the oldest go first) and `max_engines`
// engines (further ones are not recorded, counted). Thread-safe: one mutex, held for a copy
// in or a scan of one engine's ring (no allocation per request once the ring is full).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/ids.h"

namespace infertel::analytics {

// One request's phases on one engine, wall-clock ns (0: unknown).
struct PhaseRecord {
  TraceId trace{};
  SpanId span{};
  std::uint64_t queued_ns = 0;         // entered the engine's queue
  std::uint64_t prefill_start_ns = 0;  // scheduled: its prefill began
  std::uint64_t prefill_end_ns = 0;    // first token: its decode began
  std::uint64_t decode_end_ns = 0;     // last token
  std::int64_t prompt_tokens = 0;
};

struct PhaseOverlap {
  // Others' prompt tokens whose prefill overlapped this request's decode, how many requests,
  // and the one with the most tokens (for a span link).
  std::int64_t prefill_tokens = 0;
  std::size_t prefills = 0;
  std::optional<PhaseRecord> largest;
  // Requests queued before this one and still waiting when it was queued (nullopt: this
  // request's queue time is unknown).
  std::optional<std::int64_t> requests_ahead;
};

class PhaseWindow {
 public:
  explicit PhaseWindow(std::size_t per_engine = 4096, std::size_t max_engines = 64);

  // Records a request of `engine` (an upstream, with its engine index when it runs several).
  void Add(std::string_view engine, const PhaseRecord& r);
  // What the recorded requests of `engine` other than `self` (by span id) tell about `self`.
  PhaseOverlap Query(std::string_view engine, const PhaseRecord& self) const;

  std::uint64_t engines_refused() const { return refused_.load(std::memory_order_relaxed); }

 private:
  struct Ring {
    std::vector<PhaseRecord> records;  // up to per_engine_, then overwritten from `next`
    std::size_t next = 0;
  };
  const std::size_t per_engine_, max_engines_;
  mutable std::mutex mu_;
  std::map<std::string, Ring, std::less<>> rings_;  // guarded by mu_
  std::atomic<std::uint64_t> refused_{0};           // records of engines beyond max_engines_
};

}  // namespace infertel::analytics
