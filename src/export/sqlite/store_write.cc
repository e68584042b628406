// The store's writes: spans and log records into the current partition (their text in
// compressed blocks), metric points into metrics.db.
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>

#include "absl/container/flat_hash_set.h"

#include "core/clock.h"
#include "core/hex.h"
#include "core/semconv.h"
#include "export/sqlite/block.h"
#include "export/sqlite/paced_vfs.h"
#include "export/sqlite/partition.h"
#include "export/sqlite/record_attributes.h"
#include "export/sqlite/sqlite_store.h"
#include "export/sqlite/store_health.h"
#include "export/sqlite/store_internal.h"
#include "otlp/json_util.h"

namespace infertel::exporting {

using namespace store_internal;

namespace store_internal {

void LogStoreProblem(std::string_view what) {
  static std::mutex mu;
  static std::chrono::steady_clock::time_point last{};
  static std::uint64_t suppressed = 0;
  std::lock_guard lock(mu);
  const auto now = std::chrono::steady_clock::now();
  if (last != std::chrono::steady_clock::time_point{} && now - last < std::chrono::seconds(10)) {
    ++suppressed;
    return;
  }
  spdlog::warn("store: {}{}", what,
               suppressed ? fmt::format(" ({} more since the last message)", suppressed) : "");
  last = now;
  suppressed = 0;
}

// SQLite keeps allocation statistics by default, behind a process-wide mutex taken on every
// malloc and free; nothing here reads them. Off, the store lane's locking of that mutex (about
// 4 % of its CPU, docs/performance-history.md) goes. Only possible before SQLite initializes
// itself.
void ConfigureSqliteOnce() {
  static std::once_flag once;
  std::call_once(once, [] { sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); });
}

std::int64_t IdHalf(std::string_view bytes, std::size_t offset) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < 8; ++i)
    v = (v << 8) | (offset + i < bytes.size() ? static_cast<std::uint8_t>(bytes[offset + i]) : 0);
  return static_cast<std::int64_t>(v);
}

void AppendIdHex(std::string* out, std::int64_t half) {
  fmt::format_to(std::back_inserter(*out), "{:016x}", static_cast<std::uint64_t>(half));
}

}  // namespace store_internal

namespace {

// Spans (log records) per block: large enough that zstd finds the repeats across spans, small
// enough that reading one trace decompresses little (docs/store.md, "Figures").
constexpr std::uint32_t kBlockItems = 512;
constexpr std::size_t kSummarizedTraces = 1 << 16;
// Both halves of a trace id into the key of summarized_, in unsigned arithmetic (a signed
// product overflows: undefined behaviour, which UBSan reported).
constexpr std::uint64_t kMix = 0x1E3779B97F4A7C15;
std::int64_t TraceKey(std::int64_t tid, std::int64_t tid2) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(tid) ^
                                   (static_cast<std::uint64_t>(tid2) * kMix));
}
// What a write adds to the files at most, for the bound: every page a transaction touches is
// written whole to the WAL (a few for the smallest), then a block's compressed bytes and its
// rows (a span's row, its index entry and its share of summary rows, about 150 bytes).
constexpr std::uint64_t kWriteBaseBytes = 32 * 1024;
constexpr std::uint64_t kRowBytes = 200;

bool IsNullId(std::string_view bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](char c) { return c == 0; });
}

std::string ServiceName(const Resource& r) {
  const AnyValue* v = FindAttr(r.attributes(), semconv::kServiceName);
  return v != nullptr && v->has_string_value() ? v->string_value() : std::string();
}

