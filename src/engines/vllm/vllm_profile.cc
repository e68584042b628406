#include "engines/vllm/vllm_profile.h"

#include "core/otel_env.h"
#include "engines/vllm/version.h"
#include "engines/vllm/vllm_families.h"
#include "engines/vllm/vllm_keys.h"
#include "engines/vllm/vllm_knobs.h"
#include "engines/vllm/vllm_metrics.h"
#include "engines/vllm/vllm_spans.h"

namespace infertel::engines::vllm {
namespace {

using metrics::MetricId;

// vLLM's `llm_request` spans (vllm_spans.h), joined by the X-Request-Id the gateway sent.
class VllmRequestSpans final : public RequestSpans {
 public:
  bool OwnsScope(std::string_view scope_name) const override { return IsVllmScopeName(scope_name); }
  const AnyValue* RequestSpanId(const Span& span) const override {
    return vllm::RequestSpanId(span);
  }
  JoinKeyList JoinKeys(const AnyValue& request_id) const override {
    return vllm::JoinKeys(request_id);
  }
  SpanReport Normalize(Span* span, std::string_view scope_name, const SpanContext& ctx,
                       google::protobuf::Arena* arena, std::vector<Span*>* phases) const override {
    NormalizeContext c;
    c.record = ctx.record;
    c.shape = ctx.generation == "v0"   ? SpanShape::kV0
              : ctx.generation == "v1" ? SpanShape::kV1
                                       : SpanShape::kAuto;
    c.level = ctx.level;
    c.pd_role = ctx.pd_role;
    c.engine_index = ctx.engine_index;
    c.model = ctx.model;
    c.max_events = ctx.max_events;
    return vllm::Normalize(span, scope_name, c, arena, phases);
  }
};

class VllmProfile final : public EngineProfile {
 public:
  std::string_view name() const override { return "vllm"; }
  std::string_view display_name() const override { return "vLLM"; }

  std::span<const config::KeySpec> key_specs() const override { return KeySpecs(); }
  EngineSwitches switches() const override {
    const Keys& k = keys();
    return {k.enabled, k.metrics_enabled, k.tracing_level, k.log_requests, k.log_trace_context};
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
  const RequestSpans* request_spans() const override { return &spans_; }

  // vLLM labels its own request families with the engine (EngineCore) index: so do the ones
  // the gateway measures for it, when the exchange says which engine served it.
  metrics::MetricLabels RequestLabels(std::string_view model,
                                      std::optional<std::int64_t> engine_index) const override {
    using namespace metrics;
    MetricLabels out{{std::string(kDimCallType), std::string(kCallTypeGenAi)}};
    if (engine_index) out.emplace_back(std::string(kDimEngineIndex), std::to_string(*engine_index));
    out.emplace_back(std::string(kDimModelName), std::string(model));
    out.emplace_back(std::string(kDimRpcType), std::string(kRpcTypeLlm));
    return out;
  }
  std::span<const metrics::MetricFamily> metric_family_rows() const override {
    return MetricFamilyRows();
  }
  void MeasureRequest(const RequestFigures& f, RequestMeasures* out) const override {
    if (f.ttft_s) out->emplace_back(Id(VllmMetric::kFirstTokenSeconds), *f.ttft_s);
    if (!f.ok) return;
    out->emplace_back(MetricId::kRequestDuration, f.e2e_s);
    // vLLM's per-request TPOT: decode time over the tokens after the first.
    if (f.decode_s && f.output_tokens && *f.output_tokens > 1)
      out->emplace_back(MetricId::kTimePerOutputToken,
                        *f.decode_s / static_cast<double>(*f.output_tokens - 1));
  }

  // vLLM measures TTFT and TPOT for every request, streamed or not: so does the agent, from
  // the request span when the gateway saw no tokens.
  void MeasureEngineSpan(const RequestFigures& f, RequestMeasures* out) const override {
    if (f.ttft_s) out->emplace_back(Id(VllmMetric::kFirstTokenSeconds), *f.ttft_s);
    if (f.decode_s && f.output_tokens && *f.output_tokens > 1)
      out->emplace_back(MetricId::kTimePerOutputToken,
                        *f.decode_s / static_cast<double>(*f.output_tokens - 1));
  }

  ScrapeMode scrape_mode() const override { return ScrapeMode::kCumulative; }
  // V1's families first, then V0's.
  StateFamilies state_families() const override {
    return {
        .kv_cache_usage = {Id(VllmMetric::kKvCacheUsagePerc), Id(VllmMetric::kGpuCacheUsageSys)},
        .running = {Id(VllmMetric::kNumRequestsRunning), Id(VllmMetric::kNumRunningSys)},
        .waiting = {Id(VllmMetric::kNumRequestsWaiting), Id(VllmMetric::kNumWaitingSys)},
        .preemptions = {Id(VllmMetric::kNumPreemptions), Id(VllmMetric::kNumPreemptionIter)}};
  }
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
    // Cached prompt tokens in the usage (infertel.cache.hit_ratio, the latency causes).
    if (!has_flag("--enable-prompt-tokens-details"))
      out.flags.emplace_back("--enable-prompt-tokens-details", std::nullopt);
    // vLLM's span processor takes the OpenTelemetry SDK's 5 s batch delay by default.
    if (!t.export_delay_ms.empty())
      out.env.emplace_back(std::string(otel_env::kBspScheduleDelay), t.export_delay_ms);
    // The log level, when the user set it: vLLM reads it from the environment at start. Its
    // request logging is not mapped: the flag is --enable-log-requests from 0.10.2 (off by
    // default) and --disable-log-requests before (on by default), and a flag the engine does
    // not know stops it from starting.
    if (t.settings != nullptr && t.settings->IsSet(keys().logging_level))
      out.env.emplace_back("VLLM_LOGGING_LEVEL",
                           std::string(t.settings->GetString(keys().logging_level)));
    return out;
  }

 private:
  VllmRequestSpans spans_;
};

}  // namespace

const EngineProfile& Profile() {
  static const VllmProfile profile;
  return profile;
}

}  // namespace infertel::engines::vllm
