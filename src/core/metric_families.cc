#include "core/metric_families.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>

#include "core/semconv.h"

namespace infertel::metrics {
namespace {

using K = MetricKind;

// The gateway's model label may be `other` (docs/limits.md, "Metric labels chosen by outside
// input").
constexpr std::string_view kApiDims =
    "callType, callKind, rpcType, modelName (or `other`), spanKind, usageType";

// The families of the agent as a whole, in the order of enum MetricId. The dimensions and
// sources that differ by engine come from the engines' lists (AgentFamily rows).
// clang-format off
constexpr std::array<MetricFamily, kAgentMetricCount> kAgentFamilies{{
  {MetricId::kUsageTokens, "genai_llm_usage_tokens", K::kCounter, "tokens", "", "", "M3.1, M5",
   kApiDims, "Input and output tokens of API requests, by usageType",
   "gateway measurement: the response's usage (or, for a stream without usage, the streamed tokens, "
   "as the entry span counts them: the deltas times the engine's stream interval)",
   MergeRule::kSum, semconv::kMetricClientTokenUsage},
  {MetricId::kTimePerOutputToken, "gen_ai_server_time_per_output_token", K::kCounter, "s", "", "",
   "M3.1, M5", "", "Cumulative time per output token",
   "gateway measurement: ", MergeRule::kSum, semconv::kMetricServerTimePerOutputToken},
  {MetricId::kRequestDuration, "gen_ai_server_request_duration", K::kCounter, "s", "", "",
   "M3.1, M5", "", "Cumulative end-to-end request duration",
   "gateway measurement: request received to response complete", MergeRule::kSum,
   semconv::kMetricServerRequestDuration},
}};
// clang-format on

constexpr bool AgentFamiliesInOrder() {
  for (std::size_t i = 0; i < kAgentFamilies.size(); ++i)
    if (IndexOf(kAgentFamilies[i].id) != i) return false;
  return true;
}
static_assert(AgentFamiliesInOrder(), "kAgentFamilies must list MetricId in enum order");

std::string_view KindName(MetricKind k) { return k == MetricKind::kCounter ? "Counter" : "Gauge"; }

[[noreturn]] void Fail(const char* what, std::string_view detail = {}) {
  std::fprintf(stderr, "infertel: metric families: %s%.*s\n", what, static_cast<int>(detail.size()),
               detail.data());
  std::abort();
}

// Written only while open (under `mu`); read only once closed, without a lock.
struct Table {
  std::mutex mu;
  std::atomic<bool> closed{false};
  std::vector<MetricFamily> by_id;    // index: the id
  std::vector<MetricId> placed;       // listing order of what the engines listed
  std::vector<MetricFamily> listing;  // made by CloseMetricFamilies
  std::vector<std::size_t> rank;      // index: the id; position in `listing`
  std::deque<std::string> texts;      // the joined texts of agent families
  std::array<std::string, kAgentMetricCount> dims_added, source_added;

  Table() { by_id.assign(kAgentFamilies.begin(), kAgentFamilies.end()); }
};

Table& Instance() {
  static Table t;
  return t;
}

const Table& Closed() {
  const Table& t = Instance();
  if (!t.closed.load(std::memory_order_acquire))
    Fail("read before the engines registered their families (call engines::RegisterEngines())");
  return t;
}

// `*text` followed by `more`, "; " between the texts of two engines.
void Join(std::string* text, std::string_view more) {
  if (more.empty()) return;
  if (!text->empty()) *text += "; ";
  *text += more;
}

void AddAgentRow(Table* t, const MetricFamily& row) {
  if (IndexOf(row.id) >= kAgentMetricCount) Fail("an agent family row names no agent family");
  Join(&t->dims_added[IndexOf(row.id)], row.dimensions);
  Join(&t->source_added[IndexOf(row.id)], row.source);
  if (std::find(t->placed.begin(), t->placed.end(), row.id) == t->placed.end())
    t->placed.push_back(row.id);
}

}  // namespace

void AddMetricFamilies(std::span<const MetricFamily> rows) {
  Table& t = Instance();
  std::lock_guard lock(t.mu);
  if (t.closed.load(std::memory_order_relaxed)) Fail("families added once the table is closed");
  for (const MetricFamily& row : rows) {
    if (IsAgentFamilyRow(row)) {
      AddAgentRow(&t, row);
      continue;
    }
    if (t.by_id.size() >= kMaxMetrics) Fail("more families than kMaxMetrics");
    for (const MetricFamily& have : t.by_id)
      if (have.name == row.name) Fail("family added twice: ", row.name);
    t.by_id.push_back(row);
    t.by_id.back().id = static_cast<MetricId>(t.by_id.size() - 1);
    t.placed.push_back(t.by_id.back().id);
  }
}

void CloseMetricFamilies() {
  Table& t = Instance();
  std::lock_guard lock(t.mu);
  if (t.closed.load(std::memory_order_relaxed)) return;
  for (std::size_t i = 0; i < kAgentMetricCount; ++i) {
    MetricFamily& f = t.by_id[i];
    f.dimensions = t.texts.emplace_back(std::string(f.dimensions) + t.dims_added[i]);
    f.source = t.texts.emplace_back(std::string(f.source) + t.source_added[i]);
  }
  // The agent's families no engine placed come first, then the engines' lists.
  std::vector<MetricId> order;
  for (std::size_t i = 0; i < kAgentMetricCount; ++i) {
    const auto id = static_cast<MetricId>(i);
    if (std::find(t.placed.begin(), t.placed.end(), id) == t.placed.end()) order.push_back(id);
  }
  order.insert(order.end(), t.placed.begin(), t.placed.end());
  t.rank.assign(t.by_id.size(), 0);
  for (MetricId id : order) {
    t.rank[IndexOf(id)] = t.listing.size();
    t.listing.push_back(t.by_id[IndexOf(id)]);
  }
  t.closed.store(true, std::memory_order_release);
}

std::span<const MetricFamily> AllMetricFamilies() { return Closed().listing; }
std::size_t MetricFamilyCount() { return Closed().by_id.size(); }

const MetricFamily& Family(MetricId id) {
  const Table& t = Closed();
  if (IndexOf(id) >= t.by_id.size()) Fail("no such family");
  return t.by_id[IndexOf(id)];
}

std::size_t ListingRank(MetricId id) {
  const Table& t = Closed();
  if (IndexOf(id) >= t.rank.size()) Fail("no such family");
  return t.rank[IndexOf(id)];
}

std::optional<MetricId> FindMetric(std::string_view name) {
  for (const auto& f : Closed().by_id)
    if (f.name == name) return f.id;
  return std::nullopt;
}

std::string PrometheusName(const MetricFamily& family) {
  std::string name(family.name);
  if (family.kind == MetricKind::kCounter &&
      !(name.size() >= 6 && name.compare(name.size() - 6, 6, "_total") == 0))
    name += "_total";
  return name;
}

void SortLabels(MetricLabels* labels) {
  std::stable_sort(labels->begin(), labels->end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
}

std::string MetricsMarkdownTable() {
  std::string out =
      "| metric | type | unit | spec | dimensions | source |\n"
      "| --- | --- | --- | --- | --- | --- |\n";
  for (const auto& f : AllMetricFamilies()) {
    out += "| `";
    out += f.name;
    out += "` | ";
    out += KindName(f.kind);
    out += " | ";
    out += f.unit;
    out += " | ";
    out += f.section;
    out += " | ";
    out += f.dimensions;
    out += " | ";
    out += f.source;
    out += " |\n";
  }
  return out;
}

}  // namespace infertel::metrics
