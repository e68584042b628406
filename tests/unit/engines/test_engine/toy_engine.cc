#include "toy_engine.h"

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

  metrics::MetricLabels RequestLabels(std::string_view model) const override {
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