std::string_view StringAttr(const Span& span, std::string_view key) {
  const AnyValue* v = FindAttr(span.attributes(), key);
  return v != nullptr && v->has_string_value() ? std::string_view(v->string_value())
                                               : std::string_view();
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

bool IsBusy(int rc) {
  rc &= 0xff;
  return rc == SQLITE_BUSY || rc == SQLITE_LOCKED;
}

// The rows of the block being filled, inserted once the block has its id. It starts from the
// store's open block when there is one: that block is written again with the new records after
// its own, and its earlier rows keep pointing at their slots.
class SpanBlock {
 public:
  // `written(bytes)` is told what a block will add (the bound's estimate) before it goes in,
  // and `written(0)` once it is in.
  SpanBlock(Partition* p, BlockPacker* packer, SqliteStore::OpenBlock* open,
            std::function<int(std::uint64_t)> written)
      : p_(p), packer_(packer), written_(std::move(written)) {
    std::swap(id_, open->id);
    std::swap(w_, open->records);
    packed_before_ = w_.records();
  }
  block::Writer& records() { return w_; }
  void Add(SpanRow row) { rows_.push_back(row); }
  bool full() const { return w_.records() >= kBlockItems; }
  int Flush(int signal, std::uint64_t* items) {
    if (w_.records() == packed_before_) return SQLITE_OK;
    std::string packed;
    std::int64_t zdict = 0;
    if (int rc = packer_->Pack(p_, w_, packed_before_, &PaceBetweenRows, &packed, &zdict);
        rc != SQLITE_OK)
      return rc;
    // Room first: the oldest files go before the block could take the store past its bound.
    if (int rc = written_(kWriteBaseBytes + packed.size() + kRowBytes * rows_.size());
        rc != SQLITE_OK)
      return rc;
    const int rc = id_ != 0 ? p_->ReplaceBlock(id_, w_.records(), packed, zdict)
                            : p_->AddBlock(signal, static_cast<std::int64_t>(WallNanos()),
                                           w_.records(), packed, zdict, &id_);
    if (rc != SQLITE_OK) return rc;
    for (auto& r : rows_) r.block = id_;
    if (int rc = p_->AddSpans(rows_, &PaceBetweenRows); rc != SQLITE_OK) return rc;
    *items += rows_.size();
    rows_.clear();
    packed_before_ = w_.records();
    if (full()) {
      id_ = 0;
      w_.Clear();
      packed_before_ = 0;
    }
    return written_(0);
  }
  // After the last Flush: a block with room stays open for the next transaction.
  void KeepOpen(SqliteStore::OpenBlock* open) {
    if (id_ == 0) return;
    open->id = id_;
    open->records = std::move(w_);
  }

 private:
  Partition* p_;
  BlockPacker* packer_;
  std::function<int(std::uint64_t)> written_;
  std::int64_t id_ = 0;  // the block's id once it is in the partition
  block::Writer w_;
  std::uint32_t packed_before_ = 0;  // records already in the partition's copy of the block
  std::vector<SpanRow> rows_;
};

// Fills a span's row and block record. Interning failures return their SQLite code.
int EncodeSpan(Partition* p, const Span& span, std::int64_t resource, std::int64_t scope,
               std::int64_t service, std::string* json, SpanBlock* out, SpanRow* row) {
  row->tid = IdHalf(span.trace_id(), 0);
  row->tid2 = IdHalf(span.trace_id(), 8);
  row->span = IdHalf(span.span_id(), 0);
  row->root = IsNullId(span.parent_span_id());
  row->parent = row->root ? 0 : IdHalf(span.parent_span_id(), 0);
  row->start = static_cast<std::int64_t>(span.start_time_unix_nano());
  row->dur = static_cast<std::int64_t>(span.end_time_unix_nano() - span.start_time_unix_nano());
  row->status = static_cast<int>(span.status().code());
  row->service = service;
  if (int rc = p->Intern(span.name(), &row->name); rc != SQLITE_OK) return rc;
  block::Writer& w = out->records();
  row->slot = w.NextRecord();
  w.Varint(static_cast<std::uint64_t>(span.kind()));
  w.Bytes(span.status().message());
  json->clear();
  AppendRecordAttributes(json, span.attributes());
  w.Bytes(*json);
  json->clear();
  AppendEventsJson(json, span);
  w.Bytes(*json);
  json->clear();
  AppendLinksJson(json, span);
  w.Bytes(*json);
  w.Varint(static_cast<std::uint64_t>(resource));
  w.Varint(static_cast<std::uint64_t>(scope));
  w.Varint(span.dropped_attributes_count());
  w.Varint(span.dropped_events_count());
  w.Varint(span.dropped_links_count());
  return SQLITE_OK;
}

// A local root's summary row (partition.h): model, operation and tenant from its attributes.
// Summaries are inserted kRowsPerInsert at a time: the last few by Flush.
class Summaries {
 public:
  explicit Summaries(Partition* p) : p_(p) {}
  int Add(const TraceRow& t) {
    rows_.push_back(t);
    return rows_.size() >= Partition::kRowsPerInsert ? Flush() : SQLITE_OK;
  }
  int Flush() {
    const int rc = p_->AddTraces(rows_);
    rows_.clear();
    return rc;
  }

 private:
  Partition* p_;
  std::vector<TraceRow> rows_;
};

int AddSummary(Partition* p, const Span& span, const SpanRow& row, Summaries* out) {
  TraceRow t;
  t.tid = row.tid;
  t.tid2 = row.tid2;
  t.start = row.start;
  t.dur = row.dur;
  t.status = row.status;
  t.name = row.name;
  t.service = row.service;
  if (auto m = StringAttr(span, semconv::kGenAiRequestModel); !m.empty())
    if (int rc = p->Intern(m, &t.model); rc != SQLITE_OK) return rc;
  if (auto o = StringAttr(span, semconv::kGenAiOperationName); !o.empty())
    if (int rc = p->Intern(o, &t.operation); rc != SQLITE_OK) return rc;
  if (auto tenant = StringAttr(span, semconv::kInfertelTenant); !tenant.empty())
    if (int rc = p->Intern(tenant, &t.tenant); rc != SQLITE_OK) return rc;
  return out->Add(t);
}

// Span ids of a request, to tell its local roots (a parent not among them). Open addressing,
// sized once: a node per span was an allocation and a free per row on the store lane.
absl::flat_hash_set<std::int64_t> SpanIds(const TracesRequest& request, std::size_t spans) {
  absl::flat_hash_set<std::int64_t> ids;
  ids.reserve(spans);
  for (const auto& rs : request.resource_spans())
    for (const auto& ss : rs.scope_spans())
      for (const auto& span : ss.spans()) ids.insert(IdHalf(span.span_id(), 0));
  return ids;
}

std::size_t SpansIn(const TracesRequest& request) {
  std::size_t n = 0;
  for (const auto& rs : request.resource_spans())
    for (const auto& ss : rs.scope_spans()) n += static_cast<std::size_t>(ss.spans_size());
  return n;
}

std::size_t LogsIn(const LogsRequest& request) {
  std::size_t n = 0;
  for (const auto& rl : request.resource_logs())
    for (const auto& sl : rl.scope_logs()) n += static_cast<std::size_t>(sl.log_records_size());
  return n;
}

}  // namespace

