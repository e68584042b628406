#pragma once
// The engine contract: everything the agent knows of one inference engine, behind one
// interface. Each engine implements it in its own folder (engines/vllm/, engines/sglang/) and
// registry.cc lists the implementations; the gateway, the metrics, the console, launch and
// the agent ask the registry (engines/registry.h) and name no engine themselves.
//
// A profile is immutable and shared by every thread: each function is const and thread-safe.
// What it describes, by section:
//   identity       how flags, files and logs name the engine
//   switches       its rows of the key table (spec C1–C4), and which of them govern it
//   OpenAI surface what its responses need from the gateway (token detail at a tracing level)
//   entry spans    how its entry span differs from the common one (spec M2.1 / M4.1)
//   facts          what the agent reads over HTTP beside the traffic (version, server info)
//   spans          how its own spans are recognised, joined with the gateway's exchanges and
//                  normalized (engine_spans.h)
//   metrics        its rows of the metric family table, its /metrics translated into the
//                  model's families, and the families the gateway measures for it
//   knobs          the switches the console can change on a running engine
//   launch         how `infertel launch` recognises its command and adds telemetry to it

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/keys.h"
#include "config/settings.h"
#include "core/metric_families.h"
#include "core/telemetry.h"
#include "engines/engine_spans.h"
#include "engines/knobs.h"
#include "http/url.h"
#include "openai/exchange.h"
#include "scrape/prometheus_text.h"

namespace infertel::engines {

// The keys that govern one engine. A key an engine does not have governs nothing: the engine
// is then always instrumented, its metrics always on, its tracing level 1, no request lines.
struct EngineSwitches {
  std::optional<config::Key> enabled;            // C1 plugin switch
  std::optional<config::Key> metrics_enabled;    // its metric families at all
  std::optional<config::Key> tracing_level;      // 0 off, 1 request, 2 detail, 3 everything
  std::optional<config::Key> log_requests;       // the agent's request lines for its exchanges
  std::optional<config::Key> log_trace_context;  // trace ids on those lines
};

// A switch's value in `s`; `otherwise` for an engine without that switch.
inline bool SwitchOn(const config::Settings& s, std::optional<config::Key> key,
                     bool otherwise = true) {
  return key ? s.GetBool(*key) : otherwise;
}
inline std::int64_t SwitchValue(const config::Settings& s, std::optional<config::Key> key,
                                std::int64_t otherwise) {
  return key ? s.GetInt(*key) : otherwise;
}

// Where an engine's entry span leaves out attributes the common one has.
struct EntrySpanShape {
  bool user_and_session = true;              // gen_ai.user.id, session.id
  bool response_model_when_streamed = true;  // gen_ai.response.model of a streamed response
};

// What the agent reads about an engine over HTTP rather than from its traffic. Unset fields
// are not known (yet).
struct EngineFacts {
  std::optional<std::int64_t> stream_interval;  // tokens per streamed chunk
  std::string span_generation;                  // generation of its spans ("v0", "v1")
};

// A fact the agent follows with a probe of its own (app/engine_probe.h).
struct FactsProbe {
  std::string_view thread_name;  // e.g. "vllm-probe"
  std::string_view what;         // the fact, for the warning while the engine does not answer
  // The probe follows nothing but the generation of the engine's spans: an upstream whose
  // generation is configured needs none.
  bool generation_only = false;
};

// How the engine's own spans find the exchange that caused them.
enum class SpanJoin : std::uint8_t {
  kRequestId,  // by the X-Request-Id the gateway sent (a join record per exchange)
  kTraceId,    // by the trace id the gateway propagated (the engine continues the trace)
};

// How the engine's scraped families enter the metric store.
enum class ScrapeMode : std::uint8_t {
  kCumulative,  // counters as cumulative totals (resets carried over) and gauges
  kSnapshot,    // each scrape's values added once to the model's snapshot counters
};

// One scrape translated into the model's families.
struct ScrapedMetrics {
  std::vector<metrics::MetricPoint> counters;  // kCumulative: totals as the engine reports them
  std::vector<metrics::MetricPoint> gauges;    // kCumulative: current values
  std::vector<metrics::MetricPoint> snapshot;  // kSnapshot: added once each
  // Samples left out for their value (NaN, ±Inf, a negative counter).
  std::size_t invalid_values = 0;
};

// What the gateway measured of one finished completion, for the engine-scope families.
struct RequestFigures {
  std::optional<std::int64_t> input_tokens;
  std::optional<std::int64_t> output_tokens;  // the usage, else what was streamed
  std::optional<std::int64_t> cached_tokens;
  bool ok = false;                 // completed (not cut short)
  double e2e_s = 0;                // start to end
  std::optional<double> ttft_s;    // start to first token, when one came
  std::optional<double> decode_s;  // first to last token, when both came and differ
  std::int64_t stream_deltas = 0;  // streamed content deltas
};
// The engine-scope series of one request, in place: measured on every exchange, so no heap.
// A profile adds a handful; past kMax the rest are not kept.
class RequestMeasures {
 public:
  static constexpr std::size_t kMax = 16;
  using Item = std::pair<metrics::MetricId, double>;
  void emplace_back(metrics::MetricId id, double value) {
    if (size_ < kMax) items_[size_++] = {id, value};
  }
  const Item* begin() const { return items_.data(); }
  const Item* end() const { return items_.data() + size_; }
  std::size_t size() const { return size_; }

