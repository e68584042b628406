#include "metrics/slo_metrics.h"

#include <fmt/format.h>

#include "core/stats.h"

namespace infertel::metrics {
namespace {

constexpr std::array<SloFamily, 4> kFamilies{{
    {"infertel_slo_requests_total", "counter",
     "Requests judged against their latency objectives, by whether they met every one"},
    {"infertel_slo_misses_total", "counter",
     "Latency objectives missed, by objective (ttft, tpot, e2e, error)"},
    {"infertel_goodput_tokens_total", "counter",
     "Output tokens of requests that met every latency objective"},
    {"infertel_slo_attainment_ratio", "gauge",
     "Requests that met every objective over requests judged, in the last minute (1m) or five "
     "minutes (5m)"},
}};

constexpr std::array<std::string_view, 4> kObjectives{"ttft", "tpot", "e2e", "error"};
constexpr std::array<std::uint8_t, 4> kObjectiveBits{openai::kSloMissTtft, openai::kSloMissTpot,
                                                     openai::kSloMissE2e, openai::kSloMissError};

// `name{model="…"[,tenant="…"][,EXTRA="VALUE"]} ` for the text format.
void Head(std::string* out, std::string_view name, const std::string& model,
          const std::string& tenant, std::string_view extra = {}, std::string_view value = {}) {
  *out += name;
  *out += "{model=\"";
  AppendLabelValue(out, model);
  *out += '"';
  if (!tenant.empty()) {
    *out += ",tenant=\"";
    AppendLabelValue(out, tenant);
    *out += '"';
  }
  if (!extra.empty()) fmt::format_to(std::back_inserter(*out), ",{}=\"{}\"", extra, value);
  *out += "} ";
}

void Meta(std::string* out, const SloFamily& f) {
  fmt::format_to(std::back_inserter(*out), "# HELP {} {}\n# TYPE {} {}\n", f.name, f.help, f.name,
                 f.type);
}

}  // namespace

std::span<const SloFamily> AllSloFamilies() { return kFamilies; }

void SloMetrics::Record(std::string_view model, std::string_view tenant,
                        const openai::SloVerdict& verdict,
                        std::optional<std::int64_t> output_tokens, std::int64_t now_unix_s) {
  if (!verdict.judged) return;
  {
    std::lock_guard lock(mu_);
    Key key{std::string(model), std::string(tenant)};
    auto it = series_.find(key);
    if (it == series_.end()) {
      if (series_.size() >= max_series_) {
        ++dropped_;
        return;
      }
      it = series_.emplace(std::move(key), Series{}).first;
    }
    Series& s = it->second;
    if (verdict.met()) {
      ++s.met;
      if (output_tokens && *output_tokens > 0)
        s.goodput_tokens += static_cast<double>(*output_tokens);
    } else {
      ++s.missed;
    }
    for (std::size_t i = 0; i < kObjectiveBits.size(); ++i)
      if (verdict.missed & kObjectiveBits[i]) ++s.misses[i];
  }
  windows_.Add(std::string(model), std::string(tenant), verdict.met(), now_unix_s);
}

std::string SloMetrics::RenderPrometheus(std::int64_t now_unix_s) const {
  std::string out;
  const auto windows = windows_.Read(now_unix_s);
  std::lock_guard lock(mu_);
  if (series_.empty()) return out;
  Meta(&out, kFamilies[0]);
  for (const auto& [k, s] : series_) {
    Head(&out, kFamilies[0].name, k.first, k.second, "met", "true");
    out += fmt::format("{}\n", s.met);
    Head(&out, kFamilies[0].name, k.first, k.second, "met", "false");
    out += fmt::format("{}\n", s.missed);
  }
  Meta(&out, kFamilies[1]);
  for (const auto& [k, s] : series_)
    for (std::size_t i = 0; i < kObjectives.size(); ++i) {
      Head(&out, kFamilies[1].name, k.first, k.second, "objective", kObjectives[i]);
      out += fmt::format("{}\n", s.misses[i]);
    }
  Meta(&out, kFamilies[2]);
  for (const auto& [k, s] : series_) {
    Head(&out, kFamilies[2].name, k.first, k.second);
    out += fmt::format("{}\n", s.goodput_tokens);
  }
  if (windows.empty()) return out;
  Meta(&out, kFamilies[3]);
  for (const auto& p : windows) {
    Head(&out, kFamilies[3].name, p.model, p.tenant, "window", p.window);
    out += fmt::format("{}\n", p.ratio);
  }
  return out;
}

void SloMetrics::AppendOtlp(otlp_metrics::ScopeMetrics* sm, std::uint64_t start_unix_nano,
                            std::uint64_t now_unix_nano) const {
  const auto windows = windows_.Read(static_cast<std::int64_t>(now_unix_nano / 1'000'000'000));
  std::lock_guard lock(mu_);
  if (series_.empty()) return;
  auto sum = [&](const SloFamily& f) {
    auto* m = sm->add_metrics();
    m->set_name(std::string(f.name));
    m->set_description(std::string(f.help));
    auto* s = m->mutable_sum();
    s->set_is_monotonic(true);
    s->set_aggregation_temporality(
        otlp_metrics::AggregationTemporality::AGGREGATION_TEMPORALITY_CUMULATIVE);
    return s;
  };
  auto point = [&](auto* holder, const Key& k, double value) {
    auto* dp = holder->add_data_points();
    dp->set_start_time_unix_nano(start_unix_nano);
    dp->set_time_unix_nano(now_unix_nano);
    dp->set_as_double(value);
    AddAttr(dp->mutable_attributes(), "model", k.first);
    if (!k.second.empty()) AddAttr(dp->mutable_attributes(), "tenant", k.second);
    return dp;
  };
  auto* requests = sum(kFamilies[0]);
  for (const auto& [k, s] : series_) {
    AddAttr(point(requests, k, static_cast<double>(s.met))->mutable_attributes(), "met", "true");
    AddAttr(point(requests, k, static_cast<double>(s.missed))->mutable_attributes(), "met",
            "false");
  }
  auto* misses = sum(kFamilies[1]);
  for (const auto& [k, s] : series_)
    for (std::size_t i = 0; i < kObjectives.size(); ++i)
      AddAttr(point(misses, k, static_cast<double>(s.misses[i]))->mutable_attributes(), "objective",
              kObjectives[i]);
  auto* goodput = sum(kFamilies[2]);
  for (const auto& [k, s] : series_) point(goodput, k, s.goodput_tokens);
  if (windows.empty()) return;
  auto* m = sm->add_metrics();
  m->set_name(std::string(kFamilies[3].name));
  m->set_description(std::string(kFamilies[3].help));
  auto* gauge = m->mutable_gauge();
  for (const auto& p : windows) {
    auto* dp = point(gauge, Key{p.model, p.tenant}, p.ratio);
    dp->clear_start_time_unix_nano();
    AddAttr(dp->mutable_attributes(), "window", p.window);
  }
}

std::uint64_t SloMetrics::dropped() const {
  std::lock_guard lock(mu_);
  return dropped_ + windows_.dropped();
}

std::map<std::pair<std::string, std::string>, SloMetrics::Totals> SloMetrics::AllTotals() const {
  std::map<std::pair<std::string, std::string>, Totals> out;
  std::lock_guard lock(mu_);
  for (const auto& [key, s] : series_) out[key] = {s.met + s.missed, s.met, s.goodput_tokens};
  return out;
}

}  // namespace infertel::metrics
