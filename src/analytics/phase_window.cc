#include "analytics/phase_window.h"

#include <algorithm>

namespace infertel::analytics {

PhaseWindow::PhaseWindow(std::size_t per_engine, std::size_t max_engines)
    : per_engine_(std::max<std::size_t>(per_engine, 1)), max_engines_(max_engines) {}

void PhaseWindow::Add(std::string_view engine, const PhaseRecord& r) {
  std::lock_guard lock(mu_);
  auto it = rings_.find(engine);
  if (it == rings_.end()) {
    if (rings_.size() >= max_engines_) {
      refused_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    it = rings_.emplace(std::string(engine), Ring{}).first;
    it->second.records.reserve(std::min<std::size_t>(per_engine_, 256));
  }
  Ring& ring = it->second;
  if (ring.records.size() < per_engine_) {
    ring.records.push_back(r);
    return;
  }
  ring.records[ring.next] = r;
  ring.next = (ring.next + 1) % per_engine_;
}

namespace {

// Whether `o`'s prefill ran while `self` decoded (both intervals known and not empty).
bool PrefillDuringDecode(const PhaseRecord& o, const PhaseRecord& self) {
  if (o.prefill_start_ns == 0 || o.prefill_end_ns <= o.prefill_start_ns) return false;
  if (self.prefill_end_ns == 0 || self.decode_end_ns <= self.prefill_end_ns) return false;
  return o.prefill_start_ns < self.decode_end_ns && o.prefill_end_ns > self.prefill_end_ns;
}

// Whether `o` was queued before `self` and had not been scheduled when `self` was queued.
bool WaitingAhead(const PhaseRecord& o, const PhaseRecord& self) {
  return o.queued_ns != 0 && o.queued_ns < self.queued_ns && o.prefill_start_ns > self.queued_ns;
}

}  // namespace

PhaseOverlap PhaseWindow::Query(std::string_view engine, const PhaseRecord& self) const {
  PhaseOverlap out;
  if (self.queued_ns != 0) out.requests_ahead = 0;
  std::lock_guard lock(mu_);
  auto it = rings_.find(engine);
  if (it == rings_.end()) return out;
  for (const PhaseRecord& o : it->second.records) {
    if (o.span == self.span) continue;
    if (out.requests_ahead && WaitingAhead(o, self)) ++*out.requests_ahead;
    if (!PrefillDuringDecode(o, self)) continue;
    out.prefill_tokens += o.prompt_tokens;
    ++out.prefills;
    if (!out.largest || o.prompt_tokens > out.largest->prompt_tokens) out.largest = o;
  }
  return out;
}

}  // namespace infertel::analytics