 private:
  std::array<Item, kMax> items_{};
  std::size_t size_ = 0;
};

// The commands that start the engine, as `infertel launch` recognises them: `PROGRAM
// SUBCOMMAND …` (any path to the program) and `python[3[.x]] -m PYTHON_MODULE …`.
struct LaunchCommands {
  std::string_view program;
  std::string_view subcommand;
  std::string_view python_module;
};

// What `infertel launch` tells the engine about the agent.
struct LaunchTelemetry {
  std::string otlp_grpc_endpoint;    // HOST:PORT of the agent's gRPC receiver
  std::string otlp_http_endpoint;    // http://HOST:PORT of its HTTP receiver
  bool http = false;                 // the user chose OTLP/HTTP for the engine's traces
  std::optional<int> tracing_level;  // the engine's tracing level switch, if it has one
  // The batch delay of the engine's span processor, for engines that read it from the
  // environment (OTEL_BSP_SCHEDULE_DELAY); empty: add nothing.
  std::string export_delay_ms;
  // The switches as the agent resolved them (null: none): the engine maps those of its log
  // switches that the user set (an unset one is the engine's own choice) to its own flags.
  const config::Settings* settings = nullptr;
};

// Flags and variables launch adds to an engine's command.
struct LaunchAdditions {
  std::vector<std::pair<std::string, std::optional<std::string>>> flags;  // flag, value
  std::vector<std::pair<std::string, std::string>> env;  // kept when the user set it
};

class EngineProfile {
 public:
  virtual ~EngineProfile() = default;

  // ---- Identity.
  virtual std::string_view name() const = 0;          // as flags and files spell it
  virtual std::string_view display_name() const = 0;  // as people write it

  // ---- Switches.
  // The engine's own rows of the key table (config/keys.h), which the registry adds at
  // start-up; empty for an engine without keys of its own.
  virtual std::span<const config::KeySpec> key_specs() const { return {}; }
  virtual EngineSwitches switches() const = 0;

  // ---- OpenAI surface. Whether requests at this tracing level want each streamed token's
  // detail: the gateway then asks for logprobs a client did not ask for, and strips them.
  virtual bool TokenDetailAt(int tracing_level) const { return false; }

  // ---- Entry spans.
  virtual EntrySpanShape entry_span_shape() const { return {}; }
  // Adds the engine's own attributes to an exchange's entry span.
  virtual void AddEntryAttributes(const openai::Exchange& ex, const EngineFacts& facts,
                                  google::protobuf::RepeatedPtrField<KeyValue>* a) const {}

