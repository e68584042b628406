#include "export/sqlite/sqlite_store.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <ctime>
#include <map>
#include <set>

#include "core/printable.h"
#include "core/semconv.h"

namespace infertel::exporting {
namespace {

// Every text from the store is printed through Printable: span names, attribute values and
// service names come from clients and engines, and must not reach the terminal as controls.

// The attributes shown on a span line, rendered from the JSON column.
std::string KeyAttributes(const StoredSpan& s) {
  thread_local simdjson::dom::parser parser;
  std::string out;
  simdjson::dom::object attrs;
  if (parser.parse(s.attributes).get_object().get(attrs) != simdjson::SUCCESS) return out;
  auto show = [&](std::string_view key, std::string_view label) {
    simdjson::dom::element e;
    if (attrs.at_key(key).get(e) != simdjson::SUCCESS) return;
    std::string_view sv;
    std::int64_t i;
    double d;
    if (e.get_string().get(sv) == simdjson::SUCCESS)
      out += fmt::format("  {}={}", label, Printable(sv));
    else if (e.get_int64().get(i) == simdjson::SUCCESS)
      out += fmt::format("  {}={}", label, i);
    else if (e.get_double().get(d) == simdjson::SUCCESS)
      out += fmt::format("  {}={}", label, d);
  };
  show(semconv::kGenAiRequestModel, "model");
  show(semconv::kGenAiUsageInputTokens, "in");
  show(semconv::kGenAiUsageOutputTokens, "out");
  if (s.status_code == 2) {
    out += "  ERROR";
    simdjson::dom::element e;
    std::string_view sv;
    if (attrs.at_key(semconv::kErrorType).get(e) == simdjson::SUCCESS &&
        e.get_string().get(sv) == simdjson::SUCCESS)
      out += fmt::format(" {}={}", semconv::kErrorType, Printable(sv));
    else if (!s.status_message.empty())
      out += fmt::format(" {}", Printable(s.status_message));
  }
  return out;
}

}  // namespace

std::string FormatWallTime(std::int64_t unix_nano) {
  const std::time_t secs = static_cast<std::time_t>(unix_nano / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
  return fmt::format("{}.{:03d}Z", buf, static_cast<int>((unix_nano / 1'000'000) % 1000));
}

std::string RenderTraceTree(const std::vector<StoredSpan>& input) {
  if (input.empty()) return {};
  std::vector<const StoredSpan*> spans;
  for (const auto& s : input) spans.push_back(&s);
  std::stable_sort(spans.begin(), spans.end(), [](const StoredSpan* a, const StoredSpan* b) {
    return a->start_time_unix_nano < b->start_time_unix_nano;
  });
  std::set<std::string> ids;
  for (const auto* s : spans) ids.insert(s->span_id);
  std::map<std::string, std::vector<const StoredSpan*>> children;
  std::vector<const StoredSpan*> roots;
  for (const auto* s : spans) {
    // A span that names itself as parent would loop; treat it as a root as well.
    if (s->parent_span_id.empty() || !ids.count(s->parent_span_id) ||
        s->parent_span_id == s->span_id)
      roots.push_back(s);
    else
      children[s->parent_span_id].push_back(s);
  }
  std::int64_t start = spans.front()->start_time_unix_nano, end = start;
  for (const auto* s : spans) end = std::max(end, s->end_time_unix_nano);
  std::string service;
  for (const auto* s : spans)
    if (!s->service_name.empty()) {
      service = s->service_name;
      break;
    }
  std::string out =
      fmt::format("trace {}  {}  {} span{}  {:.3f} ms{}\n", Printable(spans.front()->trace_id),
                  FormatWallTime(start), spans.size(), spans.size() == 1 ? "" : "s",
                  static_cast<double>(end - start) / 1e6,
                  service.empty() ? "" : "  service=" + Printable(service));
  std::set<std::string> printed;  // guards against parent cycles
  auto print = [&](auto&& self, const StoredSpan* s, int depth) -> void {
    if (!printed.insert(s->span_id).second) return;
    const double ms = static_cast<double>(s->end_time_unix_nano - s->start_time_unix_nano) / 1e6;
    out += fmt::format("{:{}}{}  {:.3f} ms{}\n", "", 2 + depth * 2, Printable(s->name), ms,
                       KeyAttributes(*s));
    if (auto it = children.find(s->span_id); it != children.end())
      for (const auto* c : it->second) self(self, c, depth + 1);
  };
  for (const auto* r : roots) print(print, r, 0);
  // Spans caught in a parent cycle are unreachable from any root; print them as roots.
  for (const auto* s : spans)
    if (!printed.count(s->span_id)) print(print, s, 0);
  return out;
}

std::string RenderTraceTrees(SqliteStore& store, const TraceQuery& query) {
  std::vector<std::string> ids;
  if (!query.trace_id.empty())
    ids.push_back(query.trace_id);
  else
    ids = store.RecentTraceIds(query.limit, query.service);
  std::string out;
  for (const auto& id : ids) {
    std::string tree = RenderTraceTree(store.TraceSpans(id));
    if (tree.empty()) continue;
    if (!out.empty()) out.push_back('\n');
    out += tree;
  }
  return out;
}

std::string RenderTraceTrees(SqliteStore& store, std::size_t limit, std::string_view service) {
  TraceQuery q;
  q.limit = limit;
  q.service = std::string(service);
  return RenderTraceTrees(store, q);
}

}  // namespace infertel::exporting