int SqliteStore::WriteSpans(const TracesRequest& request) {
  Partition* p = current_.get();
  // One summary row per trace in a partition, mostly: the traces summarized lately are
  // remembered, a bounded number (past it a trace may get a second row; queries take each
  // trace once).
  if (summarized_.size() > kSummarizedTraces) summarized_.clear();
  const auto ids = SpanIds(request, SpansIn(request));
  SpanBlock blk(p, &packer_, &open_spans_,
                [this](std::uint64_t bytes) { return BlockWritten(bytes); });
  Summaries summaries(p);
  std::string json;
  std::uint64_t written = 0;
  for (const auto& rs : request.resource_spans()) {
    std::int64_t resource = 0, service = 0;
    std::string res_json = otlp_json::PlainAttributes(rs.resource().attributes());
    if (int rc = p->Intern(res_json, &resource); rc != SQLITE_OK) return rc;
    if (int rc = p->Intern(ServiceName(rs.resource()), &service); rc != SQLITE_OK) return rc;
    for (const auto& ss : rs.scope_spans()) {
      std::int64_t scope = 0;
      if (int rc = p->Intern(ss.scope().name(), &scope); rc != SQLITE_OK) return rc;
      for (const auto& span : ss.spans()) {
        SpanRow row;
        if (int rc = EncodeSpan(p, span, resource, scope, service, &json, &blk, &row);
            rc != SQLITE_OK)
          return rc;
        if ((row.root || !ids.count(row.parent)) &&
            summarized_.insert(TraceKey(row.tid, row.tid2)).second)
          if (int rc = AddSummary(p, span, row, &summaries); rc != SQLITE_OK) return rc;
        blk.Add(row);
        PaceBetweenRows();
        if (blk.full())
          if (int rc = blk.Flush(0, &written); rc != SQLITE_OK) return rc;
      }
    }
  }
  if (int rc = summaries.Flush(); rc != SQLITE_OK) return rc;
  const int rc = blk.Flush(0, &written);
  pending_spans_ = written;
  if (rc == SQLITE_OK) blk.KeepOpen(&open_spans_);
  return rc;
}

