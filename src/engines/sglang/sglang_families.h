#pragma once
// SGLang's metric families (spec M5): the rows this folder adds to the metric family table
// (core/metric_families.h), with the agent's families that apply to SGLang. The engine
// registry registers them at start-up; SGLang's code names its families by SglangMetric and
// finds their ids with Id().

#include <cstdint>
#include <span>

#include "core/metric_families.h"

namespace infertel::engines::sglang {

// SGLang's own families, in the order of their rows.
enum class SglangMetric : std::uint8_t {
  kNumRunningReqs,
  kNumQueueReqs,
  kNumUsedTokens,
  kTokenUsage,
  kGenThroughput,
  kCacheHitRate,
  kSpecAcceptLength,
  kLogCount,
  kPromptTokensTotal,
  kGenerationTokensTotal,
  kCachedTokensTotal,
  kNumRequestsTotal,
  kTimeToFirstToken,
  kInterTokenLatency,
};

// SGLang's rows of the family table: its own families (in the order of SglangMetric) and
// AgentFamily rows for the agent's families that apply to it.
std::span<const metrics::MetricFamily> MetricFamilyRows();

// The id of `m` in the table, resolved once: only after the engines registered their families
// (engines::RegisterEngines); aborts before.
metrics::MetricId Id(SglangMetric m);

}  // namespace infertel::engines::sglang
