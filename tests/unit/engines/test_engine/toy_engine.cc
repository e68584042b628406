#include "toy_engine.h"

#include <map>
#include <mutex>

#include "core/static_key.h"
#include "engines/knobs.h"

namespace infertel::toy {
namespace {

using metrics::MetricId;

// The toy engine's knobs: none that can change from outside.
class ToyKnobs final : public engines::EngineKnobs {
 public:
  std::string_view engine() const override { return "toy"; }
  std::string Unsupported(config::Key) const override { return "the toy engine has no knobs"; }
  std::optional<Original> ReadOriginal(config::Key, std::string* error) override {
    *error = "no knobs";
    return std::nullopt;
  }
  bool Apply(config::Key, const config::Value&, std::string* error) override {
    *error = "no knobs";
    return false;
  }
  bool Answers(std::string*) override { return true; }
};

// The toy's own spans, under the scope "toy": each gets the tracing level its request started
// with, which only the gateway's word (OnRequestStarted, through the assembler) gives.
class ToyNativeSpans final : public engines::NativeSpans {
 public:
  bool ClaimsScope(const Resource&, const otlp_common::InstrumentationScope& scope) const override {
    return scope.name() == kToyScope;
  }
  bool HasOwnSpan(const otlp_trace::ScopeSpans&) const override { return false; }
  std::size_t OnRequestStarted(const TraceId& trace, int level, std::string_view) override {
    std::lock_guard lock(mu_);
    levels_[trace] = level;
    return 0;  // unbounded: a test's few requests
  }
  void OnRequestFinished(const TraceId&) override {}
  engines::NativeResult Process(google::protobuf::RepeatedPtrField<Span>* spans,
                                int level) override {
    std::lock_guard lock(mu_);
    for (Span& s : *spans) {
      auto it = levels_.find(TraceIdFromBytes(s.trace_id()));
      AddAttr(s.mutable_attributes(), kToyLevelAttr,
              std::int64_t{it != levels_.end() ? it->second : -level});
    }
    return {};
  }
  Resource MergeResource(const Resource& agent, const Resource&) const override { return agent; }

 private:
  static TraceId TraceIdFromBytes(const std::string& b) {
    TraceId id{};
    if (b.size() == id.size()) std::copy(b.begin(), b.end(), id.begin());
    return id;
  }
  std::mutex mu_;
  std::map<TraceId, int> levels_;
};

class ToyProfile final : public engines::EngineProfile {
 public:
  std::string_view name() const override { return "toy"; }
  std::string_view display_name() const override { return "Toy"; }
  // No switch of its own: always instrumented, metrics on, tracing level 1.
  engines::EngineSwitches switches() const override { return {}; }

  void AddEntryAttributes(const openai::Exchange&, const engines::EngineFacts& facts,
                          google::protobuf::RepeatedPtrField<KeyValue>* a) const override {
    AddAttr(a, kToyStreamIntervalAttr, facts.stream_interval.value_or(0));
  }
  std::optional<engines::FactsProbe> facts_probe() const override {
    return engines::FactsProbe{"toy-probe", "the toy's interval", false};
  }
  std::optional<engines::EngineFacts> ReadFacts(const http::Url&, std::string*) const override {
    return engines::EngineFacts{.stream_interval = 7};
  }

  engines::SpanJoin span_join() const override { return engines::SpanJoin::kTraceId; }
  std::unique_ptr<engines::NativeSpans> MakeNativeSpans() const override {
    return std::make_unique<ToyNativeSpans>();
  }

  metrics::MetricLabels RequestLabels(std::string_view model,
                                      std::optional<std::int64_t>) const override {
    return {{std::string(metrics::kDimModelName), std::string(model)}};
  }
  void MeasureRequest(const engines::RequestFigures& f,
                      engines::RequestMeasures* out) const override {
    if (f.ok) out->emplace_back(MetricId::kRequestDuration, f.e2e_s);
  }
  engines::ScrapeMode scrape_mode() const override { return engines::ScrapeMode::kSnapshot; }
  bool ReadsFamily(std::string_view) const override { return false; }
  bool ReadsSample(std::string_view) const override { return false; }
  engines::ScrapedMetrics TranslateScrape(const scrape::ParseResult&,
                                          std::string_view) const override {
    return {};
  }

  std::unique_ptr<engines::EngineKnobs> MakeKnobs(const http::Url&) const override {
    return std::make_unique<ToyKnobs>();
  }

  engines::LaunchCommands launch_commands() const override {
    return {"toy", "serve", "toy.server"};
  }
  std::pair<std::string_view, std::uint16_t> default_listen() const override {
    return {"127.0.0.1", 7000};
  }
  engines::LaunchAdditions LaunchTelemetryFor(
      const engines::LaunchTelemetry& t,
      const std::function<bool(std::string_view)>& has_flag) const override {
    engines::LaunchAdditions out;
    if (!has_flag("--traces-to")) out.flags.emplace_back("--traces-to", t.otlp_grpc_endpoint);
    return out;
  }
};

}  // namespace

std::unique_ptr<const engines::EngineProfile> MakeToyProfile() {
  return std::make_unique<ToyProfile>();
}

}  // namespace infertel::toy
