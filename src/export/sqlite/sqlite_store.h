#pragma once
// The embedded store: infertel's default sink, a directory of SQLite files (partitions,
// partition.h), one per window of arrival time, each in WAL mode. docs/store.md has the layout,
// the bound and the queries; `infertel traces`, `infertel spans --json` and `infertel metrics`
// read it.
//
//   DIR/spans-<unix ms>.db  spans and log records that arrived from that time on, until the
//                           next file's time (a partition, partition.h)
//   DIR/metrics.db          the latest point of every metric series (the `metrics` table of
//                           kMetricsSchema), at most StoreOptions::max_series series
//   DIR/retention           what retention removed so far (text: `key value` lines)
//   DIR/lock                held (flock) by the one process writing the store
//
// The bound: the files and their WALs never exceed `max_bytes` by more than one write. Before
// each write the writer adds up their sizes (it knows the closed files' and stats the rest)
// with the write's estimate, and removes the oldest partitions until that fits. A partition is
// closed (and a new one started) when it reaches max_bytes / 8, or when it is max_age / 8 old,
// so that removing one gives back at most an eighth. Retention by age removes a partition once
// everything in it arrived more than max_age ago: the agent's clock at arrival, not the
// sender's timestamps, decides what is old, and what is recent (the newest traces are the
// last written).
//
// Thread-safety: one SqliteStore opened for writing is shared by the trace, log and metric
// exporters of the process (MakeStore*Exporter), its writes serialized by a mutex. A store
// opened for reading is one thread's.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "core/stats.h"
#include "core/telemetry.h"
#include "export/sqlite/block.h"
#include "export/sqlite/block_packer.h"
#include "pipeline/exporter.h"
#include "pipeline/pacer.h"

struct sqlite3;
struct sqlite3_stmt;

namespace infertel::exporting {

class StoreHealth;                     // store_health.h
enum class StoreFault : std::uint8_t;  // store_health.h
class Partition;

// What retention removed, counted (infertel_store_retention_removed_total) and kept in
// DIR/retention for `infertel traces`.
struct StoreStats {
  std::atomic<std::uint64_t> spans_removed_age{0}, spans_removed_size{0};
  std::atomic<std::uint64_t> logs_removed_age{0}, logs_removed_size{0};
  std::atomic<std::uint64_t> files_removed{0};
  std::atomic<std::uint64_t> series_refused{0};  // metric series beyond max_series
};
void RegisterStoreStats(StatsRegistry& registry, std::shared_ptr<const StoreStats> stats);

struct StoreOptions {
  std::string path = "infertel.db";                // --store: the directory
  std::uint64_t max_bytes = 256ull * 1024 * 1024;  // --store-max-mb
  std::chrono::seconds max_age{24 * 3600};         // --store-max-age; 0 = no age limit
  std::chrono::seconds cleanup_interval{60};       // how often retention by age looks
  std::size_t max_series = 20000;                  // metric series kept
  bool read_only = false;
  std::shared_ptr<StoreStats> stats;  // counters of this store; made on Open when null
};

// One span, as read back (the fields of the old `spans` table).
struct StoredSpan {
  std::string trace_id, span_id, parent_span_id;  // hex; parent "" for a root
  std::string name;
  int kind = 0;
  std::int64_t start_time_unix_nano = 0, end_time_unix_nano = 0;
  int status_code = 0;
  std::string status_message;
  std::string attributes, events, links, resource;  // JSON text
  std::string scope, service_name;
  std::int64_t dropped_attributes_count = 0, dropped_events_count = 0, dropped_links_count = 0;
};

struct StoredLog {
  std::int64_t time_unix_nano = 0, observed_time_unix_nano = 0;
  std::string trace_id, span_id;  // hex; "" when absent
  int severity_number = 0;
  std::string severity_text, event_name;
  std::string body, attributes, resource;  // JSON text
  std::string scope, service_name;
};

// A page of traces (Traces): their local roots' summaries, newest arrival first. Zero or empty
// fields do not filter.
struct TraceFilter {
  std::size_t limit = 50;
  std::int64_t start_from = 0, start_to = 0;  // unix ns, of the summary span's start
  std::string model, operation, service, tenant;
  int status = -1;  // OTLP status code; -1 any; kNotError: any but ERROR (ok or unset)
  static constexpr int kNotError = -2;
  std::int64_t min_duration_ns = 0;
};
struct TraceSummary {
  std::string trace_id, name, model, operation, service, tenant;
  std::int64_t start_time_unix_nano = 0, duration_ns = 0;
  int status_code = 0;
};

// Span and log dumps (`infertel spans`): empty fields do not filter; limit 0 = all.
struct SpanFilter {
  std::string trace_id, name;
  std::size_t limit = 0;
};

struct RetentionResult {
  std::int64_t spans_deleted = 0, logs_deleted = 0, metrics_deleted = 0;
};
// DIR/retention, as read back.
struct RetentionRecord {
  std::uint64_t spans_age = 0, spans_size = 0, logs_age = 0, logs_size = 0;
  std::int64_t last_unix_nano = 0;
};

class SqliteStore {
 public:
  SqliteStore();
  ~SqliteStore();
  SqliteStore(const SqliteStore&) = delete;
  SqliteStore& operator=(const SqliteStore&) = delete;