int SqliteStore::WriteLogs(const LogsRequest& request) {
  Partition* p = current_.get();
  block::Writer w;
  std::vector<LogRow> rows;
  std::uint64_t written = 0;
  auto flush = [&]() -> int {
    if (w.records() == 0) return SQLITE_OK;
    std::string packed;
    std::int64_t zdict = 0, id = 0;
    if (int rc = packer_.Pack(p, w, 0, &PaceBetweenRows, &packed, &zdict); rc != SQLITE_OK)
      return rc;
    if (int rc = BlockWritten(kWriteBaseBytes + packed.size() + kRowBytes * rows.size());
        rc != SQLITE_OK)
      return rc;
    if (int rc =
            p->AddBlock(1, static_cast<std::int64_t>(WallNanos()), w.records(), packed, zdict, &id);
        rc != SQLITE_OK)
      return rc;
    for (auto& r : rows) {
      r.block = id;
      if (int rc = p->AddLog(r); rc != SQLITE_OK) return rc;
      PaceBetweenRows();
    }
    written += rows.size();
    rows.clear();
    w.Clear();
    return BlockWritten(0);
  };
  std::string json;
  for (const auto& rl : request.resource_logs()) {
    std::int64_t resource = 0;
    if (int rc = p->Intern(otlp_json::PlainAttributes(rl.resource().attributes()), &resource);
        rc != SQLITE_OK)
      return rc;
    // The service goes into the record: logs are read whole (Logs), never filtered by it.
    const std::string service = ServiceName(rl.resource());
    for (const auto& sl : rl.scope_logs()) {
      for (const auto& lr : sl.log_records()) {
        LogRow row;
        row.time = static_cast<std::int64_t>(
            lr.time_unix_nano() != 0 ? lr.time_unix_nano() : lr.observed_time_unix_nano());
        row.has_trace = !lr.trace_id().empty() && !IsNullId(lr.trace_id());
        row.tid = IdHalf(lr.trace_id(), 0);
        row.tid2 = IdHalf(lr.trace_id(), 8);
        row.has_span = !lr.span_id().empty() && !IsNullId(lr.span_id());
        row.span = IdHalf(lr.span_id(), 0);
        row.severity = static_cast<int>(lr.severity_number());
        const AnyValue* ev = FindAttr(lr.attributes(), semconv::kEventName);
        if (ev != nullptr && ev->has_string_value())
          if (int rc = p->Intern(ev->string_value(), &row.event); rc != SQLITE_OK) return rc;
        row.slot = w.NextRecord();
        w.Signed(static_cast<std::int64_t>(lr.observed_time_unix_nano()));
        w.Bytes(lr.severity_text());
        json.clear();
        otlp_json::AppendPlainValue(&json, lr.body());
        w.Bytes(json);
        json.clear();
        otlp_json::AppendPlainAttributes(&json, lr.attributes());
        w.Bytes(json);
        w.Varint(static_cast<std::uint64_t>(resource));
        w.Bytes(sl.scope().name());
        w.Bytes(service);
        rows.push_back(row);
        if (w.records() >= kBlockItems)
          if (int rc = flush(); rc != SQLITE_OK) return rc;
      }
    }
  }
  const int rc = flush();
  pending_logs_ = written;
  return rc;
}

