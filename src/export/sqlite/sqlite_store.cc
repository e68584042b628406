#include "export/sqlite/sqlite_store.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <limits>
#include <mutex>
#include <tuple>
#include <unordered_set>
#include <utility>

#include "core/clock.h"
#include "core/hex.h"
#include "core/semconv.h"
#include "export/otlp_json/json_util.h"
#include "export/sqlite/paced_vfs.h"
#include "export/sqlite/store_health.h"

namespace infertel::exporting {
namespace {

// Spans are found by trace id through an index on the row's part and the id's first 8 hex
// digits (32 bits; a lookup then compares whole ids among the few rows that share them).
//
// The id's prefix: index entries a third as long as the whole id's touch a third as many
// pages (docs/performance.md, "Larger store transactions and a shorter trace index").
//
// The part first (trace_part, the rowid's part of kTracePartRows rows, written by the store):
// trace ids are random, so an index on them alone took every transaction's inserts all over
// its pages, and each commit wrote every page it touched to the WAL, then a checkpoint wrote
// it again. The pages grew with the store, and so did the cost of a row: three times a new
// store's at a million rows. Within the newest part's few pages instead, whatever the store's
// size (docs/performance.md, "The trace index in parts"). A lookup seeks once per part.
//
// Stores made before get the column (NULL in their rows, which the lookup also seeks) and
// lose their older index on the id alone when next opened for writing.
constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS spans (
  trace_id TEXT NOT NULL,
  span_id TEXT NOT NULL,
  parent_span_id TEXT,
  name TEXT NOT NULL,
  kind INTEGER NOT NULL,
  start_time_unix_nano INTEGER NOT NULL,
  end_time_unix_nano INTEGER NOT NULL,
  status_code INTEGER NOT NULL,
  status_message TEXT NOT NULL,
  attributes TEXT NOT NULL,
  events TEXT NOT NULL,
  links TEXT NOT NULL,
  resource TEXT NOT NULL,
  scope TEXT NOT NULL,
  service_name TEXT NOT NULL,
  dropped_events_count INTEGER NOT NULL,
  trace_part INTEGER,
  dropped_attributes_count INTEGER NOT NULL DEFAULT 0,
  dropped_links_count INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS spans_start ON spans(start_time_unix_nano);
CREATE TABLE IF NOT EXISTS logs (
  time_unix_nano INTEGER NOT NULL,
  observed_time_unix_nano INTEGER NOT NULL,
  trace_id TEXT,
  span_id TEXT,
  severity_number INTEGER NOT NULL,
  severity_text TEXT NOT NULL,
  event_name TEXT,
  body TEXT NOT NULL,
  attributes TEXT NOT NULL,
  resource TEXT NOT NULL,
  scope TEXT NOT NULL,
  service_name TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS logs_time ON logs(time_unix_nano);
CREATE INDEX IF NOT EXISTS logs_trace_id ON logs(trace_id);
CREATE TABLE IF NOT EXISTS metrics (
  name TEXT NOT NULL,
  type TEXT NOT NULL,
  unit TEXT NOT NULL,
  labels TEXT NOT NULL,
  value REAL,
  count INTEGER,
  data TEXT,
  time_unix_nano INTEGER NOT NULL,
  resource TEXT NOT NULL,
  service_name TEXT NOT NULL,
  PRIMARY KEY (name, labels)
);
)sql";

// Rows per part of the trace index (above): a part's entries fill about 20 pages of 16 KiB, so
// a transaction of 4,096 rows touches at most those, and a lookup in a store at its default
// bound (about 200,000 rows) seeks about 13 parts.
constexpr std::int64_t kTracePartRows = 16384;

// Run after kSchema, once a store made before has its trace_part column.
constexpr const char* kTraceIndex = R"sql(
DROP INDEX IF EXISTS spans_trace_id;
DROP INDEX IF EXISTS spans_trace_key;
CREATE INDEX IF NOT EXISTS spans_trace_part ON spans(trace_part, substr(trace_id, 1, 8));
)sql";

// Pages of 16 KiB instead of SQLite's 4 KiB, for stores this opens first (an existing file
// keeps its page size: SQLite cannot change it in WAL mode). A span's row is about 1.2 KiB, so
// a 4 KiB page held three; larger pages mean fewer B-tree pages, fewer WAL frames and fewer
// checkpoint writes per row. Measured (docs/performance.md, "Store pages of 16 KiB"): the
// store lane's CPU per row fell by about a quarter at saturation. The cost is at low load,
// where each commit writes a few whole pages: at 20 requests per second the store dirtied
// 248 KB/s of file pages against 97 KB/s. Must run before journal_mode, which writes the
// file's first page.
constexpr const char* kPageSizePragma = "PRAGMA page_size=16384";

constexpr const char* kInsertSpan =
    "INSERT INTO spans (trace_id, span_id, parent_span_id, name, kind, start_time_unix_nano, "
    "end_time_unix_nano, status_code, status_message, attributes, events, links, resource, scope, "
    "service_name, dropped_events_count, trace_part, dropped_attributes_count, "
    "dropped_links_count) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";
constexpr const char* kInsertLog =
    "INSERT INTO logs (time_unix_nano, observed_time_unix_nano, trace_id, span_id, "
    "severity_number, severity_text, event_name, body, attributes, resource, scope, service_name) "
    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)";
constexpr const char* kUpsertMetric =
    "INSERT INTO metrics (name, type, unit, labels, value, count, data, time_unix_nano, resource, "
    "service_name) VALUES (?,?,?,?,?,?,?,?,?,?) ON CONFLICT (name, labels) DO UPDATE SET "
    "type = excluded.type, unit = excluded.unit, value = excluded.value, count = excluded.count, "
    "data = excluded.data, time_unix_nano = excluded.time_unix_nano, resource = excluded.resource, "
    "service_name = excluded.service_name WHERE excluded.time_unix_nano >= metrics.time_unix_nano";

// Binds by index; SQLite copies the text (SQLITE_TRANSIENT) since the strings are temporaries.
void BindText(sqlite3_stmt* s, int i, std::string_view v) {
  sqlite3_bind_text(s, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
}
// Binds text that outlives the statement's next step, without a copy.
void BindStatic(sqlite3_stmt* s, int i, std::string_view v) {
  sqlite3_bind_text(s, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
}
// An id stored as NULL: absent or all zero bytes.
bool IsNullId(const std::string& bytes) {
  return bytes.empty() || std::all_of(bytes.begin(), bytes.end(), [](char c) { return c == 0; });
}
void BindHexOrNull(sqlite3_stmt* s, int i, const std::string& bytes) {
  if (IsNullId(bytes))
    sqlite3_bind_null(s, i);
  else
    BindText(s, i, BytesToHex(bytes));
}
void BindU64(sqlite3_stmt* s, int i, std::uint64_t v) {
  sqlite3_bind_int64(s, i, static_cast<sqlite3_int64>(v));
}

std::string ServiceName(const Resource& r) {
  const AnyValue* v = FindAttr(r.attributes(), semconv::kServiceName);
  return v != nullptr && v->has_string_value() ? v->string_value() : std::string();
}

void AppendEventsJson(std::string* out, const Span& span) {
  out->push_back('[');
  bool first = true;
  for (const auto& e : span.events()) {
    if (!first) out->push_back(',');
    first = false;
    *out += "{\"name\":";
    otlp_json::AppendString(out, e.name());
    fmt::format_to(std::back_inserter(*out),
                   ",\"time_unix_nano\":{},\"attributes\":", e.time_unix_nano());
    otlp_json::AppendPlainAttributes(out, e.attributes());
    out->push_back('}');
  }
  out->push_back(']');
}

void AppendLinksJson(std::string* out, const Span& span) {
  out->push_back('[');
  bool first = true;
  for (const auto& l : span.links()) {
    if (!first) out->push_back(',');
    first = false;
    // Hex ids need no escaping.
    *out += "{\"trace_id\":\"";
    AppendHex(out, l.trace_id());
    *out += "\",\"span_id\":\"";
    AppendHex(out, l.span_id());
    *out += "\",\"attributes\":";
    otlp_json::AppendPlainAttributes(out, l.attributes());
    out->push_back('}');
  }
  out->push_back(']');
}

// The text a span's row needs that the store makes itself (hex ids, JSON), in buffers kept
// from row to row, so that a row allocates nothing once they have grown. Bound without a copy
// (BindStatic): they stay unchanged until the row's step is done.
struct SpanRowText {
  std::string trace_id, span_id, parent_span_id, attributes, events, links;
  bool root = false;  // no parent (absent or all zero): stored as NULL, parent_span_id unset

  void Fill(const Span& span) {
    Hex(&trace_id, span.trace_id());
    Hex(&span_id, span.span_id());
    root = IsNullId(span.parent_span_id());
    if (!root) Hex(&parent_span_id, span.parent_span_id());
    attributes.clear();
    otlp_json::AppendPlainAttributes(&attributes, span.attributes());
    events.clear();
    AppendEventsJson(&events, span);
    links.clear();
    AppendLinksJson(&links, span);
  }

 private:
  static void Hex(std::string* out, std::string_view bytes) {
    out->clear();
    AppendHex(out, bytes);
  }
};

// Labels with sorted keys, so that one series always has one primary key.
std::string SortedLabels(const google::protobuf::RepeatedPtrField<KeyValue>& attrs) {
  std::vector<const KeyValue*> v;
  for (const auto& kv : attrs) v.push_back(&kv);
  std::stable_sort(v.begin(), v.end(),
                   [](const KeyValue* a, const KeyValue* b) { return a->key() < b->key(); });
  std::string out = "{";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out.push_back(',');
    otlp_json::AppendString(&out, v[i]->key());
    out.push_back(':');
    otlp_json::AppendPlainValue(&out, v[i]->value());
  }
  out.push_back('}');
  return out;
}

bool IsBusy(int rc) {
  rc &= 0xff;
  return rc == SQLITE_BUSY || rc == SQLITE_LOCKED;
}

// Runs `body` inside BEGIN IMMEDIATE .. COMMIT, rolling back on failure.
template <typename Body>
bool InTransaction(sqlite3* db, std::string* error, bool* busy, Body&& body) {
  if (busy) *busy = false;
  int rc = sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) {
    if (busy) *busy = IsBusy(rc);
    *error = fmt::format("begin: {}", sqlite3_errmsg(db));
    return false;
  }
  rc = body();
  if (rc == SQLITE_OK) rc = sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) {
    if (busy) *busy = IsBusy(rc);
    *error = fmt::format("insert: {}", sqlite3_errmsg(db));
    sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    return false;
  }
  return true;
}

