#pragma once
// The embedded store: infertel's default sink, one SQLite file in WAL mode that users query
// directly (`sqlite3 infertel.db`) or browse with `infertel traces`.
//
// Schema (created on open if absent; every statement below is what the code runs):
//
//   CREATE TABLE spans (
//     trace_id             TEXT NOT NULL,  -- 32 lowercase hex characters
//     span_id              TEXT NOT NULL,  -- 16 lowercase hex characters
//     parent_span_id       TEXT,           -- 16 lowercase hex characters; NULL for a root span
//     name                 TEXT NOT NULL,
//     kind                 INTEGER NOT NULL, -- OTLP SpanKind: 0 UNSPECIFIED, 1 INTERNAL,
//                                            -- 2 SERVER, 3 CLIENT, 4 PRODUCER, 5 CONSUMER
//     start_time_unix_nano INTEGER NOT NULL,
//     end_time_unix_nano   INTEGER NOT NULL,
//     status_code          INTEGER NOT NULL, -- OTLP StatusCode: 0 UNSET, 1 OK, 2 ERROR
//     status_message       TEXT NOT NULL,    -- '' when none
//     attributes           TEXT NOT NULL,    -- JSON object {"key": value}; values are JSON
//                                            -- strings, numbers (int and double), booleans,
//                                            -- arrays, objects (kvlist); bytes as base64 strings
//     events               TEXT NOT NULL,    -- JSON array of
//                                            -- {"name","time_unix_nano","attributes":{..}}
//     links                TEXT NOT NULL,    -- JSON array of
//                                            -- {"trace_id","span_id","attributes":{..}} (hex ids)
//     resource             TEXT NOT NULL,    -- JSON object of the resource attributes
//     scope                TEXT NOT NULL,    -- instrumentation scope name ('' when none)
//     service_name         TEXT NOT NULL,    -- resource attribute service.name ('' when none)
//     dropped_events_count INTEGER NOT NULL,
//     trace_part           INTEGER           -- rowid / 16384, for the trace index (below);
//                                            -- NULL in rows of a store made before it
//   );
//   CREATE INDEX spans_start ON spans(start_time_unix_nano);
//   CREATE INDEX spans_trace_part ON spans(trace_part, substr(trace_id, 1, 8));
//
// A trace's spans are found by seeking spans_trace_part once per part (kTraceSpansSql): the
// index takes its inserts within the newest part, not all over itself (sqlite_store.cc).
//
//   CREATE TABLE logs (
//     time_unix_nano          INTEGER NOT NULL, -- the record's time, else its observed time
//     observed_time_unix_nano INTEGER NOT NULL,
//     trace_id                TEXT,             -- lowercase hex; NULL when absent
//     span_id                 TEXT,             -- lowercase hex; NULL when absent
//     severity_number         INTEGER NOT NULL, -- OTLP SeverityNumber (0..24)
//     severity_text           TEXT NOT NULL,
//     event_name              TEXT,             -- the `event.name` attribute; NULL when absent
//     body                    TEXT NOT NULL,    -- JSON value of the body (null when none)
//     attributes              TEXT NOT NULL,    -- JSON object, as spans.attributes
//     resource                TEXT NOT NULL,    -- JSON object
//     scope                   TEXT NOT NULL,
//     service_name            TEXT NOT NULL
//   );
//   CREATE INDEX logs_time ON logs(time_unix_nano);
//   CREATE INDEX logs_trace_id ON logs(trace_id);
//
//   CREATE TABLE metrics (        -- the latest point of every series, nothing older
//     name           TEXT NOT NULL,
//     type           TEXT NOT NULL,  -- gauge | sum | histogram | exponential_histogram | summary
//     unit           TEXT NOT NULL,
//     labels         TEXT NOT NULL,  -- JSON object of the point's attributes, keys sorted
//     value          REAL,           -- gauge/sum: the value; histogram/summary: the sum
//                                    -- (NULL when the point has no sum)
//     count          INTEGER,        -- histogram/summary: the count; NULL otherwise
//     data           TEXT,           -- histogram: {"bounds":[..],"counts":[..]}; summary:
//                                    -- {"quantiles":[{"q":..,"value":..}]}; NULL otherwise
//     time_unix_nano INTEGER NOT NULL,
//     resource       TEXT NOT NULL,  -- JSON object
//     service_name   TEXT NOT NULL,
//     PRIMARY KEY (name, labels)
//   );
//
// A file the store creates has pages of 16 KiB; an existing file keeps its own page size.
//
// Retention (EnforceRetention, run by the store exporters on their own thread at most every
// `cleanup_interval`): rows older than `max_age` are deleted (spans by start time, logs by time,
// metrics by their last update); then, while the pages in use exceed `max_bytes`, the oldest
// 10% of spans and logs are deleted. Freed pages are reused, the file does not shrink.
//
// Thread-safety: a SqliteStore is one SQLite connection and is not thread-safe; each thread opens
// its own. Several connections (and processes) may use one file at a time (WAL; writers wait
// up to 5 s for each other).

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/telemetry.h"
#include "pipeline/exporter.h"
#include "pipeline/pacer.h"

