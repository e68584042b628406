#include "engines/sglang/sglang_profile.h"

#include <fmt/format.h>
#include <cctype>

#include <algorithm>

#include "core/semconv.h"
#include "core/static_key.h"
#include "engines/sglang/control.h"
#include "engines/sglang/sglang_families.h"
#include "engines/sglang/sglang_keys.h"
#include "engines/sglang/sglang_knobs.h"
#include "engines/sglang/sglang_metrics.h"
#include "engines/sglang/sglang_spans.h"
#include "engines/sglang/tracker.h"

namespace infertel::engines::sglang {
namespace {

namespace sc = semconv;
using metrics::MetricId;

// SGLang streams one chunk per --stream-interval tokens (1 unless the server says more; a
// request's own stream_interval wins).
std::int64_t StreamedTokensOf(const openai::Exchange& ex, const EngineFacts& engine) {
  std::int64_t interval = engine.stream_interval.value_or(1);
  if (interval <= 0) interval = 1;
  if (ex.request.stream_interval && *ex.request.stream_interval > 0)
    interval = *ex.request.stream_interval;
  return ex.stream_deltas * interval;
}

// M4.1's SGLang-only attributes: request id (chat streaming), cached tokens, e2e latency in
// seconds, the streamed-token estimate, and the tool calls of a chat stream.
void AddEntryAttributes(const openai::Exchange& ex, const EngineFacts& engine,
                        google::protobuf::RepeatedPtrField<KeyValue>* a) {
  const auto& rq = ex.request;
  const auto& rs = ex.response;
  const bool chat_stream = ex.op == openai::Operation::kChat && rq.stream;
  if (chat_stream) {
    // SGLang names the request after the body's `rid` when the client set one, else the
    // response id is its rid.
    if (rq.request_id) {
      AddAttr(a, Key<sc::kGenAiRequestId>(), *rq.request_id);
    } else if (rs.id) {
      AddAttr(a, Key<sc::kGenAiRequestId>(), *rs.id);
    }
  }
  if (rs.usage.cached_tokens) {
    AddAttr(a, Key<sc::kGenAiUsageCacheReadInputTokens>(), *rs.usage.cached_tokens);
  }
  const std::uint64_t end = std::max(ex.end_mono_ns, ex.start.mono_start_ns);
  AddAttr(a, Key<sc::kGenAiLatencyE2e>(), static_cast<double>(end - ex.start.mono_start_ns) / 1e9);
  if (ex.streamed) {
    const std::int64_t streamed = StreamedTokensOf(ex, engine);
    AddAttr(a, Key<sc::kGenAiResponseTokensStreamed>(), streamed);
    if (!rs.usage.output_tokens) AddAttr(a, Key<sc::kGenAiUsageOutputTokens>(), streamed);
  }
  if (ex.op == openai::Operation::kChat && ex.streamed) {
    std::int64_t count = 0;
    for (const auto& calls : rs.tool_calls) count += static_cast<std::int64_t>(calls.size());
    AddAttr(a, Key<sc::kGenAiRequestHasToolCalls>(), rq.has_tools);
    AddAttr(a, Key<sc::kGenAiRequestToolCallDetected>(), count > 0);
    AddAttr(a, Key<sc::kGenAiRequestToolCallsCount>(), count);
    for (std::size_t i = 0; i < rs.tool_calls.size(); ++i) {
      for (std::size_t j = 0; j < rs.tool_calls[i].size(); ++j) {
        const openai::ToolCall& tc = rs.tool_calls[i][j];
        std::string key =
            fmt::format("{}{}{}{}", sc::kGenAiCompletionsPrefix, i, sc::kToolCallsInfix, j);
        if (!tc.name.empty()) AddAttr(a, key + std::string(sc::kToolCallNameSuffix), tc.name);
        // Arguments are content: the stream observer keeps them only with capture on, and
        // they stay off the span when the capture strategy sends content to events.
        if (!tc.arguments.empty() && ex.content_on_span) {
          AddAttr(a, key + std::string(sc::kToolCallArgumentsSuffix), tc.arguments);
        }
      }
    }
  }
}

// SGLang's native span trees (sglang_spans.h), filtered by level and PD-linked by a Tracker.
class SglangNativeSpans final : public NativeSpans {
 public:
  bool ClaimsScope(const Resource& resource,
                   const otlp_common::InstrumentationScope& scope) const override {
    return IsSglangScope(resource, scope);
  }
  // A receiver may relabel the scope; the request and thread spans stay telling.
  bool HasOwnSpan(const otlp_trace::ScopeSpans& scope) const override {
    for (const Span& s : scope.spans())
      if (IsUnmistakablySglang(s)) return true;
    return false;
  }
  std::size_t OnRequestStarted(const TraceId& trace, int level, std::string_view tenant) override {
    return tracker_.OnRequestStarted(trace, level, tenant);
  }
  void OnRequestFinished(const TraceId& trace) override { tracker_.OnRequestFinished(trace); }
  NativeResult Process(google::protobuf::RepeatedPtrField<Span>* spans, int level) override {
    const ProcessResult r = tracker_.Process(spans, level);
    return {r.dropped, r.pd_links};
  }
  Resource MergeResource(const Resource& agent, const Resource& engine) const override {
    return sglang::MergeResource(agent, engine);
  }

