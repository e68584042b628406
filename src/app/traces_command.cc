// `infertel traces`: recent traces from the embedded store, as indented trees.

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "app/commands.h"
#include "core/ids.h"
#include "core/printable.h"
#include "export/sqlite/data_dir.h"
#include "export/sqlite/sqlite_store.h"

namespace infertel {
namespace {

struct TracesFlags {
  std::string store;     // default: infertel.db in the data directory
  std::string data_dir;  // --data-dir
  std::size_t limit = 10;
  std::string trace;
  std::string service;
};

[[noreturn]] void Fail(int code, const std::string& message) {
  std::fprintf(stderr, "infertel traces: %s\n", Printable(message).c_str());
  throw CLI::RuntimeError(code);
}

void Run(const TracesFlags& f) {
  std::string where, error;
  const auto path = exporting::StoreToRead(f.store, f.data_dir, &where, &error);
  if (!path) Fail(1, error);
  if (!std::filesystem::exists(*path))
    Fail(1, fmt::format("no store at {} ({}; give --store FILE or --data-dir DIR)", *path, where));
  exporting::TraceQuery q;
  q.limit = f.limit;
  q.service = f.service;
  if (!f.trace.empty()) {
    auto id = TraceIdFromHex(f.trace);
    if (!id) Fail(2, "--trace: expected 32 hex characters, got '" + f.trace + "'");
    q.trace_id = ToHex(*id);  // lowercase, as stored
  }
  exporting::SqliteStore store;
  if (!store.Open(*path, &error)) Fail(1, error);
  const std::string out = exporting::RenderTraceTrees(store, q);
  if (out.empty()) {
    std::printf("no traces in %s%s\n", path->c_str(),
                f.trace.empty() && f.service.empty() ? "" : " matching the filter");
    return;
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
}

}  // namespace

void AddTracesCommand(CLI::App& app) {
  auto flags = std::make_shared<TracesFlags>();
  CLI::App* sub =
      app.add_subcommand("traces", "Print recent traces from the embedded store as trees");
  sub->add_option("--store", flags->store,
                  "Embedded store (SQLite) path (default: infertel.db in the data directory)");
  sub->add_option("--data-dir", flags->data_dir,
                  "The agent's data directory (default: as the agent chooses it, docs/store.md)");
  sub->add_option("--limit", flags->limit, "How many traces, newest first")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub->add_option("--trace", flags->trace, "Only this trace (32 hex characters)");
  sub->add_option("--service", flags->service, "Only traces with a span of this service.name");
  sub->callback([flags] { Run(*flags); });
}

}  // namespace infertel