int Step(sqlite3_stmt* s) {
  int rc = sqlite3_step(s);
  sqlite3_reset(s);
  sqlite3_clear_bindings(s);
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

std::string ColumnText(sqlite3_stmt* s, int i) {
  const auto* p = sqlite3_column_text(s, i);
  return p == nullptr ? std::string()
                      : std::string(reinterpret_cast<const char*>(p),
                                    static_cast<std::size_t>(sqlite3_column_bytes(s, i)));
}

// SQLite keeps allocation statistics by default, behind a process-wide mutex taken on every
// malloc and free; nothing here reads them. Off, the store lane's locking of that mutex (about
// 4 % of its CPU, docs/performance.md) goes. Only possible before SQLite initializes itself,
// which opening the first connection or finding a VFS does: hence first thing, once.
void ConfigureSqliteOnce() {
  static std::once_flag once;
  std::call_once(once, [] { sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); });
}

}  // namespace

bool SqliteStore::Open(const StoreOptions& options, std::string* error) {
  ConfigureSqliteOnce();
  options_ = options;
  const int flags =
      options.read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  // A writable store writes through the paced VFS, so that its lane can give the core up
  // inside a COMMIT or a checkpoint too (export/sqlite/paced_vfs.h).
  const char* vfs = options.read_only ? nullptr : PacedVfsName();
  int rc = sqlite3_open_v2(options.path.c_str(), &db_, flags | SQLITE_OPEN_NOMUTEX, vfs);
  if (rc != SQLITE_OK) {
    *error = fmt::format("open store {}: {}", options.path,
                         db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc));
    return false;
  }
  sqlite3_busy_timeout(db_, 5000);
  if (options.read_only) return true;
  // An 8 MiB page cache instead of SQLite's 2 MiB: the trace id index takes its inserts at
  // random places, and with the default cache every batch read many of its pages back from
  // the file. Measured (docs/performance.md, "The store on the gateway's core"): 9 % less
  // agent CPU per request with the store, closed loop.
  if (!Exec(kPageSizePragma, error) || !Exec("PRAGMA journal_mode=WAL", error) ||
      !Exec("PRAGMA synchronous=NORMAL", error) || !Exec("PRAGMA cache_size=-8192", error) ||
      !Exec(kSchema, error) || !AddColumn("trace_part", "INTEGER", error) ||
      !AddColumn("dropped_attributes_count", "INTEGER NOT NULL DEFAULT 0", error) ||
      !AddColumn("dropped_links_count", "INTEGER NOT NULL DEFAULT 0", error) ||
      !Exec(kTraceIndex, error))
    return false;
  next_rowid_ = Count("SELECT coalesce(max(rowid), 0) + 1 FROM spans");
  insert_span_ = Prepare(kInsertSpan, error);
  insert_log_ = Prepare(kInsertLog, error);
  upsert_metric_ = Prepare(kUpsertMetric, error);
  return insert_span_ && insert_log_ && upsert_metric_;
}