  // Opens the directory (creating it unless read_only). A file at the path (the format of
  // earlier versions, one SQLite file) is refused with a message saying what to do.
  bool Open(const StoreOptions& options, std::string* error);
  // Opens an existing store for queries.
  bool Open(const std::string& path, std::string* error);

  // Writes: each call is one transaction (and *busy tells lock contention). False and *error
  // on failure, nothing of the call kept.
  bool InsertTraces(const TracesRequest& request, std::string* error, bool* busy = nullptr);
  bool InsertLogs(const LogsRequest& request, std::string* error, bool* busy = nullptr);
  // Keeps only the newest point per (name, labels); new series beyond max_series are refused
  // (counted).
  bool UpsertMetrics(const MetricsRequest& request, std::string* error, bool* busy = nullptr);
  // Age retention (size is enforced before every write); now in unix ns.
  RetentionResult EnforceRetention(std::uint64_t now_unix_nano);
  // The files and their WALs, in bytes, as the bound counts them.
  std::uint64_t DiskBytes();

  // Queries (any store).
  std::vector<std::string> RecentTraceIds(std::size_t limit, std::string_view service);
  std::vector<TraceSummary> Traces(const TraceFilter& filter);
  std::vector<StoredSpan> TraceSpans(std::string_view trace_id);  // by start time
  std::vector<StoredSpan> Spans(const SpanFilter& filter);        // in arrival order
  std::vector<StoredLog> Logs(const SpanFilter& filter);          // trace_id filters
  std::int64_t CountSpans();
  std::int64_t CountLogs();
  std::int64_t CountMetrics();
  RetentionRecord Removed();
  // The partition files, oldest first.
  std::vector<std::string> Files();

  // Lets writes give the core up (pipeline/pacer.h, paced_vfs.h) unless the calling thread
  // has a pacer of its own set; by default they never do.
  void SetPacer(pipeline::Pacer pacer) { pacer_ = pacer; }
  const pipeline::Pacer& pacer() const { return pacer_; }
  const StoreOptions& options() const { return options_; }
  const std::shared_ptr<StoreStats>& stats() const { return options_.stats; }

  // The file system's part in the last failed write (store_health.h ClassifySqliteError).
  StoreFault LastFault() const;
  // For the exporters sharing this store after a fault (store_health.h kReopen): unless
  // another reopened it since `epoch` (then its epoch), closes the files and opens the
  // directory again, returning health.Opened(); 0 and *error when that fails.
  std::uint64_t ReopenSince(std::uint64_t epoch, StoreHealth& health, std::string* error);

  // The current partition's last span block while it has room: the next transaction's spans
  // fill it (rewriting it) before a new block starts. At a few dozen spans per export, blocks
  // of a few dozen spans compressed to 42 bytes per span, full ones to 31, and left a fifth
  // of their pages empty (docs/store.md, "Figures"). Emptied on a partition's start and on a
  // failed transaction (its records may not have been committed).
  struct OpenBlock {
    std::int64_t id = 0;  // 0: none
    block::Writer records;
  };

