// `infertel metrics`: the latest value of every metric series in the embedded store, or the
// table of documented metric families (--families / --markdown).

#include <sqlite3.h>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "app/commands.h"
#include "core/metric_families.h"
#include "core/printable.h"
#include "export/sqlite/data_dir.h"
#include "export/sqlite/sqlite_store.h"

namespace infertel {
namespace {

struct MetricsFlags {
  std::string store;      // default: store in the data directory
  std::string data_dir;   // --data-dir
  std::string name;       // only names containing this
  bool markdown = false;  // print the documented families (docs/telemetry-reference.md)
};

[[noreturn]] void FailMetrics(int code, const std::string& message) {
  std::fprintf(stderr, "infertel metrics: %s\n", Printable(message).c_str());
  throw CLI::RuntimeError(code);
}

// A column as text fit for the terminal: names, labels and services come from scraped
// engines and OTLP senders (core/printable.h).
std::string Column(sqlite3_stmt* st, int i) {
  const unsigned char* t = sqlite3_column_text(st, i);
  if (t == nullptr) return "";
  return Printable(std::string_view(reinterpret_cast<const char*>(t),
                                    static_cast<std::size_t>(sqlite3_column_bytes(st, i))));
}

void Run(const MetricsFlags& f) {
  if (f.markdown) {
    std::fputs(metrics::MetricsMarkdownTable().c_str(), stdout);
    return;
  }
  std::string where, error;
  const auto path = exporting::StoreToRead(f.store, f.data_dir, &where, &error);
  if (!path) FailMetrics(1, error);
  if (!std::filesystem::exists(*path))
    FailMetrics(
        1, fmt::format("no store at {} ({}; give --store DIR or --data-dir DIR)", *path, where));
  exporting::SqliteStore check;  // refuses a store of the old format with what to do
  if (!check.Open(*path, &error)) FailMetrics(1, error);
  const std::string file = exporting::MetricsFilePath(*path);
  if (!std::filesystem::exists(file)) FailMetrics(1, "no metrics in " + *path);
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    std::string why = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    FailMetrics(1, *path + ": " + why);
  }
  std::unique_ptr<sqlite3, decltype(&sqlite3_close)> guard(db, &sqlite3_close);
  sqlite3_busy_timeout(db, 5000);
  sqlite3_stmt* st = nullptr;
  const char* sql =
      "SELECT name, type, unit, labels, value, count, time_unix_nano, service_name FROM metrics "
      "WHERE instr(name, ?1) > 0 ORDER BY service_name, name, labels";
  if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) != SQLITE_OK)
    FailMetrics(1, std::string("cannot read metrics: ") + sqlite3_errmsg(db));
  std::unique_ptr<sqlite3_stmt, decltype(&sqlite3_finalize)> stmt(st, &sqlite3_finalize);
  sqlite3_bind_text(st, 1, f.name.c_str(), -1, SQLITE_TRANSIENT);
  int rows = 0;
  std::string last_name;
  while (sqlite3_step(st) == SQLITE_ROW) {
    std::string name = Column(st, 0);
    if (name != last_name) {
      std::printf("%s (%s, %s) [%s]\n", name.c_str(), Column(st, 1).c_str(), Column(st, 2).c_str(),
                  Column(st, 7).c_str());
      last_name = name;
    }
    std::string value = sqlite3_column_type(st, 4) == SQLITE_NULL ? "-" : Column(st, 4);
    std::printf("  %s %s\n", Column(st, 3).c_str(), value.c_str());
    ++rows;
  }
  if (rows == 0)
    std::printf("no metrics in %s%s\n", path->c_str(), f.name.empty() ? "" : " matching --name");
}

}  // namespace

void AddMetricsCommand(CLI::App& app) {
  auto flags = std::make_shared<MetricsFlags>();
  CLI::App* sub = app.add_subcommand(
      "metrics", "Print the latest value of every metric series in the embedded store");
  sub->add_option("--store", flags->store,
                  "Embedded store directory (default: store in the data directory)");
  sub->add_option("--data-dir", flags->data_dir,
                  "The agent's data directory (default: as the agent chooses it, docs/store.md)");
  sub->add_option("--name", flags->name, "Only metrics whose name contains this");
  sub->add_flag("--markdown", flags->markdown,
                "Print the documented metric families as a Markdown table instead");
  sub->callback([flags] { Run(*flags); });
}

}  // namespace infertel
