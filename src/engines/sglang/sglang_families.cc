#include "engines/sglang/sglang_families.h"

#include <array>
#include <cstdio>
#include <cstdlib>

#include "core/semconv.h"

namespace infertel::engines::sglang {
namespace {

using K = metrics::MetricKind;
using M = metrics::MergeRule;
using metrics::MetricId;

constexpr std::string_view kSglangDims = "callType, callKind, rpcType";
constexpr std::string_view kGateway = "gateway measurement";
// SGLang's dimensions of the agent's families it shares with other engines.
constexpr std::string_view kSharedDims = "SGLang: callType, callKind, rpcType";

// clang-format off
constexpr std::array<metrics::MetricFamily, 16> kRows{{
  {{}, "sglang_num_running_reqs", K::kCounter, "count", "sglang", "", "M5",
   kSglangDims, "Snapshot of running requests, one added per stats period",
   "`sglang:num_running_reqs` (0.3.x: `sglang:num_requests_running`)"},
  {{}, "sglang_num_queue_reqs", K::kCounter, "count", "sglang", "", "M5",
   kSglangDims, "Snapshot of queued requests, one added per stats period",
   "`sglang:num_queue_reqs` (0.3.x: `sglang:num_requests_waiting`)"},
  {{}, "sglang_num_used_tokens", K::kCounter, "tokens", "sglang", "", "M5",
   kSglangDims, "Snapshot of used KV token slots, one added per stats period",
   "`sglang:num_used_tokens` (absent in 0.3.x)"},
  {{}, "sglang_token_usage", K::kCounter, "ratio", "sglang", "", "M5",
   kSglangDims, "Snapshot of KV token usage, one added per stats period", "`sglang:token_usage`"},
  {{}, "sglang_gen_throughput", K::kCounter, "token/s", "sglang", "", "M5",
   kSglangDims, "Snapshot of generation throughput, one added per stats period", "`sglang:gen_throughput`"},
  {{}, "gen_ai_sglang_cache_hit_rate", K::kCounter, "ratio", "sglang", "", "M5",
   kSglangDims, "Snapshot of the prefix cache hit rate, one added per stats period",
   "`sglang:cache_hit_rate` when the engine has it (0.3.x reports a percentage; divided by 100)"},
  {{}, "sglang_spec_accept_length", K::kCounter, "tokens", "sglang", "", "M5",
   kSglangDims, "Snapshot of the speculative accept length, one added per stats period",
   "`sglang:spec_accept_length` (only with speculative decoding)"},
  {{}, "sglang_log_count", K::kCounter, "count", "sglang", "", "M5",
   kSglangDims, "Stats periods added to the snapshot counters (divide by it to average them)",
   "one per successful scrape of the engine's /metrics that has the scheduler's state (a "
   "data-parallel fragment without it adds none, so that the averages stay averages)"},
  {{}, "prompt_tokens_total", K::kCounter, "tokens", "sglang", "", "M5",
   kSglangDims, "Cumulative input tokens", kGateway, M::kSum, semconv::kMetricClientTokenUsage},
  {{}, "generation_tokens_total", K::kCounter, "tokens", "sglang", "",
   "M5", kSglangDims, "Cumulative output tokens", kGateway, M::kSum,
   semconv::kMetricClientTokenUsage},
  {{}, "gen_ai_sglang_cached_tokens_total", K::kCounter, "tokens",
   "sglang", "", "M5", kSglangDims, "Cumulative cached input tokens",
   "gateway measurement: usage.prompt_tokens_details.cached_tokens (SGLang reports it with --enable-cache-report)"},
  {{}, "num_requests_total", K::kCounter, "count", "sglang", "", "M5",
   kSglangDims, "Cumulative requests that reached the engine", kGateway},
  {{}, "gen_ai_server_time_to_first_token", K::kCounter, "s", "sglang", "", "M5",
   kSglangDims, "Cumulative time to first token",
   "gateway measurement: request received to first content delta (streams)", M::kSum,
   semconv::kMetricServerTimeToFirstToken},
  {{}, "sglang_inter_token_latency_seconds", K::kCounter, "s", "sglang", "",
   "M5", kSglangDims, "Cumulative inter-token latency (the true gaps between streamed tokens)",
   "gateway measurement: sum of gaps between consecutive stream deltas"},
  metrics::AgentFamily(MetricId::kTimePerOutputToken, kSharedDims, "SGLang e2e / output tokens"),
  metrics::AgentFamily(MetricId::kRequestDuration, kSharedDims),
}};
// clang-format on

}  // namespace

std::span<const metrics::MetricFamily> MetricFamilyRows() { return kRows; }

metrics::MetricId Id(SglangMetric m) {
  static const std::size_t first = [] {
    // The own rows were added together, in order: the first one's id gives the others.
    const auto id = metrics::FindMetric(kRows[0].name);
    if (!id) {
      std::fputs("infertel: SGLang's metric families are not in the table\n", stderr);
      std::abort();
    }
    return metrics::IndexOf(*id);
  }();
  return static_cast<MetricId>(first + static_cast<std::size_t>(m));
}

}  // namespace infertel::engines::sglang