 private:
  Tracker tracker_;
};

class SglangProfile final : public EngineProfile {
 public:
  std::string_view name() const override { return "sglang"; }
  std::string_view display_name() const override { return "SGLang"; }

  std::span<const config::KeySpec> key_specs() const override { return KeySpecs(); }
  // SGLang has no trace-context switch of its own: vLLM's governs the agent's request lines.
  EngineSwitches switches() const override {
    const Keys& k = keys();
    return {k.enabled, k.metrics_enabled, k.tracing_level, k.log_requests, k.log_trace_context};
  }

  // M4.1 has neither the user nor the session id, and the response model of a non-streamed
  // response only.
  EntrySpanShape entry_span_shape() const override { return {false, false}; }
  void AddEntryAttributes(const openai::Exchange& ex, const EngineFacts& facts,
                          google::protobuf::RepeatedPtrField<KeyValue>* a) const override {
    sglang::AddEntryAttributes(ex, facts, a);
  }
  std::int64_t StreamedTokens(const openai::Exchange& ex, const EngineFacts& facts) const override {
    return StreamedTokensOf(ex, facts);
  }

  // --stream-interval (for gen_ai.response.tokens_streamed) from /server_info: followed, since
  // a restarted engine can have another.
  std::optional<FactsProbe> facts_probe() const override {
    return FactsProbe{"sglang-probe", "--stream-interval (GET /server_info; taken as 1 until read)",
                      false};
  }
  std::optional<EngineFacts> ReadFacts(const http::Url& base, std::string* error) const override {
    auto info = FetchServerInfo(base, error);
    if (!info) return std::nullopt;
    EngineFacts facts;
    if (info->stream_interval && *info->stream_interval > 0)
      facts.stream_interval = *info->stream_interval;
    return facts;
  }

  // SGLang continues the trace the gateway propagates; its spans carry no request id.
  SpanJoin span_join() const override { return SpanJoin::kTraceId; }
  std::unique_ptr<NativeSpans> MakeNativeSpans() const override {
    return std::make_unique<SglangNativeSpans>();
  }

  metrics::MetricLabels RequestLabels(std::string_view,
                                      std::optional<std::int64_t>) const override {
    using namespace metrics;
    return {{std::string(kDimCallKind), std::string(kCallKindCustomEntry)},
            {std::string(kDimCallType), std::string(kCallTypeGenAi)},
            {std::string(kDimRpcType), std::string(kRpcTypeLlm)}};
  }
  std::span<const metrics::MetricFamily> metric_family_rows() const override {
    return MetricFamilyRows();
  }
  void MeasureRequest(const RequestFigures& f, RequestMeasures* out) const override {
    out->emplace_back(Id(SglangMetric::kNumRequestsTotal), 1);
    if (f.input_tokens)
      out->emplace_back(Id(SglangMetric::kPromptTokensTotal), double(*f.input_tokens));
    if (f.output_tokens)
      out->emplace_back(Id(SglangMetric::kGenerationTokensTotal), double(*f.output_tokens));
    if (f.cached_tokens)
      out->emplace_back(Id(SglangMetric::kCachedTokensTotal), double(*f.cached_tokens));
    if (f.ttft_s) out->emplace_back(Id(SglangMetric::kTimeToFirstToken), *f.ttft_s);
    // The true gaps between streamed tokens add up to last − first delta.
    if (f.ttft_s && f.stream_deltas > 1 && f.decode_s)
      out->emplace_back(Id(SglangMetric::kInterTokenLatency), *f.decode_s);
    if (!f.ok) return;
    out->emplace_back(MetricId::kRequestDuration, f.e2e_s);
    // M5: time per output token is the request average e2e / output tokens.
    if (f.output_tokens && *f.output_tokens > 0)
      out->emplace_back(MetricId::kTimePerOutputToken,
                        f.e2e_s / static_cast<double>(*f.output_tokens));
  }

