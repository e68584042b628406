#include "engines/vllm/vllm_profile.h"

#include "core/otel_env.h"
#include "engines/vllm/version.h"
#include "engines/vllm/vllm_knobs.h"
#include "engines/vllm/vllm_metrics.h"

namespace infertel::engines::vllm {
namespace {

using metrics::MetricId;

class VllmProfile final : public EngineProfile {
 public:
  std::string_view name() const override { return "vllm"; }
  std::string_view display_name() const override { return "vLLM"; }

  EngineSwitches switches() const override {
    return {config::Key::kVllmEnabled, config::Key::kVllmMetricsEnabled,
            config::Key::kVllmTracingLevel, config::Key::kVllmLogRequests,
            config::Key::kVllmLogTraceContext};
  }

  // Level 2's DECODE events carry each token's detail, which only logprobs give.
  bool TokenDetailAt(int tracing_level) const override { return tracing_level >= 2; }

  // Which vLLM the engine is decides the shape of its spans; followed, since an engine can be
  // upgraded in place. Not asked when the upstream's generation is configured.
  std::optional<FactsProbe> facts_probe() const override {
    return FactsProbe{"vllm-probe", "the vLLM version (GET /version)", true};
  }
  std::optional<EngineFacts> ReadFacts(const http::Url& base, std::string* error) const override {
    auto version = ProbeVersion(base, error);
    if (!version) return std::nullopt;
    EngineFacts facts;
    if (auto shape = ShapeFromVersion(*version))
      facts.span_generation = *shape == SpanShape::kV0 ? "v0" : "v1";
    return facts;
  }

  SpanJoin span_join() const override { return SpanJoin::kRequestId; }

  metrics::MetricLabels RequestLabels(std::string_view model) const override {
    using namespace metrics;
    return {{std::string(kDimCallType), std::string(kCallTypeGenAi)},
            {std::string(kDimModelName), std::string(model)},
            {std::string(kDimRpcType), std::string(kRpcTypeLlm)}};
  }
  void MeasureRequest(const RequestFigures& f, RequestMeasures* out) const override {
    if (f.ttft_s) out->emplace_back(MetricId::kFirstTokenSeconds, *f.ttft_s);
    if (!f.ok) return;
    out->emplace_back(MetricId::kRequestDuration, f.e2e_s);
    // vLLM's per-request TPOT: decode time over the tokens after the first.
    if (f.decode_s && f.output_tokens && *f.output_tokens > 1)
      out->emplace_back(MetricId::kTimePerOutputToken,
                        *f.decode_s / static_cast<double>(*f.output_tokens - 1));
  }

  ScrapeMode scrape_mode() const override { return ScrapeMode::kCumulative; }
  bool ReadsFamily(std::string_view family) const override { return vllm::ReadsFamily(family); }
  bool ReadsSample(std::string_view sample) const override { return vllm::ReadsSample(sample); }
  ScrapedMetrics TranslateScrape(const scrape::ParseResult& scrape,
                                 std::string_view generation) const override {
    const MetricsGeneration gen = generation == "v0"   ? MetricsGeneration::kV0
                                  : generation == "v1" ? MetricsGeneration::kV1
                                                       : DetectMetricsGeneration(scrape);
    TranslatedMetrics t = TranslateMetrics(scrape, gen);
    ScrapedMetrics out;
    out.counters = std::move(t.counters);
    out.gauges = std::move(t.gauges);
    out.invalid_values = t.invalid_values;
    return out;
  }

  std::unique_ptr<EngineKnobs> MakeKnobs(const http::Url&) const override {
    return vllm::MakeKnobs();
  }
  std::string UnsupportedKey(config::Key key) const override {
    return vllm::UnsupportedReason(key);
  }

  LaunchCommands launch_commands() const override {
    return {"vllm", "serve", "vllm.entrypoints.openai.api_server"};
  }
  // vLLM binds every interface by default, on 8000.
  std::pair<std::string_view, std::uint16_t> default_listen() const override {
    return {"0.0.0.0", 8000};
  }
  LaunchAdditions LaunchTelemetryFor(
      const LaunchTelemetry& t,
      const std::function<bool(std::string_view)>& has_flag) const override {
    LaunchAdditions out;
    // Tracing is on only with an endpoint; the gRPC exporter takes a URL, the HTTP one the
    // full /v1/traces URL.
    if (!has_flag("--otlp-traces-endpoint"))
      out.flags.emplace_back("--otlp-traces-endpoint", t.http ? t.otlp_http_endpoint + "/v1/traces"
                                                              : "http://" + t.otlp_grpc_endpoint);
    // vLLM's span processor takes the OpenTelemetry SDK's 5 s batch delay by default.
    if (!t.export_delay_ms.empty())
      out.env.emplace_back(std::string(otel_env::kBspScheduleDelay), t.export_delay_ms);
    return out;
  }
};

}  // namespace

const EngineProfile& Profile() {
  static const VllmProfile profile;
  return profile;
}

}  // namespace infertel::engines::vllm