bool SqliteStore::Open(const std::string& path, std::string* error) {
  StoreOptions o;
  o.path = path;
  o.read_only = true;
  return Open(o, error);
}

bool SqliteStore::HasColumn(const char* name) {
  sqlite3_stmt* s = nullptr;
  const std::string query = std::string("SELECT ") + name + " FROM spans LIMIT 0";
  const bool has = sqlite3_prepare_v2(db_, query.c_str(), -1, &s, nullptr) == SQLITE_OK;
  sqlite3_finalize(s);
  return has;
}

bool SqliteStore::HasTracePart() { return HasColumn("trace_part"); }

bool SqliteStore::AddColumn(const char* name, const char* declaration, std::string* error) {
  if (HasColumn(name)) return true;
  std::string alter_error;
  const std::string alter = std::string("ALTER TABLE spans ADD COLUMN ") + name + " " + declaration;
  if (Exec(alter.c_str(), &alter_error)) return true;
  // Another process that opened the same store may have added it first.
  if (HasColumn(name)) return true;
  *error = std::move(alter_error);
  return false;
}

std::int64_t SqliteStore::Count(const char* sql) {
  sqlite3_stmt* s = nullptr;
  std::int64_t v = 0;
  if (sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
    v = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  return v;
}
std::int64_t SqliteStore::CountSpans() { return Count("SELECT COUNT(*) FROM spans"); }
std::int64_t SqliteStore::CountLogs() { return Count("SELECT COUNT(*) FROM logs"); }
std::int64_t SqliteStore::CountMetrics() { return Count("SELECT COUNT(*) FROM metrics"); }

SqliteStore::~SqliteStore() {
  sqlite3_finalize(insert_span_);
  sqlite3_finalize(insert_log_);
  sqlite3_finalize(upsert_metric_);
  sqlite3_close_v2(db_);
}

bool SqliteStore::Exec(const char* sql, std::string* error) {
  char* msg = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &msg) != SQLITE_OK) {
    *error = fmt::format("store {}: {}", options_.path, msg ? msg : sqlite3_errmsg(db_));
    sqlite3_free(msg);
    return false;
  }
  return true;
}

