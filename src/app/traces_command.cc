// `infertel traces`: recent traces from the embedded store, as indented trees; `infertel spans`:
// its spans as JSON.

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "analytics/explain.h"
#include "app/commands.h"
#include "app/stored_trace.h"
#include "core/ids.h"
#include "core/printable.h"
#include "export/sqlite/data_dir.h"
#include "export/sqlite/sqlite_store.h"

namespace infertel {
namespace {

struct TracesFlags {
  std::string store;     // default: store in the data directory
  std::string data_dir;  // --data-dir
  std::size_t limit = 10;
  std::string trace;
  std::string service;
  std::string explain;  // --explain TRACE_ID
};

[[noreturn]] void FailTraces(int code, const std::string& message) {
  std::fprintf(stderr, "infertel traces: %s\n", Printable(message).c_str());
  throw CLI::RuntimeError(code);
}

// When nothing is left, whether retention took it: spans older than --store-max-age (by
// arrival) or beyond --store-max-mb go without a word otherwise.
void PrintRemoved(exporting::SqliteStore& store) {
  const exporting::RetentionRecord r = store.Removed();
  if (r.spans_age + r.spans_size == 0) return;
  std::printf(
      "retention removed %llu spans from this store (%llu older than --store-max-age, %llu "
      "beyond --store-max-mb), the last at %s\n",
      static_cast<unsigned long long>(r.spans_age + r.spans_size),
      static_cast<unsigned long long>(r.spans_age), static_cast<unsigned long long>(r.spans_size),
      exporting::FormatWallTime(r.last_unix_nano).c_str());
}

// `infertel traces --explain TRACE_ID`: where one request's time went, and why.
void RunExplain(exporting::SqliteStore& store, const std::string& hex) {
  std::vector<analytics::TraceSpan> spans;
  for (const auto& s : store.TraceSpans(hex)) spans.push_back(ToTraceSpan(s));
  if (spans.empty()) FailTraces(1, "no spans of trace " + hex + " in the store");
  const std::string out = fmt::format("trace {}\n{}", hex,
                                      analytics::RenderExplanation(analytics::ExplainTrace(spans)));
  std::fwrite(out.data(), 1, out.size(), stdout);
}

void Run(const TracesFlags& f) {
  std::string where, error;
  const auto path = exporting::StoreToRead(f.store, f.data_dir, &where, &error);
  if (!path) FailTraces(1, error);
  if (!std::filesystem::exists(*path))
    FailTraces(
        1, fmt::format("no store at {} ({}; give --store DIR or --data-dir DIR)", *path, where));
  if (!f.explain.empty()) {
    auto id = TraceIdFromHex(f.explain);
    if (!id) FailTraces(2, "--explain: expected 32 hex characters, got '" + f.explain + "'");
    exporting::SqliteStore store;
    if (!store.Open(*path, &error)) FailTraces(1, error);
    RunExplain(store, ToHex(*id));
    return;
  }
  exporting::TraceQuery q;
  q.limit = f.limit;
  q.service = f.service;
  if (!f.trace.empty()) {
    auto id = TraceIdFromHex(f.trace);
    if (!id) FailTraces(2, "--trace: expected 32 hex characters, got '" + f.trace + "'");
    q.trace_id = ToHex(*id);  // lowercase, as stored
  }
  exporting::SqliteStore store;
  if (!store.Open(*path, &error)) FailTraces(1, error);
  const std::string out = exporting::RenderTraceTrees(store, q);
  if (out.empty()) {
    std::printf("no traces in %s%s\n", path->c_str(),
                f.trace.empty() && f.service.empty() ? "" : " matching the filter");
    PrintRemoved(store);
    return;
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
}

struct SpansFlags {
  std::string store;     // default: store in the data directory
  std::string data_dir;  // --data-dir
  std::string trace;
  std::string name;
  std::size_t limit = 0;
  bool logs = false;
  bool json = false;
};

// `infertel spans`: every stored span (or log record) matching, one JSON object per line, for
// scripts and tests (the fields of docs/store.md, "Reading the store").
void RunSpans(const SpansFlags& f) {
  if (!f.json) FailTraces(2, "spans: only --json output exists; pass --json");
  std::string where, error;
  const auto path = exporting::StoreToRead(f.store, f.data_dir, &where, &error);
  if (!path) FailTraces(1, error);
  if (!std::filesystem::exists(*path))
    FailTraces(
        1, fmt::format("no store at {} ({}; give --store DIR or --data-dir DIR)", *path, where));
  exporting::SpanFilter filter;
  filter.name = f.name;
  filter.limit = f.limit;
  if (!f.trace.empty()) {
    auto id = TraceIdFromHex(f.trace);
    if (!id) FailTraces(2, "--trace: expected 32 hex characters, got '" + f.trace + "'");
    filter.trace_id = ToHex(*id);
  }
  exporting::SqliteStore store;
  if (!store.Open(*path, &error)) FailTraces(1, error);
  std::string out;
  if (f.logs) {
    for (const auto& l : store.Logs(filter)) {
      if (!f.name.empty() && l.event_name != f.name) continue;
      exporting::AppendLogJson(&out, l);
      out.push_back('\n');
    }
  } else {
    for (const auto& sp : store.Spans(filter)) {
      exporting::AppendSpanJson(&out, sp);
      out.push_back('\n');
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
}

}  // namespace

void AddSpansCommand(CLI::App& app) {
  auto flags = std::make_shared<SpansFlags>();
  CLI::App* sub = app.add_subcommand(
      "spans", "Print stored spans (or log records) as JSON, one object per line");
  sub->add_option("--store", flags->store,
                  "Embedded store directory (default: store in the data directory)");
  sub->add_option("--data-dir", flags->data_dir,
                  "The agent's data directory (default: as the agent chooses it, docs/store.md)");
  sub->add_option("--trace", flags->trace, "Only this trace (32 hex characters)");
  sub->add_option("--name", flags->name, "Only spans of this name (log records: event.name)");
  sub->add_option("--limit", flags->limit, "At most this many (0: all)")->capture_default_str();
  sub->add_flag("--logs", flags->logs, "Log records instead of spans");
  sub->add_flag("--json", flags->json, "JSON output, one object per line (required)");
  sub->callback([flags] { RunSpans(*flags); });
}

void AddTracesCommand(CLI::App& app) {
  auto flags = std::make_shared<TracesFlags>();
  CLI::App* sub =
      app.add_subcommand("traces", "Print recent traces from the embedded store as trees");
  sub->add_option("--store", flags->store,
                  "Embedded store directory (default: store in the data directory)");
  sub->add_option("--data-dir", flags->data_dir,
                  "The agent's data directory (default: as the agent chooses it, docs/store.md)");
  sub->add_option("--limit", flags->limit, "How many traces, newest first")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub->add_option("--trace", flags->trace, "Only this trace (32 hex characters)");
  sub->add_option("--service", flags->service, "Only traces with a span of this service.name");
  sub->add_option("--explain", flags->explain,
                  "Where one request's time went and why: its latency parts and cause (32 hex "
                  "characters: its trace id)");
  sub->callback([flags] { Run(*flags); });
}

}  // namespace infertel
