#include "metrics/request_metrics.h"

#include <string>

namespace infertel::metrics {
namespace {

using openai::Operation;
using openai::Outcome;

constexpr double kNs = 1e9;

MetricLabels ApiLabels(std::string_view model, std::string_view span_kind,
                       std::string_view usage_type) {
  MetricLabels l{{std::string(kDimCallKind), std::string(kCallKindCustomEntry)},
                 {std::string(kDimCallType), std::string(kCallTypeGenAi)},
                 {std::string(kDimModelNameApi), std::string(model)},
                 {std::string(kDimRpcType), std::string(kRpcTypeLlm)},
                 {std::string(kDimSpanKind), std::string(span_kind)},
                 {std::string(kDimUsageType), std::string(usage_type)}};
  return l;  // already sorted by key
}

MetricLabels EngineLabels(EngineKind engine, std::string_view model) {
  if (engine == EngineKind::kSglang)
    return {{std::string(kDimCallKind), std::string(kCallKindCustomEntry)},
            {std::string(kDimCallType), std::string(kCallTypeGenAi)},
            {std::string(kDimRpcType), std::string(kRpcTypeLlm)}};
  return {{std::string(kDimCallType), std::string(kCallTypeGenAi)},
          {std::string(kDimModelName), std::string(model)},
          {std::string(kDimRpcType), std::string(kRpcTypeLlm)}};
}

}  // namespace

bool MetricsEnabled(const config::Settings& s, EngineKind engine) {
  if (engine == EngineKind::kSglang)
    return s.GetBool(config::Key::kSglangEnabled) && s.GetBool(config::Key::kSglangMetricsEnabled);
  return s.GetBool(config::Key::kVllmEnabled) && s.GetBool(config::Key::kVllmMetricsEnabled);
}

std::vector<MetricPoint> ExchangeMeasures::Points() const {
  std::vector<MetricPoint> out;
  out.reserve(deltas.size());
  for (const auto& d : deltas) out.push_back({d.id, labels.at(d.labels), d.value});
  return out;
}

bool Measurable(const openai::Exchange& ex) {
  const bool api = ex.op == Operation::kChat || ex.op == Operation::kTextCompletion ||
                   ex.op == Operation::kEmbeddings;
  // A request cut short by its client or by the drain timeout still generated tokens.
  return api &&
         (ex.outcome == openai::Outcome::kOk || ex.outcome == openai::Outcome::kClientAborted ||
          ex.outcome == openai::Outcome::kShutdown);
}

std::string_view ModelOf(const openai::Exchange& ex) {
  return ex.response.model  ? std::string_view(*ex.response.model)
         : ex.request.model ? std::string_view(*ex.request.model)
                            : std::string_view();
}

ExchangeMeasures MeasureExchange(const openai::Exchange& ex, std::string_view model) {
  using M = ExchangeMeasures;
  ExchangeMeasures out;
  if (!Measurable(ex)) return out;
  const bool ok = ex.outcome == openai::Outcome::kOk;

  const auto& usage = ex.response.usage;
  std::optional<std::int64_t> input = usage.input_tokens;
  std::optional<std::int64_t> output = usage.output_tokens;
  // A stream cut short has no usage chunk: what was streamed is what was generated.
  if (!output && ex.streamed && ex.op != Operation::kEmbeddings) output = ex.stream_deltas;

  std::string_view span_kind = openai::SpanKindFor(ex.op);
  auto& d = out.deltas;
  d.reserve(7);
  if (input) {
    out.labels[M::kInput] = ApiLabels(model, span_kind, kUsageTypeInput);
    d.push_back({MetricId::kUsageTokens, M::kInput, static_cast<double>(*input)});
  }
  if (output && ex.op != Operation::kEmbeddings) {
    out.labels[M::kOutput] = ApiLabels(model, span_kind, kUsageTypeOutput);
    d.push_back({MetricId::kUsageTokens, M::kOutput, static_cast<double>(*output)});
  }
  if (ex.op == Operation::kEmbeddings) return out;

  out.labels[M::kEngine] = EngineLabels(ex.engine, model);
  const auto engine = [&](MetricId id, double value) { d.push_back({id, M::kEngine, value}); };
  const std::uint64_t start = ex.start.mono_start_ns;
  const bool has_first = ex.first_token_mono_ns > start;
  const double e2e = ex.end_mono_ns > start ? (ex.end_mono_ns - start) / kNs : 0;
  const double ttft = has_first ? (ex.first_token_mono_ns - start) / kNs : 0;
  const std::uint64_t last_token =
      ex.delta_mono_ns.empty() ? ex.first_token_mono_ns : ex.delta_mono_ns.back();

  if (ex.engine == EngineKind::kSglang) {
    engine(MetricId::kSglangNumRequestsTotal, 1);
    if (input) engine(MetricId::kSglangPromptTokensTotal, double(*input));
    if (output) engine(MetricId::kSglangGenerationTokensTotal, double(*output));
    if (usage.cached_tokens)
      engine(MetricId::kSglangCachedTokensTotal, double(*usage.cached_tokens));
    if (has_first) engine(MetricId::kTimeToFirstToken, ttft);
    // The true gaps between streamed tokens add up to last − first delta.
    if (has_first && ex.stream_deltas > 1 && last_token > ex.first_token_mono_ns)
      engine(MetricId::kSglangInterTokenLatency, (last_token - ex.first_token_mono_ns) / kNs);
    if (ok) {
      engine(MetricId::kRequestDuration, e2e);
      // M5: time per output token is the request average e2e / output tokens.
      if (output && *output > 0) engine(MetricId::kTimePerOutputToken, e2e / double(*output));
    }
    return out;
  }

  if (has_first) engine(MetricId::kFirstTokenSeconds, ttft);
  if (ok) {
    engine(MetricId::kRequestDuration, e2e);
    // vLLM's per-request TPOT: decode time over the tokens after the first.
    if (has_first && output && *output > 1 && last_token > ex.first_token_mono_ns)
      engine(MetricId::kTimePerOutputToken,
             (last_token - ex.first_token_mono_ns) / kNs / double(*output - 1));
  }
  return out;
}

void RequestMetrics::AddUpstream(const std::string& upstream) {
  if (!models_.contains(upstream))
    models_.emplace(upstream, std::make_unique<BoundedLabelValues>(model_bound_));
}

BoundedLabelValues& RequestMetrics::Models(std::string_view upstream) {
  auto it = models_.find(upstream);
  return it == models_.end() ? unknown_models_ : *it->second;
}

void RequestMetrics::OnExchangeFinished(const openai::Exchange& ex) noexcept {
  auto settings = config_->Current();
  if (!MetricsEnabled(*settings, ex.engine)) return;
  if (!Measurable(ex)) return;  // before Admit: a refused request takes no model's room
  try {
    std::string_view model = ModelOf(ex);
    // The model is whatever the client named, and some engines answer any name.
    if (!Models(ex.upstream_name).Admit(model)) model = kLabelValueOther;
    const ExchangeMeasures m = MeasureExchange(ex, model);
    if (!m.empty()) store_->Add(ex.upstream_name, m.labels, m.deltas);
  } catch (const std::exception&) {
    // Allocation failure: the measurement is lost, the exchange is not.
  }
}

}  // namespace infertel::metrics
