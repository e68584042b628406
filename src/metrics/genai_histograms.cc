#include "metrics/genai_histograms.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "core/semconv.h"
#include "core/stats.h"
#include "metrics/exposition.h"

namespace infertel::metrics {
namespace {

namespace sc = semconv;

// The conventions' advised boundaries (semantic-conventions v1.40, gen-ai-metrics).
constexpr std::array<double, 14> kTokenBounds{
    1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864};
constexpr std::array<double, 14> kDurationBounds{0.01, 0.02, 0.04, 0.08,  0.16,  0.32,  0.64,
                                                 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92};
constexpr std::array<double, 16> kTtftBounds{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,
                                             0.25,  0.5,   0.75, 1.0,  2.5,  5.0,  7.5,  10.0};
constexpr std::array<double, 13> kTpotBounds{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,
                                             0.3,  0.4,   0.5,  0.75,  1.0, 2.5};

constexpr std::array<GenAiMetricFamily, kGenAiMetricCount> kFamilies{{
    {GenAiMetric::kClientTokenUsage, sc::kMetricClientTokenUsage, "gen_ai_client_token_usage",
     "{token}", "Number of input and output tokens used", kTokenBounds},
    {GenAiMetric::kClientOperationDuration, sc::kMetricClientOperationDuration,
     "gen_ai_client_operation_duration_seconds", "s", "GenAI operation duration", kDurationBounds},
    {GenAiMetric::kServerRequestDuration, sc::kMetricServerRequestDuration,
     "gen_ai_server_request_duration_seconds", "s", "Generative AI server request duration",
     kDurationBounds},
    {GenAiMetric::kServerTimeToFirstToken, sc::kMetricServerTimeToFirstToken,
     "gen_ai_server_time_to_first_token_seconds", "s",
     "Time to generate first token for successful responses", kTtftBounds},
    {GenAiMetric::kServerTimePerOutputToken, sc::kMetricServerTimePerOutputToken,
     "gen_ai_server_time_per_output_token_seconds", "s",
     "Time per output token generated after the first token for successful responses", kTpotBounds},
}};

const GenAiMetricFamily& FamilyOf(GenAiMetric id) {
  return kFamilies[static_cast<std::size_t>(id)];
}

// The attributes present, by their conventions' names.
std::vector<std::pair<std::string_view, const std::string*>> Present(const GenAiAttributes& a) {
  std::vector<std::pair<std::string_view, const std::string*>> out;
  const std::pair<std::string_view, const std::string*> all[] = {
      {sc::kErrorType, &a.error_type},
      {sc::kGenAiOperationName, &a.operation},
      {sc::kGenAiProviderName, &a.provider},
      {sc::kGenAiRequestModel, &a.request_model},
      {sc::kGenAiTokenType, &a.token_type}};
  for (const auto& p : all)
    if (!p.second->empty()) out.push_back(p);
  return out;
}

// `{name="…",…` without the closing brace (a bucket adds `,le="…"`); dots become underscores.
std::string LabelText(const GenAiAttributes& a) {
  std::string out = "{";
  for (const auto& [key, value] : Present(a)) {
    if (out.size() > 1) out += ',';
    for (char c : key) out += c == '.' ? '_' : c;
    out += "=\"";
    AppendLabelValue(&out, *value);
    out += '"';
  }
  return out;
}

std::string Bound(double v) { return std::isinf(v) ? "+Inf" : fmt::format("{}", v); }

}  // namespace

std::span<const GenAiMetricFamily> AllGenAiMetricFamilies() { return kFamilies; }

void GenAiHistograms::Observe(GenAiMetric id, const GenAiAttributes& attributes, double value) {
  if (!(value >= 0) || std::isinf(value)) return;  // NaN, negative, infinite
  const auto& bounds = FamilyOf(id).bounds;
  std::lock_guard lock(mu_);
  Key key{id, attributes};
  auto it = series_.find(key);
  if (it == series_.end()) {
    if (series_.size() >= max_series_) {
      ++dropped_;
      return;
    }
    it = series_.emplace(std::move(key), Series{}).first;
    it->second.counts.assign(bounds.size() + 1, 0);
  }
  Series& s = it->second;
  ++s.counts[static_cast<std::size_t>(std::lower_bound(bounds.begin(), bounds.end(), value) -
                                      bounds.begin())];
  s.sum += value;
  ++s.count;
}

std::string GenAiHistograms::RenderPrometheus() const {
  std::lock_guard lock(mu_);
  std::string out;
  std::optional<GenAiMetric> current;
  for (const auto& [key, s] : series_) {
    const auto& [id, attributes] = key;
    const GenAiMetricFamily& f = FamilyOf(id);
    if (current != id) {
      current = id;
      fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} histogram\n",
                     f.prometheus_name, f.help, f.prometheus_name);
    }
    std::string l = LabelText(attributes);
    const std::string_view sep = l.size() > 1 ? "," : "";
    std::uint64_t cumulative = 0;
    for (std::size_t b = 0; b < s.counts.size(); ++b) {
      cumulative += s.counts[b];
      fmt::format_to(std::back_inserter(out), "{}_bucket{}{}le=\"{}\"}} {}\n", f.prometheus_name, l,
                     sep, Bound(b < f.bounds.size() ? f.bounds[b] : INFINITY), cumulative);
    }
    l += '}';
    fmt::format_to(std::back_inserter(out), "{}_sum{} {}\n{}_count{} {}\n", f.prometheus_name, l,
                   s.sum, f.prometheus_name, l, s.count);
  }
  return out;
}

void GenAiHistograms::AppendOtlp(otlp_metrics::ScopeMetrics* sm, std::uint64_t start_unix_nano,
                                 std::uint64_t now_unix_nano) const {
  std::lock_guard lock(mu_);
  std::optional<GenAiMetric> current;
  otlp_metrics::Histogram* h = nullptr;
  for (const auto& [key, s] : series_) {
    const auto& [id, attributes] = key;
    const GenAiMetricFamily& f = FamilyOf(id);
    if (current != id) {
      current = id;
      h = AddCumulativeHistogram(sm, f.name, f.unit, f.help);
    }
    auto* dp = h->add_data_points();
    dp->set_start_time_unix_nano(start_unix_nano);
    dp->set_time_unix_nano(now_unix_nano);
    dp->set_count(s.count);
    dp->set_sum(s.sum);
    for (const auto& [name, value] : Present(attributes))
      AddAttr(dp->mutable_attributes(), name, *value);
    for (double bound : f.bounds) dp->add_explicit_bounds(bound);
    for (std::uint64_t c : s.counts) dp->add_bucket_counts(c);
  }
}

std::uint64_t GenAiHistograms::dropped() const {
  std::lock_guard lock(mu_);
  return dropped_;
}

}  // namespace infertel::metrics
