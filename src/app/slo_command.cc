// `infertel slo`: SLO attainment per model and tenant, and the slowest requests with the
// objectives they missed and their latency cause, from the embedded store (analytics/
// slo_report.h renders; this reads).

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "analytics/slo_report.h"
#include "app/commands.h"
#include "app/slo_from_store.h"
#include "app/stored_trace.h"
#include "core/clock.h"
#include "core/printable.h"
#include "export/factory.h"
#include "export/sqlite/data_dir.h"
#include "export/sqlite/sqlite_store.h"

namespace infertel {
namespace {

struct SloFlags {
  std::string store;     // default: store in the data directory
  std::string data_dir;  // --data-dir
  std::string since = "1h";
  std::string model, tenant;
  std::size_t slowest = 10;
  std::size_t max_traces = 20000;
};

[[noreturn]] void FailSlo(int code, const std::string& message) {
  std::fprintf(stderr, "infertel slo: %s\n", Printable(message).c_str());
  throw CLI::RuntimeError(code);
}

void Run(const SloFlags& f) {
  auto since = exporting::ParseDuration(f.since);
  if (!since) FailSlo(2, "--since: expected a duration with its unit, such as 15m or 1h");
  std::string where, error;
  const auto path = exporting::StoreToRead(f.store, f.data_dir, &where, &error);
  if (!path) FailSlo(1, error);
  if (!std::filesystem::exists(*path))
    FailSlo(1,
            fmt::format("no store at {} ({}; give --store DIR or --data-dir DIR)", *path, where));
  exporting::SqliteStore store;
  if (!store.Open(*path, &error)) FailSlo(1, error);
  SloQuery q;
  q.since = *since;
  q.since_text = f.since;
  q.model = f.model;
  q.tenant = f.tenant;
  q.slowest = f.slowest;
  q.max_traces = f.max_traces;
  const std::string out = SloReportFromStore(store, q);
  std::fwrite(out.data(), 1, out.size(), stdout);
}

}  // namespace

std::string SloReportFromStore(exporting::SqliteStore& store, const SloQuery& q) {
  const auto now = static_cast<std::int64_t>(WallNanos());
  exporting::TraceFilter filter;
  filter.limit = q.max_traces;
  filter.start_from = now - std::chrono::duration_cast<std::chrono::nanoseconds>(q.since).count();
  filter.model = q.model;
  filter.tenant = q.tenant;
  const auto traces = store.Traces(filter);
  std::vector<analytics::RequestRecord> records;
  records.reserve(traces.size());
  for (const auto& t : traces) {
    std::vector<analytics::TraceSpan> spans;
    for (const auto& s : store.TraceSpans(t.trace_id)) spans.push_back(ToTraceSpan(s));
    if (auto r = analytics::RecordOfTrace(t.trace_id, spans)) records.push_back(std::move(*r));
  }
  analytics::ReportOptions o;
  o.slowest = q.slowest;
  o.now_unix_nano = now;
  o.scope_note =
      fmt::format("{} requests of the last {}{}", records.size(), q.since_text,
                  traces.size() >= q.max_traces ? ", the newest up to --max-traces" : "");
  return analytics::RenderSloReport(records, o);
}

void AddSloCommand(CLI::App& app) {
  auto flags = std::make_shared<SloFlags>();
  CLI::App* sub = app.add_subcommand(
      "slo",
      "Print SLO attainment per model and tenant and the slowest requests with their "
      "latency causes, from the embedded store");
  sub->add_option("--store", flags->store,
                  "Embedded store directory (default: store in the data directory)");
  sub->add_option("--data-dir", flags->data_dir,
                  "The agent's data directory (default: as the agent chooses it, docs/store.md)");
  sub->add_option("--since", flags->since, "Requests that started within this long before now")
      ->capture_default_str();
  sub->add_option("--model", flags->model, "Only requests for this model");
  sub->add_option("--tenant", flags->tenant, "Only requests of this tenant");
  sub->add_option("--slowest", flags->slowest, "How many of the slowest requests to list")
      ->capture_default_str();
  sub->add_option("--max-traces", flags->max_traces,
                  "Read at most this many traces, newest first (a bound on the time taken)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub->callback([flags] { Run(*flags); });
}

}  // namespace infertel
