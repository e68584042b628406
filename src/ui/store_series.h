#pragma once
// The overview's series as the store's trace index gives them, for `infertel ui` with no agent
// running: per (model, tenant) and step, requests and errors per second and the p50/p90/p99 of
// the duration of the requests that succeeded (each trace's root span), in the JSON of
// GET /api/v1/metrics with "source": "store". The other series of the overview need a running
// agent (they come from its metrics).

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "export/sqlite/sqlite_store.h"

namespace infertel::ui {

// The step for a window: 10 s, or longer so that the window has at most `max_steps` steps.
std::int64_t StepSecondsFor(std::int64_t window_ms, std::size_t max_steps);

// `traces` (newest first, as the store answers) between `since_ms` and `now_ms`. `complete`:
// every trace of the window is there; otherwise the steps older than the oldest one have no
// values rather than too few.
std::string StoreSeriesJson(std::span<const exporting::TraceSummary> traces, std::int64_t since_ms,
                            std::int64_t now_ms, std::int64_t step_s, bool complete);

}  // namespace infertel::ui
