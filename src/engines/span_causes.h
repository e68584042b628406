#pragma once
// Latency causes on engine request spans (analytics/latency_cause.h): the assembler hands each
// normalized request span with its derived phases here. Its phases go into a window of the
// engine's recent requests (analytics/phase_window.h); a span joined to its exchange gets
// infertel.cache.hit_ratio when the engine reported cached tokens, and, when the request missed
// an objective, the cause from every part of its time with the evidence: the requests ahead in
// the queue, the prefill tokens of other requests during its decode (and a span link to the
// largest of them), the gateway's and the client's time.
//
// Thread-safety: thread-safe (the window locks itself); called on the assembler's threads.

#include <google/protobuf/arena.h>

#include <string>
#include <vector>

#include "analytics/phase_window.h"
#include "core/telemetry.h"
#include "engines/engine_spans.h"
#include "engines/join.h"

namespace infertel::engines {

class SpanCauses {
 public:
  explicit SpanCauses(std::size_t per_engine = 4096) : window_(per_engine) {}
  // `span` is normalized, `phases` derived from it; `record` null when it matched no exchange
  // (then it is not recorded either: the window is keyed by the exchange's upstream).
  void OnSpan(const JoinRecord* record, Span* span, const std::vector<Span*>& phases,
              const EngineTimings& timings);

  const analytics::PhaseWindow& window() const { return window_; }

 private:
  analytics::PhaseWindow window_;
};

// The window's key of a request's engine: its upstream, and its engine index when known.
std::string EngineKey(const JoinRecord& record);

}  // namespace infertel::engines