sqlite3_stmt* SqliteStore::Prepare(const char* sql, std::string* error) {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr) != SQLITE_OK) {
    *error = fmt::format("store {}: prepare: {}", options_.path, sqlite3_errmsg(db_));
    return nullptr;
  }
  return s;
}

int SqliteStore::StepRow(sqlite3_stmt* s) {
  const int rc = Step(s);
  pacer_.Between();
  return rc;
}

bool SqliteStore::InsertTraces(const TracesRequest& request, std::string* error, bool* busy) {
  PaceWritesOnThisThread paced(&pacer_);
  return InTransaction(db_, error, busy, [&]() -> int {
    sqlite3_stmt* s = insert_span_;
    // Everything bound below outlives each row's step: the request's own strings, the
    // resource's text, and the row's text kept in `row`.
    SpanRowText row;
    for (const auto& rs : request.resource_spans()) {
      const std::string resource = otlp_json::PlainAttributes(rs.resource().attributes());
      const std::string service = ServiceName(rs.resource());
      for (const auto& ss : rs.scope_spans()) {
        for (const auto& span : ss.spans()) {
          row.Fill(span);
          BindStatic(s, 1, row.trace_id);
          BindStatic(s, 2, row.span_id);
          if (row.root)
            sqlite3_bind_null(s, 3);
          else
            BindStatic(s, 3, row.parent_span_id);
          BindStatic(s, 4, span.name());
          sqlite3_bind_int(s, 5, static_cast<int>(span.kind()));
          BindU64(s, 6, span.start_time_unix_nano());
          BindU64(s, 7, span.end_time_unix_nano());
          sqlite3_bind_int(s, 8, static_cast<int>(span.status().code()));
          BindStatic(s, 9, span.status().message());
          BindStatic(s, 10, row.attributes);
          BindStatic(s, 11, row.events);
          BindStatic(s, 12, row.links);
          BindStatic(s, 13, resource);
          BindStatic(s, 14, ss.scope().name());
          BindStatic(s, 15, service);
          sqlite3_bind_int64(s, 16, span.dropped_events_count());
          sqlite3_bind_int64(s, 17, next_rowid_ / kTracePartRows);
          sqlite3_bind_int64(s, 18, span.dropped_attributes_count());
          sqlite3_bind_int64(s, 19, span.dropped_links_count());
          if (int rc = StepRow(s); rc != SQLITE_OK) return rc;
          // SQLite gives a new row the largest rowid plus one: the next row's, unless another
          // writer's rows come between, which only puts a few rows in a neighbouring part.
          next_rowid_ = sqlite3_last_insert_rowid(db_) + 1;
        }
      }
    }
    return SQLITE_OK;
  });
}

