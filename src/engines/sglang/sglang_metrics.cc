#include "engines/sglang/sglang_metrics.h"

#include <cmath>
#include <map>
#include <string>
#include <string_view>
#include <tuple>

#include "engines/sglang/sglang_families.h"

namespace infertel::engines::sglang {
namespace {

using metrics::MetricId;

struct Rule {
  std::string_view family;  // SGLang gauge as exposed
  SglangMetric target;
  int fallback = 0;  // 1: an older name, read only when the current one is absent
};

// clang-format off
constexpr Rule kRules[] = {
  {"sglang:num_running_reqs", SglangMetric::kNumRunningReqs},
  {"sglang:num_requests_running", SglangMetric::kNumRunningReqs, 1},  // 0.3.x
  {"sglang:num_queue_reqs", SglangMetric::kNumQueueReqs},
  {"sglang:num_requests_waiting", SglangMetric::kNumQueueReqs, 1},    // 0.3.x
  {"sglang:num_used_tokens", SglangMetric::kNumUsedTokens},
  {"sglang:token_usage", SglangMetric::kTokenUsage},
  {"sglang:gen_throughput", SglangMetric::kGenThroughput},
  {"sglang:cache_hit_rate", SglangMetric::kCacheHitRate},
  {"sglang:spec_accept_length", SglangMetric::kSpecAcceptLength},
};
// clang-format on

long RankOf(const scrape::Sample& s, std::string_view label) {
  const std::string* v = s.Label(label);
  if (!v || v->empty()) return 0;
  try {
    return std::stol(*v);
  } catch (const std::exception&) {
    return 0;
  }
}

// 0.3.x labelled series with `name=` and reported the hit rate in percent.
bool IsFirstGeneration(const scrape::Sample& s) {
  return s.Label("name") != nullptr && s.Label("model_name") == nullptr;
}

}  // namespace

bool ReadsFamily(std::string_view family) {
  for (const auto& r : kRules)
    if (r.family == family) return true;
  return false;
}

std::vector<metrics::MetricPoint> TranslateSnapshot(const scrape::ParseResult& scrape,
                                                    std::size_t* invalid_values) {
  std::size_t invalid = 0;
  bool has_primary[metrics::kMaxMetrics] = {};
  for (const auto& rule : kRules)
    if (rule.fallback == 0)
      if (const auto* f = scrape.Find(rule.family); f && !f->samples.empty())
        has_primary[static_cast<std::size_t>(rule.target)] = true;

  // target → dp_rank → (tp_rank, pp_rank, value) of the chosen scheduler.
  std::map<SglangMetric, std::map<std::string, std::tuple<long, long, double>>> chosen;
  for (const auto& rule : kRules) {
    if (rule.fallback != 0 && has_primary[static_cast<std::size_t>(rule.target)]) continue;
    const auto* f = scrape.Find(rule.family);
    if (!f) continue;
    for (const auto& s : f->samples) {
      if (s.name != f->name) continue;
      if (const std::string* prio = s.Label("priority"); prio && !prio->empty()) continue;
      if (!std::isfinite(s.value) || s.value < 0) {
        ++invalid;
        continue;
      }
      double value = s.value;
      if (rule.target == SglangMetric::kCacheHitRate && IsFirstGeneration(s)) value /= 100.0;
      const std::string* dp = s.Label("dp_rank");
      std::string dp_key = dp ? *dp : std::string();
      long tp = RankOf(s, "tp_rank"), pp = RankOf(s, "pp_rank");
      auto& per_dp = chosen[rule.target];
      auto it = per_dp.find(dp_key);
      if (it == per_dp.end() ||
          std::tie(tp, pp) < std::tie(std::get<0>(it->second), std::get<1>(it->second)))
        per_dp[dp_key] = {tp, pp, value};
    }
  }

  metrics::MetricLabels dims{
      {std::string(metrics::kDimCallKind), std::string(metrics::kCallKindCustomEntry)},
      {std::string(metrics::kDimCallType), std::string(metrics::kCallTypeGenAi)},
      {std::string(metrics::kDimRpcType), std::string(metrics::kRpcTypeLlm)}};
  if (invalid_values) *invalid_values = invalid;
  std::vector<metrics::MetricPoint> out;
  for (const auto& [target, per_dp] : chosen) {
    double sum = 0;
    for (const auto& [dp, v] : per_dp) sum += std::get<2>(v);
    // Ratios (token usage, hit rate) and the per-step accept length average over dp ranks.
    bool mean = target == SglangMetric::kTokenUsage || target == SglangMetric::kCacheHitRate ||
                target == SglangMetric::kSpecAcceptLength;
    out.push_back({Id(target), dims, mean ? sum / per_dp.size() : sum});
  }
  return out;
}

}  // namespace infertel::engines::sglang