  ScrapeMode scrape_mode() const override { return ScrapeMode::kSnapshot; }
  // The spec's families add up every scrape's state (M5): divided by the scrapes counted.
  StateFamilies state_families() const override {
    return {.kv_cache_usage = {Id(SglangMetric::kTokenUsage)},
            .running = {Id(SglangMetric::kNumRunningReqs)},
            .waiting = {Id(SglangMetric::kNumQueueReqs)},
            .scrapes = Id(SglangMetric::kLogCount)};
  }
  bool ReadsFamily(std::string_view family) const override { return sglang::ReadsFamily(family); }
  bool ReadsSample(std::string_view sample) const override { return sglang::ReadsSample(sample); }
  // One stats period per scrape: its state values, and one more log count.
  ScrapedMetrics TranslateScrape(const scrape::ParseResult& scrape,
                                 std::string_view) const override {
    ScrapedMetrics out;
    out.snapshot = TranslateSnapshot(scrape, &out.invalid_values);
    if (!out.snapshot.empty())
      out.snapshot.push_back({Id(SglangMetric::kLogCount), out.snapshot.front().labels, 1});
    return out;
  }

  std::unique_ptr<EngineKnobs> MakeKnobs(const http::Url& base) const override {
    return sglang::MakeKnobs(base);
  }

  LaunchCommands launch_commands() const override {
    return {"sglang", "serve", "sglang.launch_server"};
  }
  std::pair<std::string_view, std::uint16_t> default_listen() const override {
    return {"127.0.0.1", 30000};
  }
  // The console's log switches that the user set, as SGLang's server flags (SGLang's own
  // defaults are request logging off and level 2, which an unset switch leaves alone).
  template <typename Add>
  static void AddLogFlags(const config::Settings& s, const Add& add) {
    const Keys& k = keys();
    if (s.IsSet(k.log_requests) && s.GetBool(k.log_requests)) add("--log-requests", std::nullopt);
    if (s.IsSet(k.log_requests_level))
      add("--log-requests-level", std::to_string(s.GetInt(k.log_requests_level)));
    if (s.IsSet(k.logging_level)) {
      std::string level(s.GetString(k.logging_level));
      for (char& c : level) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      add("--log-level", level);
    }
  }

  LaunchAdditions LaunchTelemetryFor(
      const LaunchTelemetry& t,
      const std::function<bool(std::string_view)>& has_flag) const override {
    LaunchAdditions out;
    auto add = [&](std::string_view flag, std::optional<std::string> value = std::nullopt) {
      if (!has_flag(flag)) out.flags.emplace_back(std::string(flag), std::move(value));
    };
    add("--enable-trace");
    // The gRPC endpoint is HOST:PORT; early releases spelled the flag --oltp-….
    if (!has_flag("--oltp-traces-endpoint"))
      add("--otlp-traces-endpoint",
          t.http ? t.otlp_http_endpoint + "/v1/traces" : t.otlp_grpc_endpoint);
    add("--enable-metrics");
    add("--enable-cache-report");
    // SGLang passes its own 500 ms to its span processor: no batch delay to set.
    if (t.tracing_level)
      out.env.emplace_back("SGLANG_TRACE_LEVEL", std::to_string(*t.tracing_level));
    if (t.settings != nullptr) AddLogFlags(*t.settings, add);
    return out;
  }
};

}  // namespace

const EngineProfile& Profile() {
  static const SglangProfile profile;
  return profile;
}

}  // namespace infertel::engines::sglang