bool SqliteStore::InsertLogs(const LogsRequest& request, std::string* error, bool* busy) {
  PaceWritesOnThisThread paced(&pacer_);
  return InTransaction(db_, error, busy, [&]() -> int {
    sqlite3_stmt* s = insert_log_;
    for (const auto& rl : request.resource_logs()) {
      const std::string resource = otlp_json::PlainAttributes(rl.resource().attributes());
      const std::string service = ServiceName(rl.resource());
      for (const auto& sl : rl.scope_logs()) {
        for (const auto& lr : sl.log_records()) {
          BindU64(s, 1,
                  lr.time_unix_nano() != 0 ? lr.time_unix_nano() : lr.observed_time_unix_nano());
          BindU64(s, 2, lr.observed_time_unix_nano());
          BindHexOrNull(s, 3, lr.trace_id());
          BindHexOrNull(s, 4, lr.span_id());
          sqlite3_bind_int(s, 5, static_cast<int>(lr.severity_number()));
          BindText(s, 6, lr.severity_text());
          const AnyValue* ev = FindAttr(lr.attributes(), semconv::kEventName);
          if (ev != nullptr && ev->has_string_value())
            BindText(s, 7, ev->string_value());
          else
            sqlite3_bind_null(s, 7);
          std::string body;
          otlp_json::AppendPlainValue(&body, lr.body());
          BindText(s, 8, body);
          BindText(s, 9, otlp_json::PlainAttributes(lr.attributes()));
          BindText(s, 10, resource);
          BindText(s, 11, sl.scope().name());
          BindText(s, 12, service);
          if (int rc = StepRow(s); rc != SQLITE_OK) return rc;
        }
      }
    }
    return SQLITE_OK;
  });
}

bool SqliteStore::UpsertMetrics(const MetricsRequest& request, std::string* error, bool* busy) {
  PaceWritesOnThisThread paced(&pacer_);
  return InTransaction(db_, error, busy, [&]() -> int {
    sqlite3_stmt* s = upsert_metric_;
    for (const auto& rm : request.resource_metrics()) {
      const std::string resource = otlp_json::PlainAttributes(rm.resource().attributes());
      const std::string service = ServiceName(rm.resource());
      for (const auto& sm : rm.scope_metrics()) {
        for (const auto& m : sm.metrics()) {
          auto bind_common = [&](std::string_view type, const auto& point) {
            BindText(s, 1, m.name());
            BindText(s, 2, type);
            BindText(s, 3, m.unit());
            BindText(s, 4, SortedLabels(point.attributes()));
            BindU64(s, 8, point.time_unix_nano());
            BindText(s, 9, resource);
            BindText(s, 10, service);
          };
          auto number = [&](std::string_view type, const otlp_metrics::NumberDataPoint& p) {
            bind_common(type, p);
            if (p.value_case() == otlp_metrics::NumberDataPoint::kAsInt)
              sqlite3_bind_double(s, 5, static_cast<double>(p.as_int()));
            else
              sqlite3_bind_double(s, 5, p.as_double());
            return StepRow(s);
          };
          int rc = SQLITE_OK;
          switch (m.data_case()) {
            case otlp_metrics::Metric::kGauge:
              for (const auto& p : m.gauge().data_points())
                if ((rc = number("gauge", p)) != SQLITE_OK) return rc;
              break;
            case otlp_metrics::Metric::kSum:
              for (const auto& p : m.sum().data_points())
                if ((rc = number("sum", p)) != SQLITE_OK) return rc;
              break;
            case otlp_metrics::Metric::kHistogram:
              for (const auto& p : m.histogram().data_points()) {
                bind_common("histogram", p);
                if (p.has_sum()) sqlite3_bind_double(s, 5, p.sum());
                BindU64(s, 6, p.count());
                std::string data = "{\"bounds\":[";
                for (int i = 0; i < p.explicit_bounds_size(); ++i) {
                  if (i > 0) data.push_back(',');
                  otlp_json::AppendDouble(&data, p.explicit_bounds(i));
                }
                data += "],\"counts\":[";
                for (int i = 0; i < p.bucket_counts_size(); ++i)
                  fmt::format_to(std::back_inserter(data), "{}{}", i > 0 ? "," : "",
                                 p.bucket_counts(i));
                data += "]}";
                BindText(s, 7, data);
                if ((rc = StepRow(s)) != SQLITE_OK) return rc;
              }
              break;
            case otlp_metrics::Metric::kExponentialHistogram:
              for (const auto& p : m.exponential_histogram().data_points()) {
                bind_common("exponential_histogram", p);
                if (p.has_sum()) sqlite3_bind_double(s, 5, p.sum());
                BindU64(s, 6, p.count());
                if ((rc = StepRow(s)) != SQLITE_OK) return rc;
              }
              break;
            case otlp_metrics::Metric::kSummary:
              for (const auto& p : m.summary().data_points()) {
                bind_common("summary", p);
                sqlite3_bind_double(s, 5, p.sum());
                BindU64(s, 6, p.count());
                std::string data = "{\"quantiles\":[";
                for (int i = 0; i < p.quantile_values_size(); ++i) {
                  if (i > 0) data.push_back(',');
                  data += "{\"q\":";
                  otlp_json::AppendDouble(&data, p.quantile_values(i).quantile());
                  data += ",\"value\":";
                  otlp_json::AppendDouble(&data, p.quantile_values(i).value());
                  data.push_back('}');
                }
                data += "]}";
                BindText(s, 7, data);
                if ((rc = StepRow(s)) != SQLITE_OK) return rc;
              }
              break;
            default:
              break;
          }
        }
      }
    }
    return SQLITE_OK;
  });
}

