#pragma once
// The SLO report over a store (`infertel slo`, and the demo's summary): the requests of a
// recent window read from the store's traces, rendered by analytics/slo_report.h.

#include <chrono>
#include <cstddef>
#include <string>

#include "export/sqlite/sqlite_store.h"

namespace infertel {

struct SloQuery {
  std::chrono::milliseconds since{std::chrono::hours(1)};  // requests started this long ago
  std::string since_text = "1h";                           // as the user wrote it
  std::string model, tenant;                               // empty: any
  std::size_t slowest = 10;                                // requests listed
  std::size_t max_traces = 20000;                          // read at most, newest first
};

std::string SloReportFromStore(exporting::SqliteStore& store, const SloQuery& query);

}  // namespace infertel