  // The output tokens a stream carried, for a stream without usage: the entry span's and the
  // metrics' one source (an engine may stream several tokens per delta).
  virtual std::int64_t StreamedTokens(const openai::Exchange& ex, const EngineFacts& facts) const {
    return ex.stream_deltas;
  }

  // ---- Facts. nullopt: the engine has nothing to follow.
  virtual std::optional<FactsProbe> facts_probe() const { return std::nullopt; }
  // Blocking (a probe's thread): asks the engine at `base`.
  virtual std::optional<EngineFacts> ReadFacts(const http::Url& base, std::string* error) const {
    return EngineFacts{};
  }

  // ---- Spans (engine_spans.h).
  virtual SpanJoin span_join() const = 0;
  // kRequestId: how its request spans are recognised and normalized; nullptr: it sends none.
  virtual const RequestSpans* request_spans() const { return nullptr; }
  // kTraceId: a processor of its native spans, with state of its own (one per assembler);
  // nullptr: it sends none.
  virtual std::unique_ptr<NativeSpans> MakeNativeSpans() const { return nullptr; }

  // ---- Metrics.
  // The engine's rows of the metric family table (core/metric_families.h), which the registry
  // adds at start-up: its own families and the agent's that apply to it (AgentFamily).
  virtual std::span<const metrics::MetricFamily> metric_family_rows() const { return {}; }
  // The labels of the engine-scope series the gateway measures, sorted by key: of the
  // exchange's model label and the engine index that served it (when known).
  virtual metrics::MetricLabels RequestLabels(std::string_view model,
                                              std::optional<std::int64_t> engine_index) const = 0;
  // The engine-scope series of one finished completion.
  virtual void MeasureRequest(const RequestFigures& f, RequestMeasures* out) const = 0;
  // The series the engine's own request span adds for a completed response that was not
  // streamed (the gateway saw no token times): `f` has the engine's TTFT and decode time and
  // the usage's output tokens.
  virtual void MeasureEngineSpan(const RequestFigures& f, RequestMeasures* out) const {}
  virtual ScrapeMode scrape_mode() const = 0;
  // Which families and samples of its /metrics TranslateScrape reads; the parser keeps no other.
  virtual bool ReadsFamily(std::string_view family) const = 0;
  virtual bool ReadsSample(std::string_view sample) const = 0;
  // `generation` is the configured generation of the engine ("" = detect from the scrape).
  virtual ScrapedMetrics TranslateScrape(const scrape::ParseResult& scrape,
                                         std::string_view generation) const = 0;
  // Which of its families tell the engine's state, as the web UI's overview charts it; of
  // each list the first family with a series is read (a generation has one, the next another);
  // an empty list: the engine does not report it.
  struct StateFamilies {
    std::vector<metrics::MetricId> kv_cache_usage, running, waiting;
    std::vector<metrics::MetricId> preemptions;  // a counter
    // Set for an engine whose state families add up each scrape's values (ScrapeMode::
    // kSnapshot): the counter of scrapes, by which their increase is divided.
    std::optional<metrics::MetricId> scrapes;
  };
  virtual StateFamilies state_families() const { return {}; }

  // ---- Knobs: the switches of the console that live in the running engine at `base`.
  virtual std::unique_ptr<EngineKnobs> MakeKnobs(const http::Url& base) const = 0;
  // Why the engine cannot take `key` while it runs ("" when it can): what the console reports
  // for the key, without an engine to ask.
  virtual std::string UnsupportedKey(config::Key key) const { return {}; }

  // ---- Launch.
  virtual LaunchCommands launch_commands() const = 0;
  // Where the engine listens when its command says nothing.
  virtual std::pair<std::string_view, std::uint16_t> default_listen() const = 0;
  // Flags and variables that send the engine's telemetry to the agent; `has_flag` says
  // whether the user's command already has a flag (then it is not added).
  virtual LaunchAdditions LaunchTelemetryFor(
      const LaunchTelemetry& t,
      const std::function<bool(std::string_view flag)>& has_flag) const = 0;
};

}  // namespace infertel::engines