std::uint64_t SqliteStore::UsedBytes() {
  auto pragma = [&](const char* sql) { return Count(sql); };
  const std::int64_t pages = pragma("PRAGMA page_count") - pragma("PRAGMA freelist_count");
  return static_cast<std::uint64_t>(std::max<std::int64_t>(pages, 0) * pragma("PRAGMA page_size"));
}

RetentionResult SqliteStore::EnforceRetention(std::uint64_t now_unix_nano) {
  PaceWritesOnThisThread paced(&pacer_);
  RetentionResult r;
  auto run = [&](const char* sql, std::int64_t arg) -> std::int64_t {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) != SQLITE_OK) return 0;
    sqlite3_bind_int64(s, 1, arg);
    std::int64_t n = sqlite3_step(s) == SQLITE_DONE ? sqlite3_changes64(db_) : 0;
    sqlite3_finalize(s);
    return n;
  };
  const auto max_age_ns = static_cast<std::uint64_t>(options_.max_age.count()) * 1'000'000'000ull;
  if (max_age_ns > 0 && now_unix_nano > max_age_ns) {
    const auto cutoff = static_cast<std::int64_t>(now_unix_nano - max_age_ns);
    r.spans_deleted += run("DELETE FROM spans WHERE start_time_unix_nano < ?", cutoff);
    r.logs_deleted += run("DELETE FROM logs WHERE time_unix_nano < ?", cutoff);
    r.metrics_deleted += run("DELETE FROM metrics WHERE time_unix_nano < ?", cutoff);
  }
  // Bounded: each round removes a tenth of what is left.
  for (int round = 0; round < 30 && options_.max_bytes > 0 && UsedBytes() > options_.max_bytes;
       ++round) {
    const std::int64_t spans = CountSpans();
    const std::int64_t logs = CountLogs();
    if (spans == 0 && logs == 0) break;
    r.spans_deleted += run(
        "DELETE FROM spans WHERE rowid IN (SELECT rowid FROM spans ORDER BY start_time_unix_nano "
        "LIMIT ?)",
        std::max<std::int64_t>(spans / 10, std::min<std::int64_t>(spans, 100)));
    r.logs_deleted += run(
        "DELETE FROM logs WHERE rowid IN (SELECT rowid FROM logs ORDER BY time_unix_nano LIMIT ?)",
        std::max<std::int64_t>(logs / 10, std::min<std::int64_t>(logs, 100)));
  }
  return r;
}

std::vector<std::string> SqliteStore::RecentTraceIds(std::size_t limit, std::string_view service) {
  // Newest first: spans in descending start order (the start index, read backwards), each
  // trace taken at its first, newest span, until `limit` traces. Grouping the whole table by
  // trace id instead took 0.75 s for 108k spans. With a service, the trace's newest span of
  // that service places it.
  std::vector<std::string> ids;
  if (limit == 0) return ids;
  sqlite3_stmt* s = nullptr;
  const char* sql =
      service.empty()
          ? "SELECT trace_id FROM spans ORDER BY start_time_unix_nano DESC"
          : "SELECT trace_id FROM spans WHERE service_name = ?1 ORDER BY start_time_unix_nano DESC";
  if (sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) != SQLITE_OK) return ids;
  if (!service.empty()) BindText(s, 1, service);
  std::unordered_set<std::string> seen;
  while (ids.size() < limit && sqlite3_step(s) == SQLITE_ROW) {
    std::string id = ColumnText(s, 0);
    if (seen.insert(id).second) ids.push_back(std::move(id));
  }
  sqlite3_finalize(s);
  return ids;
}