 private:
  struct Closed;
  bool OpenWriter(std::string* error);
  // Closes the files and the lock (the destructor, a reopen).
  void CloseFiles();
  bool ScanPartitions(std::string* error);
  bool StartPartition(std::string* error);
  bool OpenMetrics(std::string* error);
  // Makes room for a write of about `bytes`: rolls the partition and removes the oldest.
  void MakeRoom(std::uint64_t bytes);
  // Removes the oldest closed partitions until the files and `bytes` more fit.
  void RemoveUntilFits(std::uint64_t bytes);
  int BlockWritten(std::uint64_t bytes);
  void Roll();
  std::uint64_t WalLimit() const;
  std::int64_t DeleteOldMetrics(std::int64_t before_unix_nano);
  bool LoadSeries(std::string* error);
  void RemoveOldest(bool by_age);
  void WriteRetentionRecord();
  void AfterCommit();
  // The rows of a write, inside its transaction (SQLite result codes).
  int WriteSpans(const TracesRequest& request);
  int WriteLogs(const LogsRequest& request);
  template <typename Write>
  bool Transaction(std::size_t items, std::string* error, bool* busy, Write&& write);
  // Readers: the partitions, newest first, opened on first use.
  std::vector<Partition*> Readers();

  StoreOptions options_;
  std::mutex mu_;  // serializes the writers
  int lock_fd_ = -1;
  std::vector<Closed> closed_;  // oldest first
  std::unique_ptr<Partition> current_;
  std::int64_t current_started_ms_ = 0;
  std::uint64_t current_spans_ = 0, current_logs_ = 0;
  std::uint64_t pending_spans_ = 0, pending_logs_ = 0;  // of the transaction in progress
  std::uint64_t pending_bytes_ = 0;  // what it may still add to the files (the bound's estimate)
  // Traces with a summary row (store_write.cc). Open addressing: a node per trace was an
  // allocation and a free per root span on the store lane.
  absl::flat_hash_set<std::int64_t> summarized_;
  BlockPacker packer_;  // compresses the current partition's blocks
  OpenBlock open_spans_;
  sqlite3* metrics_ = nullptr;
  sqlite3_stmt* upsert_metric_ = nullptr;
  std::unordered_set<std::uint64_t> series_;  // hashes of the metric series kept
  std::vector<std::unique_ptr<Partition>> readers_;
  pipeline::Pacer pacer_;
  std::uint8_t last_fault_ = 0;     // a StoreFault
  std::uint64_t opened_epoch_ = 0;  // of the last ReopenSince
};

// Exporters writing into the process's one writable store at options.path (opened by the
// first, shared by the others). Lock contention is retryable, any other SQLite failure
// permanent. With `health`, the exporters call its hooks around every write (store_health.h):
// during a fault of the file system they drop batches at once, and the first to be told
// reopens the shared store (a new lock, partition and metrics file) when the fault's cause has
// gone. nullptr and *error when the store cannot be opened.
std::unique_ptr<pipeline::TraceExporter> MakeStoreTraceExporter(
    const StoreOptions& options, std::string* error, std::shared_ptr<StoreHealth> health = {});
std::unique_ptr<pipeline::LogExporter> MakeStoreLogExporter(
    const StoreOptions& options, std::string* error, std::shared_ptr<StoreHealth> health = {});
std::unique_ptr<pipeline::MetricExporter> MakeStoreMetricExporter(
    const StoreOptions& options, std::string* error, std::shared_ptr<StoreHealth> health = {});

// The metrics file of a store directory (for `infertel metrics`).
std::string MetricsFilePath(const std::string& store_dir);

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
  std::string service;     // non-empty: traces with a local root of this service.name
};

std::string RenderTraceTree(const std::vector<StoredSpan>& spans);
// "2026-01-02 03:04:05.678Z"
std::string FormatWallTime(std::int64_t unix_nano);
std::string RenderTraceTrees(SqliteStore& store, const TraceQuery& query);
std::string RenderTraceTrees(SqliteStore& store, std::size_t limit, std::string_view service);

// JSON of a span / log record as `infertel spans --json` prints it: the old row's fields,
// attributes (events, links, resource) as JSON values, times as decimal strings (exact past
// 2^53, as in OTLP/JSON).
void AppendSpanJson(std::string* out, const StoredSpan& span);
void AppendLogJson(std::string* out, const StoredLog& log);

}  // namespace infertel::exporting