struct sqlite3;
struct sqlite3_stmt;

namespace infertel::exporting {

class StoreHealth;  // store_health.h

struct StoreOptions {
  std::string path = "infertel.db";                // --store
  std::uint64_t max_bytes = 256ull * 1024 * 1024;  // --store-max-mb
  std::chrono::seconds max_age{24 * 3600};         // --store-max-age; 0 = no age limit
  std::chrono::seconds cleanup_interval{60};
  bool read_only = false;  // open an existing file for queries only (no schema creation)
};

// One row of `spans`, as read back.
struct StoredSpan {
  std::string trace_id, span_id, parent_span_id;  // parent "" when NULL
  std::string name;
  int kind = 0;
  std::int64_t start_time_unix_nano = 0, end_time_unix_nano = 0;
  int status_code = 0;
  std::string status_message;
  std::string attributes, events, links, resource;  // JSON text
  std::string scope, service_name;
};

struct RetentionResult {
  std::int64_t spans_deleted = 0;
  std::int64_t logs_deleted = 0;
  std::int64_t metrics_deleted = 0;
};

// The statement TraceSpans runs for each part, `?1` the trace id in hex, `?2` the part: here
// so that a test can check its query plan (that it finds the trace through the index and does
// not scan the table).
extern const std::string kTraceSpansSql;

class SqliteStore {
 public:
  SqliteStore() = default;
  ~SqliteStore();
  SqliteStore(const SqliteStore&) = delete;
  SqliteStore& operator=(const SqliteStore&) = delete;

  // Opens (creating the file and schema unless options.read_only) and sets WAL mode. False
  // and *error on failure. Call once.
  bool Open(const StoreOptions& options, std::string* error);
  // Opens an existing store read-only, for queries (`infertel traces`, the demo summary).
  bool Open(const std::string& path, std::string* error);

  // Each call is one transaction with prepared statements (writable store only). False and
  // *error on failure (nothing of the call is kept then). *busy tells whether the failure was
  // lock contention.
  bool InsertTraces(const TracesRequest& request, std::string* error, bool* busy = nullptr);
  bool InsertLogs(const LogsRequest& request, std::string* error, bool* busy = nullptr);
  // Keeps only the newest point per (name, labels).
  bool UpsertMetrics(const MetricsRequest& request, std::string* error, bool* busy = nullptr);

  RetentionResult EnforceRetention(std::uint64_t now_unix_nano);
  // Bytes of the pages in use (page_count - freelist_count) * page_size.
  std::uint64_t UsedBytes();