namespace {
// A span's columns as TraceSpans reads them (StoredSpan's fields, then the rowid).
constexpr std::string_view kSelectSpanRows =
    "SELECT trace_id, span_id, parent_span_id, name, kind, start_time_unix_nano, "
    "end_time_unix_nano, status_code, status_message, attributes, events, links, resource, "
    "scope, service_name, rowid FROM spans WHERE ";
// The trace, ?1 its id in hex, by the id's prefix that the trace index serves. `+trace_id`:
// with a plain `trace_id = ?1` SQLite propagates the constant into the other term
// (substr(?1, 1, 8) = substr(?1, 1, 8)), which then no longer matches the index, and scans
// the table instead.
constexpr std::string_view kMatchTraceId =
    "substr(trace_id, 1, 8) = substr(?1, 1, 8) AND +trace_id = ?1";
// For a store made before parts, opened read-only (no agent has added them yet).
const std::string kTraceSpansWithoutPartsSql =
    std::string(kSelectSpanRows) + std::string(kMatchTraceId);
}  // namespace

// One part's spans of a trace: ?2 the part, NULL for rows of a store made before parts.
const std::string kTraceSpansSql =
    std::string(kSelectSpanRows) + "trace_part IS ?2 AND " + std::string(kMatchTraceId);

std::vector<StoredSpan> SqliteStore::TraceSpans(std::string_view trace_id) {
  std::vector<std::pair<std::int64_t, StoredSpan>> rows;  // with their rowids
  auto read = [&](sqlite3_stmt* s) {
    while (sqlite3_step(s) == SQLITE_ROW) {
      StoredSpan sp;
      sp.trace_id = ColumnText(s, 0);
      sp.span_id = ColumnText(s, 1);
      sp.parent_span_id = ColumnText(s, 2);
      sp.name = ColumnText(s, 3);
      sp.kind = sqlite3_column_int(s, 4);
      sp.start_time_unix_nano = sqlite3_column_int64(s, 5);
      sp.end_time_unix_nano = sqlite3_column_int64(s, 6);
      sp.status_code = sqlite3_column_int(s, 7);
      sp.status_message = ColumnText(s, 8);
      sp.attributes = ColumnText(s, 9);
      sp.events = ColumnText(s, 10);
      sp.links = ColumnText(s, 11);
      sp.resource = ColumnText(s, 12);
      sp.scope = ColumnText(s, 13);
      sp.service_name = ColumnText(s, 14);
      rows.emplace_back(sqlite3_column_int64(s, 15), std::move(sp));
    }
    sqlite3_reset(s);
  };
  sqlite3_stmt* s = nullptr;
  if (!HasTracePart()) {
    if (sqlite3_prepare_v2(db_, kTraceSpansWithoutPartsSql.c_str(), -1, &s, nullptr) != SQLITE_OK)
      return {};
    BindText(s, 1, trace_id);
    read(s);
  } else {
    if (sqlite3_prepare_v2(db_, kTraceSpansSql.c_str(), -1, &s, nullptr) != SQLITE_OK) return {};
    BindText(s, 1, trace_id);
    read(s);  // ?2 NULL: rows of a store made before parts
    // Part by part, each found by one seek in the index: only the parts that have rows, so
    // that rows far apart (a span with a start time that retention does not reach yet, among
    // rows written much later) do not make the lookup walk the numbers between them.
    sqlite3_stmt* next = nullptr;
    if (sqlite3_prepare_v2(db_, "SELECT min(trace_part) FROM spans WHERE trace_part > ?1", -1,
                           &next, nullptr) == SQLITE_OK) {
      std::int64_t after = std::numeric_limits<std::int64_t>::min();
      while (sqlite3_bind_int64(next, 1, after) == SQLITE_OK && sqlite3_step(next) == SQLITE_ROW &&
             sqlite3_column_type(next, 0) != SQLITE_NULL) {
        after = sqlite3_column_int64(next, 0);
        sqlite3_reset(next);
        sqlite3_bind_int64(s, 2, after);
        read(s);
      }
    }
    sqlite3_finalize(next);
  }
  sqlite3_finalize(s);
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return std::tie(a.second.start_time_unix_nano, a.first) <
           std::tie(b.second.start_time_unix_nano, b.first);
  });
  std::vector<StoredSpan> out;
  out.reserve(rows.size());
  for (auto& r : rows) out.push_back(std::move(r.second));
  return out;
}

// ---- exporters ----

namespace {

// Rows per transaction when rows come faster than the schedule delay. Each export is one
// transaction, and its cost per row falls with the rows: a commit writes every page it
// dirtied to the WAL once, and the trace id index takes its inserts at random places, so 512
// rows dirtied nearly one index page each. Measured (docs/performance.md, "Larger store
// transactions and a shorter trace index"): at saturation the store lane's CPU per row fell
// from about 30 to 25 µs.
constexpr std::size_t kStoreBatchRows = 4096;

template <typename Request>
class StoreExporter final : public pipeline::Exporter<Request> {
 public:
  StoreExporter(std::unique_ptr<SqliteStore> store, std::shared_ptr<StoreHealth> health)
      : store_(std::move(store)), health_(std::move(health)) {
    if (health_) epoch_ = health_->Opened();
  }
  std::string_view Name() const noexcept override { return "store"; }
  std::size_t BatchItems(std::size_t configured) const noexcept override {
    return std::max(configured, kStoreBatchRows);
  }

