#include "metrics/exchange_labels.h"

#include "absl/hash/hash.h"

#include "engines/registry.h"

namespace infertel::metrics {
namespace {

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

}  // namespace

std::shared_ptr<const ExchangeLabelSets> BuildExchangeLabels(
    EngineId engine, openai::Operation op, std::string_view model,
    std::optional<std::int64_t> engine_index) {
  const std::string_view span_kind = openai::SpanKindFor(op);
  auto sets = std::make_shared<ExchangeLabelSets>();
  (*sets)[kInputTokenLabels] = ApiLabels(model, span_kind, kUsageTypeInput);
  (*sets)[kOutputTokenLabels] = ApiLabels(model, span_kind, kUsageTypeOutput);
  (*sets)[kEngineLabels] = engines::Profile(engine).RequestLabels(model, engine_index);
  return sets;
}

std::size_t ExchangeLabelCache::Hash::operator()(const KeyView& k) const {
  return absl::HashOf(std::get<0>(k), std::get<1>(k), std::get<2>(k), std::get<3>(k),
                      std::get<4>(k));
}

std::size_t ExchangeLabelCache::Hash::operator()(const Key& k) const {
  return (*this)(
      KeyView(std::get<0>(k), std::get<1>(k), std::get<2>(k), std::get<3>(k), std::get<4>(k)));
}

std::shared_ptr<const ExchangeLabelSets> ExchangeLabelCache::Get(
    EngineId engine, openai::Operation op, std::string_view model,
    std::optional<std::int64_t> engine_index) {
  const KeyView key(engine.index, static_cast<int>(op), engine_index.has_value(),
                    engine_index.value_or(0), model);
  {
    std::lock_guard lock(mu_);
    if (auto it = sets_.find(key); it != sets_.end()) return it->second;
  }
  auto sets = BuildExchangeLabels(engine, op, model, engine_index);
  std::lock_guard lock(mu_);
  if (sets_.size() < kMaxEntries)
    sets_.try_emplace(Key(std::get<0>(key), std::get<1>(key), std::get<2>(key), std::get<3>(key),
                          std::string(model)),
                      sets);
  return sets;
}

std::size_t ExchangeLabelCache::size() const {
  std::lock_guard lock(mu_);
  return sets_.size();
}

}  // namespace infertel::metrics