// Runs `write` in one transaction on the current partition, after making room for `items`.
template <typename Write>
bool SqliteStore::Transaction(std::size_t items, std::string* error, bool* busy, Write&& write) {
  if (busy) *busy = false;
  std::optional<PaceWritesOnThisThread> paced;
  if (!ThreadIsPaced()) paced.emplace(&pacer_);
  (void)items;
  pending_bytes_ = 2 * kWriteBaseBytes;
  MakeRoom(pending_bytes_);
  if (current_ == nullptr) {
    std::string open_error;
    if (!StartPartition(&open_error)) {
      last_fault_ = static_cast<std::uint8_t>(StoreFault::kIoError);
      *error = open_error;
      return false;
    }
  }
  int rc = current_->Begin();
  if (rc == SQLITE_OK) {
    rc = write();
    if (rc == SQLITE_OK) rc = current_->Commit();
    if (rc != SQLITE_OK) current_->Rollback();
  }
  if (rc != SQLITE_OK) {
    pending_spans_ = pending_logs_ = 0;
    summarized_.clear();   // some may not have been committed
    open_spans_ = {};      // nor the open block's last records
    packer_.RolledBack();  // and the dictionary's row with them
    if (busy) *busy = IsBusy(rc);
    last_fault_ = static_cast<std::uint8_t>(ClassifySqliteFailure(current_->db()));
    *error = fmt::format("store {}: {}", current_->path(), sqlite3_errmsg(current_->db()));
    LogStoreProblem(*error);
    return false;
  }
  current_spans_ += pending_spans_;
  current_logs_ += pending_logs_;
  pending_spans_ = pending_logs_ = 0;
  AfterCommit();
  return true;
}

bool SqliteStore::InsertTraces(const TracesRequest& request, std::string* error, bool* busy) {
  std::lock_guard lock(mu_);
  return Transaction(SpansIn(request), error, busy, [&] { return WriteSpans(request); });
}

bool SqliteStore::InsertLogs(const LogsRequest& request, std::string* error, bool* busy) {
  std::lock_guard lock(mu_);
  return Transaction(LogsIn(request), error, busy, [&] { return WriteLogs(request); });
}

// The bound within a write, called with a block's estimate before it goes in and with 0 after:
// a block's bytes count twice until the commit's checkpoint (once in the WAL, once in the file
// it is copied into), and the oldest files go before they could exceed it. A write larger than a
// sixteenth of the bound commits in parts: a transaction cannot make room for itself once it is
// under way, short of removing the file it writes.
int SqliteStore::BlockWritten(std::uint64_t bytes) {
  pending_bytes_ += 2 * bytes;
  if (pending_bytes_ > options_.max_bytes / 16 && options_.max_bytes > 0) {
    if (int rc = current_->Commit(); rc != SQLITE_OK) return rc;
    AfterCommit();
    // The block about to go in belongs to the next part: its estimate stays counted.
    pending_bytes_ = 2 * (kWriteBaseBytes + bytes);
    if (int rc = current_->Begin(); rc != SQLITE_OK) return rc;
  }
  RemoveUntilFits(pending_bytes_);
  return SQLITE_OK;
}

// The WAL counts against the bound: once past its limit, a checkpoint folds it into the file
// and truncates it (unless a reader still needs it; then the next commit tries again).
void SqliteStore::AfterCommit() {
  if (FileBytes(current_->path() + "-wal") > WalLimit())
    sqlite3_wal_checkpoint_v2(current_->db(), nullptr, SQLITE_CHECKPOINT_TRUNCATE, nullptr,
                              nullptr);
}

}  // namespace infertel::exporting