  pipeline::ExportResult Export(const Request& request) noexcept override {
    try {
      std::string error;
      if (!Writable(&error)) return pipeline::ExportResult::Permanent(std::move(error));
      bool busy = false;
      bool ok;
      if constexpr (std::is_same_v<Request, TracesRequest>)
        ok = store_->InsertTraces(request, &error, &busy);
      else if constexpr (std::is_same_v<Request, LogsRequest>)
        ok = store_->InsertLogs(request, &error, &busy);
      else
        ok = store_->UpsertMetrics(request, &error, &busy);
      if (health_ && !Reported(ok, &error))
        return pipeline::ExportResult::Permanent(std::move(error));
      MaybeCleanup();
      if (ok) return pipeline::ExportResult::Ok();
      return busy ? pipeline::ExportResult::Retryable(std::move(error))
                  : pipeline::ExportResult::Permanent(std::move(error));
    } catch (const std::exception& e) {
      return pipeline::ExportResult::Retryable(e.what());
    }
  }

  void Shutdown() noexcept override { store_.reset(); }
  void UsePacer(pipeline::Pacer pacer) noexcept override { store_->SetPacer(pacer); }

 private:
  // The store_health.h hooks before a write: false and *error when the batch is to be dropped
  // (a fault), after reopening the store when the health asks for it.
  bool Writable(std::string* error) {
    if (!health_) return true;
    switch (health_->BeforeWrite(epoch_)) {
      case StoreHealth::Gate::kWrite:
        return true;
      case StoreHealth::Gate::kDrop:
        *error = health_->Describe();
        return false;
      case StoreHealth::Gate::kReopen:
        break;
    }
    auto fresh = std::make_unique<SqliteStore>();
    if (!fresh->Open(store_->options(), error)) {
      health_->AfterWriteFailed(ClassifySqliteFailure(fresh->handle()), *error);
      return false;
    }
    fresh->SetPacer(store_->pacer());
    // The old connection closes. On a file that was unlinked SQLite skips the checkpoint and
    // leaves the WAL by that name alone (pager.c, databaseIsUnmoved): a new store's is safe.
    store_ = std::move(fresh);
    epoch_ = health_->Opened();
    return true;
  }
  // The hooks after a write: false when its batch is lost (written into an unlinked file).
  bool Reported(bool ok, std::string* error) {
    if (!ok) {
      health_->AfterWriteFailed(ClassifySqliteFailure(store_->handle()), *error);
      return true;
    }
    if (health_->AfterWriteOk()) return true;
    *error = health_->Describe();
    return false;
  }

  void MaybeCleanup() {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_cleanup_ < store_->options().cleanup_interval) return;
    last_cleanup_ = now;
    store_->EnforceRetention(WallNanos());
  }

  std::unique_ptr<SqliteStore> store_;
  std::shared_ptr<StoreHealth> health_;  // null: no fault handling (tests)
  std::uint64_t epoch_ = 0;
  std::chrono::steady_clock::time_point last_cleanup_{};
};

template <typename Request>
std::unique_ptr<pipeline::Exporter<Request>> MakeStoreExporter(const StoreOptions& options,
                                                               std::shared_ptr<StoreHealth> health,
                                                               std::string* error) {
  StoreOptions o = options;
  o.read_only = false;
  auto store = std::make_unique<SqliteStore>();
  if (!store->Open(o, error)) return nullptr;
  return std::make_unique<StoreExporter<Request>>(std::move(store), std::move(health));
}

}  // namespace

std::unique_ptr<pipeline::TraceExporter> MakeStoreTraceExporter(
    const StoreOptions& options, std::string* error, std::shared_ptr<StoreHealth> health) {
  return MakeStoreExporter<TracesRequest>(options, std::move(health), error);
}
std::unique_ptr<pipeline::LogExporter> MakeStoreLogExporter(const StoreOptions& options,
                                                            std::string* error,
                                                            std::shared_ptr<StoreHealth> health) {
  return MakeStoreExporter<LogsRequest>(options, std::move(health), error);
}
std::unique_ptr<pipeline::MetricExporter> MakeStoreMetricExporter(
    const StoreOptions& options, std::string* error, std::shared_ptr<StoreHealth> health) {
  return MakeStoreExporter<MetricsRequest>(options, std::move(health), error);
}

}  // namespace infertel::exporting
