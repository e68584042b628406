#pragma once
// Translation of SGLang's /metrics (facts/sglang.md §2) into the snapshot families of spec
// M5, across SGLang's renames and label eras: 0.3.x (`name=` label, num_requests_running /
// num_requests_waiting, cache_hit_rate in percent), 0.4.x (`model_name`), and current
// releases (engine_type, tp_rank, pp_rank, dp_rank, priority, pid).
//
// Pure functions; thread-safe.

#include <cstddef>
#include <string_view>
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
//
// A sample whose value is NaN, ±Inf or negative is left out (each of these families counts or
// measures something, and is added to a counter) and counted in *invalid_values when given.
std::vector<metrics::MetricPoint> TranslateSnapshot(const scrape::ParseResult& scrape,
                                                    std::size_t* invalid_values = nullptr);

// Whether TranslateSnapshot reads the family of this name: the parser keeps no other
// (scrape::ParseOptions::keep_family).
bool ReadsFamily(std::string_view family);
// Whether a sample is read: only a family's plain samples (never _bucket, _sum, …).
inline bool ReadsSample(std::string_view sample) { return ReadsFamily(sample); }

}  // namespace infertel::engines::sglang
