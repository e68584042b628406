#include "metrics/request_metrics.h"

#include <algorithm>
#include <string>

#include "analytics/slo.h"
#include "core/semconv.h"
#include "engines/registry.h"

namespace infertel::metrics {
namespace {

using openai::Operation;
using openai::Outcome;

constexpr double kNs = 1e9;

}  // namespace

bool MetricsEnabled(const config::Settings& s, EngineId engine) {
  const engines::EngineSwitches sw = engines::Profile(engine).switches();
  return engines::SwitchOn(s, sw.enabled) && engines::SwitchOn(s, sw.metrics_enabled);
}

std::vector<MetricPoint> ExchangeMeasures::Points() const {
  std::vector<MetricPoint> out;
  out.reserve(deltas.size());
  for (const auto& d : deltas) out.push_back({d.id, labels->at(d.labels), d.value});
  return out;
}

namespace {
bool ApiOperation(const openai::Exchange& ex) {
  return ex.op == Operation::kChat || ex.op == Operation::kTextCompletion ||
         ex.op == Operation::kEmbeddings;
}
}  // namespace

bool Measurable(const openai::Exchange& ex) {
  const bool api = ApiOperation(ex);
  // A request cut short by its client or by the drain timeout still generated tokens.
  return api &&
         (ex.outcome == openai::Outcome::kOk || ex.outcome == openai::Outcome::kClientAborted ||
          ex.outcome == openai::Outcome::kShutdown);
}

namespace {
// A request of the API that the server had to serve (analytics::ServersToServe).
bool Counted(const openai::Exchange& ex) {
  return ApiOperation(ex) && analytics::ServersToServe(ex);
}
}  // namespace

ExchangeMeasures MeasureExchange(const openai::Exchange& ex, std::string_view model,
                                 const engines::EngineFacts& facts, ExchangeLabelCache* cache) {
  ExchangeMeasures out;
  if (!Measurable(ex)) return out;
  const bool ok = ex.outcome == openai::Outcome::kOk;

  const auto& usage = ex.response.usage;
  std::optional<std::int64_t> input = usage.input_tokens;
  std::optional<std::int64_t> output = usage.output_tokens;
  // A stream cut short has no usage chunk: what was streamed is what was generated, counted
  // as the entry span counts it.
  if (!output && ex.streamed && ex.op != Operation::kEmbeddings)
    output = engines::Profile(ex.engine).StreamedTokens(ex, facts);

  auto& d = out.deltas;
  d.reserve(7);
  if (input) d.push_back({MetricId::kUsageTokens, kInputTokenLabels, static_cast<double>(*input)});
  if (output && ex.op != Operation::kEmbeddings)
    d.push_back({MetricId::kUsageTokens, kOutputTokenLabels, static_cast<double>(*output)});
  if (ex.op != Operation::kEmbeddings || !d.empty())
    out.labels = cache != nullptr ? cache->Get(ex.engine, ex.op, model, ex.engine_index)
                                  : BuildExchangeLabels(ex.engine, ex.op, model, ex.engine_index);
  if (ex.op == Operation::kEmbeddings) return out;

  const engines::EngineProfile& profile = engines::Profile(ex.engine);
  engines::RequestFigures f;
  f.input_tokens = input;
  f.output_tokens = output;
  f.cached_tokens = usage.cached_tokens;
  f.ok = ok;
  f.stream_deltas = ex.stream_deltas;
  const std::uint64_t start = ex.start.mono_start_ns;
  const std::uint64_t first = ex.first_token_mono_ns;
  if (ex.end_mono_ns > start) f.e2e_s = (ex.end_mono_ns - start) / kNs;
  if (first > start) {
    f.ttft_s = (first - start) / kNs;
    const std::uint64_t last = std::max(first, ex.delta_times.last_mono_ns);
    if (last > first) f.decode_s = (last - first) / kNs;
  }
  engines::RequestMeasures measures;
  profile.MeasureRequest(f, &measures);
  for (const auto& [id, value] : measures) d.push_back({id, kEngineLabels, value});
  return out;
}

ExchangeMeasures MeasureEngineSpan(const engines::JoinRecord& r, const engines::EngineTimings& t,
                                   std::string_view model) {
  ExchangeMeasures out;
  if (r.streamed || !r.ok) return out;  // a stream's figures are the gateway's own
  const engines::EngineProfile& profile = engines::Profile(r.engine);
  engines::RequestFigures f;
  f.output_tokens = r.output_tokens;
  f.ok = true;
  f.ttft_s = t.ttft_s;
  f.decode_s = t.decode_s;
  if (t.e2e_s) f.e2e_s = *t.e2e_s;
  engines::RequestMeasures measures;
  profile.MeasureEngineSpan(f, &measures);
  if (measures.size() == 0) return out;
  auto sets = std::make_shared<ExchangeLabelSets>();
  (*sets)[kEngineLabels] = profile.RequestLabels(model, r.engine_index);
  out.labels = std::move(sets);
  for (const auto& [id, value] : measures) out.deltas.push_back({id, kEngineLabels, value});
  return out;
}

namespace {

LatencyLabels HistogramLabels(std::string_view model, std::string_view tenant,
                              std::optional<std::int64_t> engine_index) {
  return {std::string(model), std::string(tenant),
          engine_index ? std::to_string(*engine_index) : std::string()};
}

}  // namespace

void RequestMetrics::ObserveExchange(const openai::Exchange& ex, std::string_view model) const {
  if (ex.op == Operation::kEmbeddings) return;
  using O = LatencyHistograms::Observation;
  std::array<O, 3> obs;
  std::size_t n = 0;
  // The figures the SLO verdict judged (one place computes them).
  const analytics::MeasuredLatency m = analytics::MeasureLatency(ex);
  if (m.ttft_s) obs[n++] = {Latency::kTimeToFirstToken, *m.ttft_s};
  const bool ok = ex.outcome == Outcome::kOk;
  if (ok && m.e2e_s) obs[n++] = {Latency::kRequestDuration, *m.e2e_s};
  if (ok && m.tpot_s) obs[n++] = {Latency::kTimePerOutputToken, *m.tpot_s};
  histograms_->Observe(HistogramLabels(model, ex.tenant, ex.engine_index), std::span(obs.data(), n),
                       ex.streamed ? &ex.delta_times : nullptr, ex.trace_id,
                       ex.start.WallAt(ex.end_mono_ns));
}

void RequestMetrics::ObserveConventions(const openai::Exchange& ex, std::string_view model) const {
  GenAiAttributes a{std::string(openai::OperationName(ex.op)),
                    std::string(engines::Profile(ex.engine).name()),
                    std::string(model),
                    {},
                    {}};
  const bool ok = ex.outcome == Outcome::kOk;
  if (!ok) a.error_type = ex.error_type.empty() ? "_OTHER" : ex.error_type;
  const analytics::MeasuredLatency m = analytics::MeasureLatency(ex);
  if (m.e2e_s) {
    genai_->Observe(GenAiMetric::kClientOperationDuration, a, *m.e2e_s);
    genai_->Observe(GenAiMetric::kServerRequestDuration, a, *m.e2e_s);
  }
  if (!ok) return;
  if (ex.streamed && m.ttft_s) genai_->Observe(GenAiMetric::kServerTimeToFirstToken, a, *m.ttft_s);
  if (m.tpot_s) genai_->Observe(GenAiMetric::kServerTimePerOutputToken, a, *m.tpot_s);
  const auto& usage = ex.response.usage;
  const std::pair<std::string_view, std::optional<std::int64_t>> tokens[] = {
      {semconv::kTokenTypeInput, usage.input_tokens},
      {semconv::kTokenTypeOutput, usage.output_tokens}};
  for (const auto& [type, n] : tokens) {
    if (!n) continue;
    a.token_type = std::string(type);
    genai_->Observe(GenAiMetric::kClientTokenUsage, a, static_cast<double>(*n));
  }
}

void RequestMetrics::ObserveEngineSpan(const engines::JoinRecord& r,
                                       const engines::EngineTimings& t,
                                       std::string_view model) const {
  using O = LatencyHistograms::Observation;
  std::array<O, 5> obs;
  std::size_t n = 0;
  if (t.queue_s) obs[n++] = {Latency::kQueueTime, *t.queue_s};
  if (t.prefill_s) obs[n++] = {Latency::kPrefillTime, *t.prefill_s};
  if (t.decode_s) obs[n++] = {Latency::kDecodeTime, *t.decode_s};
  // What the gateway could not see of a response not streamed.
  if (!r.streamed && r.ok) {
    if (t.ttft_s) obs[n++] = {Latency::kTimeToFirstToken, *t.ttft_s};
    if (t.decode_s && r.output_tokens && *r.output_tokens > 1)
      obs[n++] = {Latency::kTimePerOutputToken,
                  *t.decode_s / static_cast<double>(*r.output_tokens - 1)};
  }
  histograms_->Observe(HistogramLabels(model, r.tenant, r.engine_index), std::span(obs.data(), n),
                       nullptr, r.trace_id, WallNanos());
}

void RequestMetrics::AddUpstream(const std::string& upstream) {
  if (!models_.contains(upstream))
    models_.emplace(upstream, std::make_unique<BoundedLabelValues>(model_bound_));
  if (!intervals_.contains(upstream))
    intervals_.emplace(upstream, std::make_unique<std::atomic<std::int64_t>>(0));
}

void RequestMetrics::SetEngineFacts(std::string_view upstream, const engines::EngineFacts& facts) {
  auto it = intervals_.find(upstream);
  if (it != intervals_.end()) it->second->store(facts.stream_interval.value_or(0));
}

engines::EngineFacts RequestMetrics::FactsOf(std::string_view upstream) const {
  engines::EngineFacts f;
  auto it = intervals_.find(upstream);
  if (it == intervals_.end()) return f;
  if (const std::int64_t v = it->second->load(std::memory_order_relaxed); v > 0)
    f.stream_interval = v;
  return f;
}

BoundedLabelValues& RequestMetrics::Models(std::string_view upstream) {
  auto it = models_.find(upstream);
  return it == models_.end() ? unknown_models_ : *it->second;
}

void RequestMetrics::OnExchangeFinished(const openai::Exchange& ex) noexcept {
  auto settings = config_->Current();
  if (!MetricsEnabled(*settings, ex.engine)) return;
  // Before Admit: a refused request takes no model's room (a judged one ran on the server).
  const bool served = Counted(ex);
  if (!Measurable(ex) && !ex.slo.judged && !served) return;
  try {
    std::string_view model = ModelOf(ex);
    // The model is whatever the client named, and some engines answer any name.
    if (!Models(ex.upstream_name).Admit(model)) model = kLabelValueOther;
    if (slo_ != nullptr && ex.slo.judged)
      slo_->Record(model, ex.tenant, ex.slo, ex.response.usage.output_tokens,
                   static_cast<std::int64_t>(WallNanos() / 1'000'000'000));
    if (served && overview_ != nullptr)
      overview_->CountRequest(model, ex.tenant, ex.outcome != openai::Outcome::kOk);
    if (served && genai_ != nullptr && SpeaksLatest(ex.genai_dialect))
      ObserveConventions(ex, model);
    if (!Measurable(ex)) return;
    const ExchangeMeasures m = MeasureExchange(ex, model, FactsOf(ex.upstream_name), &labels_);
    if (!m.empty()) store_->Add(ex.upstream_name, *m.labels, m.deltas);
    if (histograms_ != nullptr) ObserveExchange(ex, model);
  } catch (const std::exception&) {
    // Allocation failure: the measurement is lost, the exchange is not.
  }
}

void RequestMetrics::OnEngineSpanJoined(const engines::JoinRecord& r,
                                        const engines::EngineTimings& t) noexcept {
  auto settings = config_->Current();
  if (!MetricsEnabled(*settings, r.engine)) return;
  try {
    std::string_view model = r.model ? std::string_view(*r.model) : std::string_view();
    if (!Models(r.upstream).Admit(model)) model = kLabelValueOther;
    if (histograms_ != nullptr) ObserveEngineSpan(r, t, model);
    const ExchangeMeasures m = MeasureEngineSpan(r, t, model);
    if (!m.empty()) store_->Add(r.upstream, *m.labels, m.deltas);
  } catch (const std::exception&) {
    // Allocation failure: the measurement is lost, the span is not.
  }
}

}  // namespace infertel::metrics
