#pragma once
// Metrics measured at the gateway from finished exchanges (spec M3.1, M5): token usage by
// API-layer dimensions, TTFT, time per output token, end-to-end duration, SGLang's request
// and token totals and inter-token latency. SGLang's are thereby present whether or not the
// engine runs with --enable-metrics.
//
// A response that is not streamed shows the gateway no first token: its TTFT and time per
// output token come from the engine's own request span when one joins it (MeasureEngineSpan).
//
// Thread-safety: OnExchangeFinished runs on gateway workers concurrently, OnEngineSpanJoined
// on the assembler's threads; each reads one config snapshot and makes one MetricStore::Add
// call.

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string_view>
#include <vector>

#include "config/settings.h"
#include "core/metric_families.h"
#include "engines/engine_spans.h"
#include "engines/profile.h"
#include "metrics/exchange_labels.h"
#include "metrics/genai_histograms.h"
#include "metrics/label_bound.h"
#include "metrics/latency_histograms.h"
#include "metrics/overview_history.h"
#include "metrics/slo_metrics.h"
#include "metrics/store.h"
#include "openai/exchange.h"

namespace infertel::metrics {

// Whether the agent reports metrics for an engine now: its plugin (C1) and its "collect
// metrics" switch (C3/C4) are both on.
bool MetricsEnabled(const config::Settings& settings, EngineId engine);

// One exchange's counter deltas. They share three label sets (API-layer input tokens, output
// tokens, engine-layer), so each delta names its set instead of carrying a copy of it: the
// copies were most of the cost of measuring an exchange. The sets themselves are shared by
// every exchange of the same model (ExchangeLabelCache); null when there are no deltas.
// Each delta's `labels` is an ExchangeLabelSet.
struct ExchangeMeasures {
  std::shared_ptr<const ExchangeLabelSets> labels;
  std::vector<LabeledDelta> deltas;

  bool empty() const { return deltas.empty(); }
  // The deltas with their labels, as points.
  std::vector<MetricPoint> Points() const;
};

// Whether an exchange contributes measurements: an API call that ran on the engine.
bool Measurable(const openai::Exchange& ex);

// The model an exchange is measured under: the engine's answer, else the client's request.
using openai::ModelOf;

// The counter deltas one exchange contributes. Requests that never ran on the engine
// (refused by the gateway, engine unreachable, rejected by the engine) contribute nothing;
// an aborted request counts as a request and with the tokens it streamed, but not in the
// durations of completed requests. `model` is the model label value (ModelOf, or
// kLabelValueOther when the bound folded it).
// `facts`: what the engine says of itself (its stream interval), for the output tokens of a
// stream without usage (EngineProfile::StreamedTokens). `cache`, when given, supplies the
// label sets.
ExchangeMeasures MeasureExchange(const openai::Exchange& ex, std::string_view model,
                                 const engines::EngineFacts& facts = {},
                                 ExchangeLabelCache* cache = nullptr);
inline ExchangeMeasures MeasureExchange(const openai::Exchange& ex) {
  return MeasureExchange(ex, ModelOf(ex));
}

// The counter deltas an engine's request span adds to its exchange's (EngineSpanListener):
// what the engine measured and the gateway could not (EngineProfile::MeasureEngineSpan),
// for a completed response that was not streamed. `model` as for MeasureExchange.
ExchangeMeasures MeasureEngineSpan(const engines::JoinRecord& record,
                                   const engines::EngineTimings& timings, std::string_view model);

class RequestMetrics : public openai::ExchangeListener, public engines::EngineSpanListener {
 public:
  // `histograms`, `slo`, `overview` and `genai` (each may be null) take the latency
  // distributions, the SLO verdicts, the overview's request counts and the GenAI conventions'
  // histograms (for an exchange whose dialect speaks them).
  RequestMetrics(MetricStore* store, std::shared_ptr<config::ConfigStore> config,
                 LabelBoundOptions model_bound = {}, LatencyHistograms* histograms = nullptr,
                 SloMetrics* slo = nullptr, OverviewHistory* overview = nullptr,
                 GenAiHistograms* genai = nullptr)
      : store_(store),
        config_(std::move(config)),
        model_bound_(model_bound),
        histograms_(histograms),
        slo_(slo),
        overview_(overview),
        genai_(genai) {}
  // Gives `upstream` its own bound on model label values. Not thread-safe: call before the
  // gateway starts. Exchanges of an upstream never added share one bound.
  void AddUpstream(const std::string& upstream);
  // The model bound of `upstream` (the shared one when it was never added).
  BoundedLabelValues& Models(std::string_view upstream);
  // What `upstream`'s engine says of itself (its stream interval); thread-safe (a probe).
  void SetEngineFacts(std::string_view upstream, const engines::EngineFacts& facts);

  void OnExchangeFinished(const openai::Exchange& ex) noexcept override;
  // From the assembler's threads.
  void OnEngineSpanJoined(const engines::JoinRecord& record,
                          const engines::EngineTimings& timings) noexcept override;

 private:
  void ObserveExchange(const openai::Exchange& ex, std::string_view model) const;
  void ObserveConventions(const openai::Exchange& ex, std::string_view model) const;
  void ObserveEngineSpan(const engines::JoinRecord& r, const engines::EngineTimings& t,
                         std::string_view model) const;

  MetricStore* store_;
  std::shared_ptr<config::ConfigStore> config_;
  LabelBoundOptions model_bound_;
  LatencyHistograms* histograms_;
  SloMetrics* slo_;
  OverviewHistory* overview_;
  GenAiHistograms* genai_;
  ExchangeLabelCache labels_;
  // Fixed once the gateway starts: read without a lock.
  std::map<std::string, std::unique_ptr<BoundedLabelValues>, std::less<>> models_;
  // Each upstream's stream interval as its facts say (0: not known), read per exchange.
  std::map<std::string, std::unique_ptr<std::atomic<std::int64_t>>, std::less<>> intervals_;
  engines::EngineFacts FactsOf(std::string_view upstream) const;
  BoundedLabelValues unknown_models_{model_bound_};
};

}  // namespace infertel::metrics
