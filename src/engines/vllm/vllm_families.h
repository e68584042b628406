#pragma once
// vLLM's metric families (spec M3): the rows this folder adds to the metric family table
// (core/metric_families.h), with the agent's families that apply to vLLM. The engine
// registry registers them at start-up; vLLM's code names its families by VllmMetric and finds
// their ids with Id().

#include <cstdint>
#include <span>

#include "core/metric_families.h"

namespace infertel::engines::vllm {

// vLLM's own families, in the order of their rows.
enum class VllmMetric : std::uint8_t {
  kIterCount,
  kRequestSuccess,
  kFirstTokenSeconds,
  kGpuCacheUsageSys,
  kCpuCacheUsageSys,
  kNumRunningSys,
  kNumWaitingSys,
  kNumSwappedSys,
  kNumPromptTokensIter,
  kNumGenerationTokensIter,
  kNumTokensIter,
  kNumPreemptionIter,
  kNumRequestsRunning,
  kNumRequestsWaiting,
  kKvCacheUsagePerc,
  kPrefixCacheQueries,
  kPrefixCacheHits,
  kNumPreemptions,
  kPromptTokens,
  kGenerationTokens,
  kRequestParamsN,
  kRequestParamsMaxTokens,
  kRequestQueueTime,
  kRequestPrefillTime,
  kRequestDecodeTime,
  kRequestInferenceTime,
};

// vLLM's rows of the family table: its own families (in the order of VllmMetric) and AgentFamily
// rows for the agent's families that apply to it.
std::span<const metrics::MetricFamily> MetricFamilyRows();

// The id of `m` in the table, resolved once: only after the engines registered their families
// (engines::RegisterEngines); aborts before.
metrics::MetricId Id(VllmMetric m);

}  // namespace infertel::engines::vllm
