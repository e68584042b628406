#include "metrics/latency_histograms.h"

#include <fmt/format.h>

#include <cmath>

#include "core/stats.h"
#include "metrics/exposition.h"

namespace infertel::metrics {
namespace {

constexpr std::array<LatencyFamily, kLatencyCount> kFamilies{{
    {Latency::kTimeToFirstToken, "infertel_time_to_first_token_seconds",
     "Time from the request's arrival to its first content token, as the gateway saw it "
     "(streams), or as the engine's request span says (responses not streamed)"},
    {Latency::kInterToken, "infertel_inter_token_latency_seconds",
     "Every gap between consecutive content deltas of a stream, as the gateway saw them"},
    {Latency::kTimePerOutputToken, "infertel_time_per_output_token_seconds",
     "Per request: (last token - first token) / (output tokens - 1)"},
    {Latency::kRequestDuration, "infertel_request_duration_seconds",
     "Time from the request's arrival to its response's end, completed requests"},
    {Latency::kQueueTime, "infertel_queue_time_seconds",
     "Time the request waited in the engine's queue, from the engine's request span"},
    {Latency::kPrefillTime, "infertel_prefill_time_seconds",
     "Time the engine spent in the request's prefill, from its request span"},
    {Latency::kDecodeTime, "infertel_decode_time_seconds",
     "Time the engine spent decoding the request, from its request span"},
}};

const LatencyFamily& FamilyOf(Latency id) { return kFamilies[static_cast<std::size_t>(id)]; }

// `{engine_index="…",model="…",tenant="…"` without the closing brace (a bucket adds `,le="…"`).
std::string LabelText(const LatencyLabels& l) {
  std::string out = "{";
  if (!l.engine_index.empty()) {
    out += "engine_index=\"";
    AppendLabelValue(&out, l.engine_index);
    out += "\",";
  }
  out += "model=\"";
  AppendLabelValue(&out, l.model);
  out += '"';
  if (!l.tenant.empty()) {
    out += ",tenant=\"";
    AppendLabelValue(&out, l.tenant);
    out += '"';
  }
  return out;
}

void AppendNumber(std::string* out, double v) {
  if (std::isinf(v)) {
    *out += v > 0 ? "+Inf" : "-Inf";
  } else {
    fmt::format_to(std::back_inserter(*out), "{}", v);
  }
}

}  // namespace

std::span<const LatencyFamily> AllLatencyFamilies() { return kFamilies; }

LatencyHistograms::Series* LatencyHistograms::Find(const Key& key) {
  auto it = series_.find(key);
  if (it != series_.end()) return &it->second;
  if (series_.size() >= max_series_) return nullptr;
  return &series_[key];
}

void LatencyHistograms::Observe(const LatencyLabels& labels,
                                std::span<const Observation> observations,
                                const openai::DeltaTimes* gaps, const TraceId& trace,
                                std::uint64_t now_unix_nano) {
  std::lock_guard lock(mu_);
  for (const Observation& o : observations) {
    if (!(o.seconds >= 0) || std::isinf(o.seconds)) continue;  // NaN, negative, infinite
    Series* s = Find({o.id, labels});
    if (s == nullptr) {
      ++dropped_;
      continue;
    }
    const std::size_t b = LatencyBucket(o.seconds);
    ++s->counts[b];
    s->exemplars[b] = {trace, o.seconds, now_unix_nano};
    s->sum += o.seconds;
    ++s->count;
  }
  if (gaps == nullptr || gaps->gaps <= 0) return;
  Series* s = Find({Latency::kInterToken, labels});
  if (s == nullptr) {
    ++dropped_;
    return;
  }
  for (std::size_t b = 0; b < kLatencyBuckets; ++b) {
    if (gaps->gap_buckets[b] == 0) continue;
    s->counts[b] += gaps->gap_buckets[b];
    // The bucket's gap values are not kept: the exemplar names the trace and the bucket's
    // bound (the longest gap when it fell in this bucket).
    const double value = b < kLatencyBounds.size() ? kLatencyBounds[b] : gaps->gap_max_ns / 1e9;
    s->exemplars[b] = {trace, std::min(value, gaps->gap_max_ns / 1e9), now_unix_nano};
    s->count += gaps->gap_buckets[b];
  }
  s->sum += gaps->gap_sum_s;
}

std::string LatencyHistograms::RenderPrometheus(bool exemplars) const {
  std::lock_guard lock(mu_);
  std::string out;
  std::optional<Latency> current;
  for (const auto& [key, s] : series_) {
    const auto& [id, labels] = key;
    const LatencyFamily& f = FamilyOf(id);
    if (current != id) {
      current = id;
      fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} histogram\n", f.name, f.help,
                     f.name);
    }
    const std::string l = LabelText(labels);
    std::uint64_t cumulative = 0;
    for (std::size_t b = 0; b < kLatencyBuckets; ++b) {
      cumulative += s.counts[b];
      fmt::format_to(std::back_inserter(out), "{}_bucket{},le=\"", f.name, l);
      AppendNumber(&out, b < kLatencyBounds.size() ? kLatencyBounds[b] : INFINITY);
      fmt::format_to(std::back_inserter(out), "\"}} {}", cumulative);
      if (const Exemplar& e = s.exemplars[b]; exemplars && e.unix_nano != 0) {
        fmt::format_to(std::back_inserter(out), " # {{trace_id=\"{}\"}} ", ToHex(e.trace));
        AppendNumber(&out, e.value);
        fmt::format_to(std::back_inserter(out), " {}.{:09}", e.unix_nano / 1'000'000'000,
                       e.unix_nano % 1'000'000'000);
      }
      out += '\n';
    }
    fmt::format_to(std::back_inserter(out), "{}_sum{}}} ", f.name, l);
    AppendNumber(&out, s.sum);
    fmt::format_to(std::back_inserter(out), "\n{}_count{}}} {}\n", f.name, l, s.count);
  }
  return out;
}