  // The ids of the `limit` traces with the most recent spans, newest first; `service`
  // (when non-empty) keeps traces with at least one span of that service.name, placed by the
  // newest of those spans.
  std::vector<std::string> RecentTraceIds(std::size_t limit, std::string_view service);
  // All spans of one trace, by start time (kTraceSpansSql, once per part).
  std::vector<StoredSpan> TraceSpans(std::string_view trace_id);
  // Row counts (0 on error).
  std::int64_t CountSpans();
  std::int64_t CountLogs();
  std::int64_t CountMetrics();

  // Lets the writes above give the core up between rows and between SQLite's own file writes
  // (see pipeline/pacer.h, export/sqlite/paced_vfs.h); by default they never do.
  void SetPacer(pipeline::Pacer pacer) { pacer_ = pacer; }
  const pipeline::Pacer& pacer() const { return pacer_; }

  sqlite3* handle() { return db_; }
  const StoreOptions& options() const { return options_; }

 private:
  std::int64_t Count(const char* sql);
  // Whether `spans` has the column (a store made before it was added has not).
  bool HasColumn(const char* name);
  bool HasTracePart();
  // Adds a column to a store made before it was added.
  bool AddColumn(const char* name, const char* declaration, std::string* error);
  bool Exec(const char* sql, std::string* error);
  sqlite3_stmt* Prepare(const char* sql, std::string* error);
  // Steps an insert, then lets the pacer pause.
  int StepRow(sqlite3_stmt* s);

  StoreOptions options_;
  sqlite3* db_ = nullptr;
  sqlite3_stmt* insert_span_ = nullptr;
  sqlite3_stmt* insert_log_ = nullptr;
  sqlite3_stmt* upsert_metric_ = nullptr;
  std::int64_t next_rowid_ = 1;  // the rowid the next span's row will get (its trace_part)
  pipeline::Pacer pacer_;
};

// Exporters writing into their own SqliteStore connection (opened here, used by the exporter
// thread only). Retention runs after an export when `cleanup_interval` has passed. Lock
// contention is retryable, any other SQLite failure permanent. With `health`, the exporter
// calls its hooks around every write (store_health.h): during a fault of the file system it
// drops batches at once, and it reopens the store when the fault's cause has gone. nullptr and
// *error when the file cannot be opened.
std::unique_ptr<pipeline::TraceExporter> MakeStoreTraceExporter(
    const StoreOptions& options, std::string* error, std::shared_ptr<StoreHealth> health = {});
std::unique_ptr<pipeline::LogExporter> MakeStoreLogExporter(
    const StoreOptions& options, std::string* error, std::shared_ptr<StoreHealth> health = {});
std::unique_ptr<pipeline::MetricExporter> MakeStoreMetricExporter(
    const StoreOptions& options, std::string* error, std::shared_ptr<StoreHealth> health = {});

// ---- Rendering (render.cc) ----
// Text rendering of stored traces as indented trees, for `infertel traces` and the demo.
//
// One header line per trace, then one line per span: two spaces of indentation per depth,
// the span name, its duration in milliseconds with 3 decimals, and key attributes
// (gen_ai.request.model, gen_ai.usage.input_tokens/output_tokens, and for status ERROR the
// word ERROR with error.type). A span whose parent is not in the trace prints as a root.
// Siblings are ordered by start time.

struct TraceQuery {
  std::size_t limit = 10;  // most recent traces
  std::string trace_id;    // non-empty: only this trace (lowercase hex)
  std::string service;     // non-empty: traces with a span of this service.name
};

// Renders one trace (its spans in any order). Empty string for no spans.
std::string RenderTraceTree(const std::vector<StoredSpan>& spans);
// Renders the traces selected by `query`, newest first, separated by blank lines. Empty
// string when none match.
std::string RenderTraceTrees(SqliteStore& store, const TraceQuery& query);
// Shorthand: the `limit` most recent traces, of `service` when non-empty.
std::string RenderTraceTrees(SqliteStore& store, std::size_t limit, std::string_view service);

}  // namespace infertel::exporting
