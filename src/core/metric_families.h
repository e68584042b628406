#pragma once
// Every metric family of the telemetry model (spec M3, M5): its exact name, type, unit,
// dimensions and where its value comes from, in one open table. The exposition, the OTLP
// encoder, the translators and docs/telemetry-reference.md all read this table.
//
// The table starts with the families of the agent as a whole (the enumerators of MetricId
// below: what the gateway measures for any engine); each engine declares its own families in
// its folder (engines/<name>/) and the engine registry appends them at start-up
// (engines::RegisterEngines), as it does the keys (config/keys.h). After that the table is
// closed and read-only: every lookup is lock-free and safe from any thread.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace infertel::metrics {

// A dense index into the table. The enumerators are the agent-wide families; an engine's
// families are the values AddMetricFamilies hands out after them.
enum class MetricId : std::uint8_t {
  // M3.1 / M5: measured at the gateway for any engine.
  kUsageTokens,
  kTimePerOutputToken,
  kRequestDuration,
  kNone = 0xff,  // no family (a point not yet assigned one)
};
inline constexpr std::size_t kAgentMetricCount = 3;
// The table's capacity: AddMetricFamilies refuses more.
inline constexpr std::size_t kMaxMetrics = 64;

inline constexpr std::size_t IndexOf(MetricId id) { return static_cast<std::size_t>(id); }

enum class MetricKind : std::uint8_t { kCounter, kGauge };

// How series of the same name and labels from several upstreams combine.
enum class MergeRule : std::uint8_t { kSum, kMean };

struct MetricFamily {
  MetricId id;            // set by AddMetricFamilies: what an engine declares here is not read
  std::string_view name;  // exact spec name; OTLP uses it as is
  MetricKind kind;
  std::string_view unit;  // as the spec writes it
  // Which engine a family belongs to, by its registry name (engines/registry.h), and which
  // generation of that engine ("v0", "v1"; empty: every one); both empty for the agent's.
  std::string_view engine;
  std::string_view generation;
  std::string_view section;     // spec section, e.g. "M3.3"
  std::string_view dimensions;  // for docs: the dimension keys
  std::string_view help;        // one line
  std::string_view source;      // for docs: engine metric read, or gateway measurement
  MergeRule merge = MergeRule::kSum;
  // The latest GenAI conventions' metric that measures the same (semconv.h), which takes its
  // place when OTEL_SEMCONV_STABILITY_OPT_IN asks for the latest names alone; empty: none.
  std::string_view replaced_by = {};
};

// A row of an engine's family list that declares no family but names one of the agent's
// (`id`) that applies to the engine: the family is listed where its first engine lists it,
// and the engine's `dimensions` and `source` texts are added to the family's own (see
// AddMetricFamilies).
constexpr MetricFamily AgentFamily(MetricId id, std::string_view dimensions,
                                   std::string_view source = {}) {
  MetricFamily f{};
  f.id = id;
  f.dimensions = dimensions;
  f.source = source;
  return f;
}
constexpr bool IsAgentFamilyRow(const MetricFamily& f) { return f.name.empty(); }

// ---- Registration, at start-up (engines/registry.cc).
// Appends the families of `rows` to the table; a row made by AgentFamily places and documents
// one of the agent's instead: each engine's texts of an agent family are joined with "; " and
// appended to the family's own. Aborts with a message once the table is closed, past
// kMaxMetrics, or for a name the table has already.
void AddMetricFamilies(std::span<const MetricFamily> rows);
// Closes the table: no family is added after. Idempotent.
void CloseMetricFamilies();

// ---- Lookups: each aborts with a message while the table is open (before registration).
// Every family, in listing order: the agent's that no engine places, then each engine's list.
std::span<const MetricFamily> AllMetricFamilies();
std::size_t MetricFamilyCount();
const MetricFamily& Family(MetricId id);
std::optional<MetricId> FindMetric(std::string_view name);
// The position of `id` in AllMetricFamilies(): expositions list families in this order.
std::size_t ListingRank(MetricId id);

// The name a Prometheus exposition uses: counters end in `_total` (added unless the spec name
// already ends so), as prometheus_client does and promtool requires.
std::string PrometheusName(const MetricFamily& family);

// ---- Dimension keys and fixed values (spec M3, M5).
inline constexpr std::string_view kDimCallType = "callType";
inline constexpr std::string_view kDimCallKind = "callKind";
inline constexpr std::string_view kDimRpcType = "rpcType";
inline constexpr std::string_view kDimEngineIndex = "engine_index";
inline constexpr std::string_view kDimModelName = "model_name";
inline constexpr std::string_view kDimFinishedReason = "finished_reason";
inline constexpr std::string_view kDimModelNameApi = "modelName";
inline constexpr std::string_view kDimSpanKind = "spanKind";
inline constexpr std::string_view kDimUsageType = "usageType";
inline constexpr std::string_view kCallTypeGenAi = "gen_ai";
inline constexpr std::string_view kCallKindCustomEntry = "custom_entry";
inline constexpr std::string_view kRpcTypeLlm = "2100";
inline constexpr std::string_view kUsageTypeInput = "input";
inline constexpr std::string_view kUsageTypeOutput = "output";

// One value of one series. Labels are sorted by key, so equal series compare equal.
using MetricLabels = std::vector<std::pair<std::string, std::string>>;
struct MetricPoint {
  MetricId id = MetricId::kNone;
  MetricLabels labels;
  double value = 0;
};
// Sorts labels by key (stable for equal keys) so points can be compared and merged.
void SortLabels(MetricLabels* labels);

// Renders the families as the Markdown table in docs/telemetry-reference.md (between
// `<!-- metrics:begin -->` and `<!-- metrics:end -->`).
std::string MetricsMarkdownTable();

}  // namespace infertel::metrics