void LatencyHistograms::AppendOtlp(otlp_metrics::ScopeMetrics* sm, std::uint64_t start_unix_nano,
                                   std::uint64_t now_unix_nano) const {
  std::lock_guard lock(mu_);
  std::optional<Latency> current;
  otlp_metrics::Histogram* h = nullptr;
  for (const auto& [key, s] : series_) {
    const auto& [id, labels] = key;
    if (current != id) {
      current = id;
      h = AddCumulativeHistogram(sm, FamilyOf(id).name, "s", FamilyOf(id).help);
    }
    auto* dp = h->add_data_points();
    dp->set_start_time_unix_nano(start_unix_nano);
    dp->set_time_unix_nano(now_unix_nano);
    dp->set_count(s.count);
    dp->set_sum(s.sum);
    if (!labels.engine_index.empty())
      AddAttr(dp->mutable_attributes(), "engine_index", labels.engine_index);
    AddAttr(dp->mutable_attributes(), "model", labels.model);
    if (!labels.tenant.empty()) AddAttr(dp->mutable_attributes(), "tenant", labels.tenant);
    for (double bound : kLatencyBounds) dp->add_explicit_bounds(bound);
    for (std::size_t b = 0; b < kLatencyBuckets; ++b) {
      dp->add_bucket_counts(s.counts[b]);
      const Exemplar& e = s.exemplars[b];
      if (e.unix_nano == 0) continue;
      auto* ex = dp->add_exemplars();
      ex->set_time_unix_nano(e.unix_nano);
      ex->set_as_double(e.value);
      ex->set_trace_id(std::string(AsBytes(e.trace)));
    }
  }
}

std::uint64_t LatencyHistograms::dropped() const {
  std::lock_guard lock(mu_);
  return dropped_;
}

std::map<std::pair<std::string, std::string>, LatencyHistograms::BucketCounts>
LatencyHistograms::Totals(Latency id) const {
  std::map<std::pair<std::string, std::string>, BucketCounts> out;
  std::lock_guard lock(mu_);
  for (const auto& [key, s] : series_) {
    const auto& [family, labels] = key;
    if (family != id) continue;
    BucketCounts& t = out[{labels.model, labels.tenant}];
    for (std::size_t i = 0; i < t.size(); ++i) t[i] += s.counts[i];
  }
  return out;
}

}  // namespace infertel::metrics
