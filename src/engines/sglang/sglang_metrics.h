#pragma once
// Translation of SGLang's /metrics (facts/sglang.md §2) into the snapshot families of spec
// M5, across SGLang's renames and label eras: 0.3.x (`name=` label, num_requests_running /
// num_requests_waiting, cache_hit_rate in percent), 0.4.x (`model_name`), and current
// releases (engine_type, tp_rank, pp_rank, dp_rank, priority, pid).
//
// Pure functions; thread-safe.

#include <vector>

#include "core/metric_families.h"
#include "scrape/prometheus_text.h"

namespace infertel::engines::sglang {

// The state values of one stats period (one scrape): each is added once to its M5 snapshot
// counter by the caller, who also adds one to sglang_log_count. Empty when the exposition
// has none of SGLang's scheduler gauges (metrics off, or not SGLang).
//
// Series are combined per family: one scheduler per data-parallel rank is counted (the
// lowest tp_rank/pp_rank of each dp_rank: other TP ranks repeat the same state when
// --enable-metrics-for-all-schedulers is on), priority breakdowns are skipped (the total is
// under priority=""), counts and throughput are summed over dp ranks, ratios averaged.
std::vector<metrics::MetricPoint> TranslateSnapshot(const scrape::ParseResult& scrape);

}  // namespace infertel::engines::sglang
