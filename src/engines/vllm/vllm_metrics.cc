#include "engines/vllm/vllm_metrics.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string_view>

#include "engines/vllm/vllm_families.h"

namespace infertel::engines::vllm {
namespace {

using metrics::MetricId;
using metrics::MetricLabels;
using metrics::MetricPoint;

// Which sample of a histogram a rule reads.
enum class Part { kValue, kSum, kCount };

struct Rule {
  std::string_view family;  // vLLM family name as exposed in # TYPE (0.0.4 text)
  Part part;
  VllmMetric target;
  // 0: the current name; 1: a deprecated name read only when no sample of the current name
  // for the same target is present (so a scrape with both is never counted twice).
  int fallback = 0;
  // Labels kept from the source series, besides the fixed dimensions.
  bool keep_finished_reason = false;
};

// clang-format off
constexpr Rule kV1Rules[] = {
  {"vllm:num_requests_running", Part::kValue, VllmMetric::kNumRequestsRunning},
  {"vllm:num_requests_waiting", Part::kValue, VllmMetric::kNumRequestsWaiting},
  {"vllm:kv_cache_usage_perc", Part::kValue, VllmMetric::kKvCacheUsagePerc},
  {"vllm:gpu_cache_usage_perc", Part::kValue, VllmMetric::kKvCacheUsagePerc, 1},
  {"vllm:prefix_cache_queries", Part::kValue, VllmMetric::kPrefixCacheQueries},
  {"vllm:gpu_prefix_cache_queries", Part::kValue, VllmMetric::kPrefixCacheQueries, 1},
  {"vllm:prefix_cache_hits", Part::kValue, VllmMetric::kPrefixCacheHits},
  {"vllm:gpu_prefix_cache_hits", Part::kValue, VllmMetric::kPrefixCacheHits, 1},
  {"vllm:num_preemptions", Part::kValue, VllmMetric::kNumPreemptions},
  {"vllm:prompt_tokens", Part::kValue, VllmMetric::kPromptTokens},
  {"vllm:generation_tokens", Part::kValue, VllmMetric::kGenerationTokens},
  {"vllm:request_params_n", Part::kSum, VllmMetric::kRequestParamsN},
  {"vllm:request_params_max_tokens", Part::kSum, VllmMetric::kRequestParamsMaxTokens},
  {"vllm:request_queue_time_seconds", Part::kSum, VllmMetric::kRequestQueueTime},
  {"vllm:request_prefill_time_seconds", Part::kSum, VllmMetric::kRequestPrefillTime},
  {"vllm:request_decode_time_seconds", Part::kSum, VllmMetric::kRequestDecodeTime},
  {"vllm:request_inference_time_seconds", Part::kSum, VllmMetric::kRequestInferenceTime},
  {"vllm:iteration_tokens_total", Part::kCount, VllmMetric::kIterCount},
  {"vllm:request_success", Part::kValue, VllmMetric::kRequestSuccess, 0, true},
};

constexpr Rule kV0Rules[] = {
  {"vllm:gpu_cache_usage_perc", Part::kValue, VllmMetric::kGpuCacheUsageSys},
  {"vllm:cpu_cache_usage_perc", Part::kValue, VllmMetric::kCpuCacheUsageSys},
  {"vllm:num_requests_running", Part::kValue, VllmMetric::kNumRunningSys},
  {"vllm:num_requests_waiting", Part::kValue, VllmMetric::kNumWaitingSys},
  {"vllm:num_requests_swapped", Part::kValue, VllmMetric::kNumSwappedSys},
  {"vllm:prompt_tokens", Part::kValue, VllmMetric::kNumPromptTokensIter},
  {"vllm:prompt_tokens", Part::kValue, VllmMetric::kNumTokensIter},
  {"vllm:generation_tokens", Part::kValue, VllmMetric::kNumGenerationTokensIter},
  {"vllm:generation_tokens", Part::kValue, VllmMetric::kNumTokensIter},
  {"vllm:num_preemptions", Part::kValue, VllmMetric::kNumPreemptionIter},
  {"vllm:iteration_tokens_total", Part::kCount, VllmMetric::kIterCount},
  {"vllm:request_success", Part::kValue, VllmMetric::kRequestSuccess, 0, true},
};
// clang-format on

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// The family as the parser grouped it: 0.0.4 counters are typed under `<name>_total`,
// OpenMetrics counters under `<name>`; histograms under their base name either way.
const scrape::Family* FindFamily(const scrape::ParseResult& scrape, std::string_view name) {
  if (const auto* f = scrape.Find(name)) return f;
  std::string total(name);
  total += "_total";
  return scrape.Find(total);
}

bool IsCounterValueSample(const scrape::Sample& s, std::string_view family) {
  // A counter's value: `<family>` or `<family>_total`, never `_created`.
  if (s.name == family) return true;
  return s.name.size() == family.size() + 6 && EndsWith(s.name, "_total") &&
         std::string_view(s.name).substr(0, family.size()) == family;
}

// Reads the samples a rule wants: for kValue the family's plain samples; for kSum/kCount the
// histogram's _sum/_count, or for kCount the +Inf bucket when _count is missing (a scrape
// cut short, as in some published samples, still has it).
std::vector<const scrape::Sample*> Select(const scrape::Family& f, const Rule& rule) {
  std::vector<const scrape::Sample*> out;
  std::string family = f.name;
  if (EndsWith(family, "_total") && rule.part == Part::kValue)
    family.resize(family.size() - 6);  // matched through the 0.0.4 `_total` TYPE name
  for (const auto& s : f.samples) {
    switch (rule.part) {
      case Part::kValue:
        if (IsCounterValueSample(s, family) || s.name == f.name) out.push_back(&s);
        break;
      case Part::kSum:
        if (s.name == family + "_sum") out.push_back(&s);
        break;
      case Part::kCount:
        if (s.name == family + "_count") out.push_back(&s);
        break;
    }
  }
  if (out.empty() && rule.part == Part::kCount) {
    for (const auto& s : f.samples) {
      if (s.name != family + "_bucket") continue;
      const std::string* le = s.Label("le");
      if (le && (*le == "+Inf" || *le == "inf" || *le == "Inf")) out.push_back(&s);
    }
  }
  return out;
}

MetricLabels DimensionsFor(const scrape::Sample& s, const Rule& rule, bool v1) {
  MetricLabels labels;
  labels.emplace_back(metrics::kDimCallType, metrics::kCallTypeGenAi);
  labels.emplace_back(metrics::kDimRpcType, metrics::kRpcTypeLlm);
  if (v1) {
    const std::string* engine = s.Label("engine");
    // Before vLLM added the `engine` label (2025-03) there was one engine core: index 0.
    labels.emplace_back(metrics::kDimEngineIndex, engine ? *engine : std::string("0"));
    const std::string* model = s.Label("model_name");
    if (model) labels.emplace_back(metrics::kDimModelName, *model);
  }
  if (rule.keep_finished_reason) {
    const std::string* reason = s.Label("finished_reason");
    labels.emplace_back(metrics::kDimFinishedReason, reason ? *reason : std::string());
  }
  metrics::SortLabels(&labels);
  return labels;
}

struct Acc {
  double sum = 0;
  int n = 0;
};

// Families DetectMetricsGeneration recognises that no rule reads.
constexpr std::string_view kDetectionFamilies[] = {
    "vllm:num_requests_swapped", "vllm:cpu_cache_usage_perc", "vllm:gpu_prefix_cache_hit_rate",
    "vllm:cpu_prefix_cache_hit_rate", "vllm:spec_decode_draft_acceptance_rate"};

}  // namespace

bool ReadsFamily(std::string_view family) {
  // A 0.0.4 counter is grouped under `<name>_total`.
  const std::string_view base =
      EndsWith(family, "_total") ? family.substr(0, family.size() - 6) : family;
  for (std::string_view name : {family, base}) {
    for (const auto& r : kV1Rules)
      if (r.family == name) return true;
    for (const auto& r : kV0Rules)
      if (r.family == name) return true;
    for (std::string_view d : kDetectionFamilies)
      if (d == name) return true;
  }
  return false;
}

bool ReadsSample(std::string_view sample) {
  if (EndsWith(sample, "_created")) return false;
  return !EndsWith(sample, "_bucket") || sample == "vllm:iteration_tokens_total_bucket";
}

MetricsGeneration DetectMetricsGeneration(const scrape::ParseResult& scrape) {
  for (const auto& f : scrape.families) {
    std::string_view name = f.name;
    if (name.substr(0, 5) != "vllm:") continue;
    if (name == "vllm:num_requests_swapped" || name == "vllm:cpu_cache_usage_perc" ||
        name == "vllm:gpu_prefix_cache_hit_rate" || name == "vllm:cpu_prefix_cache_hit_rate" ||
        name == "vllm:spec_decode_draft_acceptance_rate")
      return MetricsGeneration::kV0;
    if (name == "vllm:kv_cache_usage_perc" || name.starts_with("vllm:prefix_cache_queries") ||
        name.starts_with("vllm:gpu_prefix_cache_queries"))
      return MetricsGeneration::kV1;
    for (const auto& s : f.samples)
      if (s.Label("engine")) return MetricsGeneration::kV1;
  }
  return MetricsGeneration::kUnknown;
}

TranslatedMetrics TranslateMetrics(const scrape::ParseResult& scrape,
                                   MetricsGeneration generation) {
  const bool v1 = generation != MetricsGeneration::kV0;
  std::span<const Rule> rules =
      v1 ? std::span<const Rule>(kV1Rules) : std::span<const Rule>(kV0Rules);

  // Targets that have a sample under their current name: deprecated names are then ignored.
  bool has_primary[metrics::kMaxMetrics] = {};
  for (const auto& rule : rules) {
    if (rule.fallback != 0) continue;
    if (const auto* f = FindFamily(scrape, rule.family); f && !Select(*f, rule).empty())
      has_primary[static_cast<std::size_t>(rule.target)] = true;
  }

  std::map<std::pair<MetricId, MetricLabels>, Acc> acc;
  std::size_t invalid = 0;
  for (const auto& rule : rules) {
    if (rule.fallback != 0 && has_primary[static_cast<std::size_t>(rule.target)]) continue;
    const auto* f = FindFamily(scrape, rule.family);
    if (!f) continue;
    const bool counter = metrics::Family(Id(rule.target)).kind == metrics::MetricKind::kCounter;
    for (const auto* s : Select(*f, rule)) {
      if (!std::isfinite(s->value) || (counter && s->value < 0)) {
        ++invalid;
        continue;
      }
      Acc& a = acc[{Id(rule.target), DimensionsFor(*s, rule, v1)}];
      a.sum += s->value;
      ++a.n;
    }
  }

  TranslatedMetrics out;
  out.invalid_values = invalid;
  for (auto& [key, a] : acc) {
    const auto& fam = metrics::Family(key.first);
    double value = fam.merge == metrics::MergeRule::kMean ? a.sum / a.n : a.sum;
    MetricPoint p{key.first, key.second, value};
    (fam.kind == metrics::MetricKind::kCounter ? out.counters : out.gauges).push_back(std::move(p));
  }
  return out;
}

}  // namespace infertel::engines::vllm
