#include "export/sqlite/partition.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <initializer_list>
#include <optional>

#include "export/sqlite/block.h"
#include "export/sqlite/store_internal.h"

namespace infertel::exporting {
namespace {

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS dict (id INTEGER PRIMARY KEY, text TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS blocks (id INTEGER PRIMARY KEY, signal INTEGER NOT NULL,
  arrival INTEGER NOT NULL, items INTEGER NOT NULL, data BLOB NOT NULL,
  zdict INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS zdicts (id INTEGER PRIMARY KEY, data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS spans (part INTEGER NOT NULL, tid INTEGER NOT NULL,
  tid2 INTEGER NOT NULL, span INTEGER NOT NULL, parent INTEGER, start INTEGER NOT NULL,
  dur INTEGER NOT NULL, status INTEGER NOT NULL, name INTEGER NOT NULL,
  service INTEGER NOT NULL, block INTEGER NOT NULL, slot INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS spans_trace ON spans (part, tid);
CREATE TABLE IF NOT EXISTS traces (tid INTEGER NOT NULL, tid2 INTEGER NOT NULL,
  start INTEGER NOT NULL, dur INTEGER NOT NULL, status INTEGER NOT NULL, name INTEGER NOT NULL,
  model INTEGER, operation INTEGER, service INTEGER, tenant INTEGER);
CREATE INDEX IF NOT EXISTS traces_model ON traces (model);
-- Error traces only: a page of them is found through it however rare they are, a page of any
-- other status (nearly every trace) by reading the table backwards. An index of every status
-- cost each trace an insert on the store lane.
CREATE INDEX IF NOT EXISTS traces_error ON traces (status) WHERE status = 2;
CREATE TABLE IF NOT EXISTS logs (time INTEGER NOT NULL, tid INTEGER, tid2 INTEGER,
  span INTEGER, severity INTEGER NOT NULL, event INTEGER, block INTEGER NOT NULL,
  slot INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS logs_trace ON logs (tid);
)sql";

constexpr std::size_t kMaxCached = 65536;
constexpr std::size_t kMaxBlockBytes = 256u << 20;
constexpr std::size_t kMaxDictionaryBytes = 1u << 20;
constexpr std::size_t kMaxDictionaries = 16;
constexpr int kDictionaryLevel = 19;  // once per partition, a few dozen KiB
// 4 KiB pages: with the dictionary a demo block is about 1.7 KiB and two fit in a page, and
// each of the eleven tables and indexes costs one page when nearly empty. Measured on the demo
// (docs/store.md): 167 bytes per span with 4 KiB pages, 171 with 8, 186 with 16.
constexpr int kPageSize = 4096;

// "INSERT OR FAIL INTO table (columns) VALUES (?1,..,?n),(..)..": `rows` rows of `cols`
// columns. OR FAIL, not the default ABORT: a statement writing several rows that may abort makes
// SQLite keep a statement journal to undo its first rows, and that journal spilled to a file
// (measured at saturation: the store lane's CPU per span up by a quarter, most of it in the
// kernel). Nothing here can fail a constraint, and a failure rolls the whole transaction back.
std::string MultiRowInsert(const char* table_and_columns, int cols, std::size_t rows) {
  std::string sql = fmt::format("INSERT OR FAIL INTO {} VALUES ", table_and_columns);
  for (std::size_t r = 0; r < rows; ++r) {
    sql += r == 0 ? "(" : ",(";
    for (int c = 1; c <= cols; ++c)
      fmt::format_to(std::back_inserter(sql), "{}?{}", c == 1 ? "" : ",", r * cols + c);
    sql += ")";
  }
  return sql;
}

constexpr const char* kSpanInsert =
    "spans (part, tid, tid2, span, parent, start, dur, status, name, service, block, slot)";
constexpr int kSpanColumns = 12;
constexpr const char* kTraceInsert =
    "traces (tid, tid2, start, dur, status, name, model, operation, service, tenant)";
constexpr int kTraceColumns = 10;

std::int64_t QueryInt(sqlite3* db, const char* sql) {
  sqlite3_stmt* s = nullptr;
  std::int64_t v = 0;
  if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
    v = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  return v;
}

}  // namespace

std::unique_ptr<Partition> Partition::Open(const std::string& path, bool write, const char* vfs,
                                           std::string* error) {
  std::unique_ptr<Partition> p(new Partition());
  p->path_ = path;
  const int flags = (write ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READONLY) |
                    SQLITE_OPEN_NOMUTEX;
  const int rc = sqlite3_open_v2(path.c_str(), &p->db_, flags, write ? vfs : nullptr);
  if (rc != SQLITE_OK) {
    *error = fmt::format("open {}: {}", path, p->db_ ? sqlite3_errmsg(p->db_) : sqlite3_errstr(rc));
    return nullptr;
  }
  sqlite3_busy_timeout(p->db_, 5000);
  if (!p->Init(write, error)) return nullptr;
  return p;
}

bool Partition::Init(bool write, std::string* error) {
  const std::int64_t app = QueryInt(db_, "PRAGMA application_id");
  const std::int64_t tables = QueryInt(db_, "SELECT count(*) FROM sqlite_schema");
  if (tables > 0 && app != kPartitionAppId) {
    *error = fmt::format("{} is not a file of infertel's store", path_);
    return false;
  }
  if (write) {
    const std::string pragmas = fmt::format(
        "PRAGMA page_size={}; PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
        "PRAGMA cache_size=-8192; PRAGMA application_id={}; PRAGMA user_version={};",
        kPageSize, kPartitionAppId, kPartitionFormat);
    char* msg = nullptr;
    if (sqlite3_exec(db_, (pragmas + kSchema).c_str(), nullptr, nullptr, &msg) != SQLITE_OK) {
      *error = fmt::format("store {}: {}", path_, msg ? msg : sqlite3_errmsg(db_));
      sqlite3_free(msg);
      return false;
    }
    intern_ = Prepare("INSERT INTO dict (text) VALUES (?1)");
    block_ =
        Prepare("INSERT INTO blocks (signal, arrival, items, data, zdict) VALUES (?1,?2,?3,?4,?5)");
    replace_block_ = Prepare("UPDATE blocks SET items = ?2, data = ?3, zdict = ?4 WHERE id = ?1");
    zdict_ = Prepare("INSERT INTO zdicts (data) VALUES (?1)");
    span_ = Prepare(MultiRowInsert(kSpanInsert, kSpanColumns, 1).c_str());
    spans_ = Prepare(MultiRowInsert(kSpanInsert, kSpanColumns, kRowsPerInsert).c_str());
    trace_ = Prepare(MultiRowInsert(kTraceInsert, kTraceColumns, 1).c_str());
    traces_ = Prepare(MultiRowInsert(kTraceInsert, kTraceColumns, kRowsPerInsert).c_str());
    log_ = Prepare(
        "INSERT INTO logs (time, tid, tid2, span, severity, event, block, slot) "
        "VALUES (?1,?2,?3,?4,?5,?6,?7,?8)");
    next_span_rowid_ = MaxRowid("spans") + 1;
  } else if (QueryInt(db_, "PRAGMA user_version") > kPartitionFormat) {
    *error = fmt::format("{}: a newer store format than this infertel reads", path_);
    return false;
  }
  find_ = Prepare("SELECT id FROM dict WHERE text = ?1");
  text_ = Prepare("SELECT text FROM dict WHERE id = ?1");
  read_block_ = Prepare("SELECT data, zdict FROM blocks WHERE id = ?1");
  // Format 2 had no dictionaries.
  if (read_block_ == nullptr) read_block_ = Prepare("SELECT data, 0 FROM blocks WHERE id = ?1");
  read_zdict_ = Prepare("SELECT data FROM zdicts WHERE id = ?1");  // nullptr when dropped
  if (find_ == nullptr || text_ == nullptr || read_block_ == nullptr ||
      (write &&
       (intern_ == nullptr || block_ == nullptr || span_ == nullptr || spans_ == nullptr ||
        trace_ == nullptr || traces_ == nullptr || log_ == nullptr || zdict_ == nullptr))) {
    *error = fmt::format("store {}: {}", path_, sqlite3_errmsg(db_));
    return false;
  }
  return true;
}

Partition::~Partition() {
  for (sqlite3_stmt* s : prepared_) sqlite3_finalize(s);
  // With every statement finalized the connection closes now. A statement left open would make
  // it a zombie that never closes: its file descriptor, its page cache and, once retention has
  // removed the file, the file's disk space, held until the process ends.
  if (sqlite3_close(db_) != SQLITE_OK) {
    store_internal::LogStoreProblem(fmt::format("{}: closed with statements still open", path_));
    sqlite3_close_v2(db_);
  }
}

sqlite3_stmt* Partition::Prepare(const char* sql) {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr) != SQLITE_OK)
    return nullptr;
  prepared_.push_back(s);
  return s;
}

int Partition::Step(sqlite3_stmt* s) {
  const int rc = sqlite3_step(s);
  sqlite3_reset(s);
  sqlite3_clear_bindings(s);
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

int Partition::Begin() { return sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr); }
int Partition::Commit() { return sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr); }
void Partition::Rollback() {
  sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  // Ids cached during the transaction may not exist any more.
  ids_.clear();
  texts_.clear();
  next_span_rowid_ = MaxRowid("spans") + 1;
}

void Partition::LimitWal(std::uint64_t bytes) {
  const std::uint64_t pages = std::clamp<std::uint64_t>(bytes / 4096, 16, 1000);
  sqlite3_exec(
      db_,
      fmt::format("PRAGMA wal_autocheckpoint={}; PRAGMA journal_size_limit={}", pages, bytes)
          .c_str(),
      nullptr, nullptr, nullptr);
}

int Partition::Intern(std::string_view text, std::int64_t* id) {
  // Abseil's own string_view here (Debian builds it apart from std::string_view): a lookup
  // without a std::string.
  if (auto it = ids_.find(absl::string_view(text.data(), text.size())); it != ids_.end()) {
    *id = it->second;
    return SQLITE_OK;
  }
  if (ids_.size() >= kMaxCached) ids_.clear();
  *id = Find(text);
  if (*id == 0) {
    sqlite3_bind_text(intern_, 1, text.data(), static_cast<int>(text.size()), SQLITE_STATIC);
    if (int rc = Step(intern_); rc != SQLITE_OK) return rc;
    *id = sqlite3_last_insert_rowid(db_);
  }
  ids_.emplace(std::string(text), *id);
  return SQLITE_OK;
}

std::int64_t Partition::Find(std::string_view text) {
  sqlite3_bind_text(find_, 1, text.data(), static_cast<int>(text.size()), SQLITE_STATIC);
  std::int64_t id = 0;
  if (sqlite3_step(find_) == SQLITE_ROW) id = sqlite3_column_int64(find_, 0);
  sqlite3_reset(find_);
  return id;
}

int Partition::AddBlock(int signal, std::int64_t arrival, std::uint32_t items,
                        std::string_view packed, std::int64_t zdict, std::int64_t* id) {
  sqlite3_bind_int(block_, 1, signal);
  sqlite3_bind_int64(block_, 2, arrival);
  sqlite3_bind_int64(block_, 3, items);
  sqlite3_bind_blob(block_, 4, packed.data(), static_cast<int>(packed.size()), SQLITE_STATIC);
  sqlite3_bind_int64(block_, 5, zdict);
  const int rc = Step(block_);
  *id = sqlite3_last_insert_rowid(db_);
  return rc;
}

int Partition::ReplaceBlock(std::int64_t id, std::uint32_t items, std::string_view packed,
                            std::int64_t zdict) {
  sqlite3_bind_int64(replace_block_, 1, id);
  sqlite3_bind_int64(replace_block_, 2, items);
  sqlite3_bind_blob(replace_block_, 3, packed.data(), static_cast<int>(packed.size()),
                    SQLITE_STATIC);
  sqlite3_bind_int64(replace_block_, 4, zdict);
  return Step(replace_block_);
}

int Partition::AddDictionary(std::string_view bytes, std::int64_t* id) {
  const std::string packed = block::Compress(bytes, kDictionaryLevel);
  if (packed.empty()) return SQLITE_ERROR;
  sqlite3_bind_blob(zdict_, 1, packed.data(), static_cast<int>(packed.size()), SQLITE_STATIC);
  const int rc = Step(zdict_);
  *id = sqlite3_last_insert_rowid(db_);
  return rc;
}

block::Dictionary* Partition::Dictionary(std::int64_t id) {
  if (auto it = zdicts_.find(id); it != zdicts_.end()) return it->second.get();
  if (zdicts_.size() >= kMaxDictionaries) zdicts_.clear();
  std::unique_ptr<block::Dictionary> dict;
  if (read_zdict_ != nullptr) {
    sqlite3_bind_int64(read_zdict_, 1, id);
    std::string bytes;
    if (sqlite3_step(read_zdict_) == SQLITE_ROW) {
      const auto* p = static_cast<const char*>(sqlite3_column_blob(read_zdict_, 0));
      const int n = sqlite3_column_bytes(read_zdict_, 0);
      if (p != nullptr && block::Decompress(std::string_view(p, static_cast<std::size_t>(n)),
                                            &bytes, kMaxDictionaryBytes))
        dict = std::make_unique<block::Dictionary>(std::move(bytes));
    }
    sqlite3_reset(read_zdict_);
  }
  return zdicts_.emplace(id, std::move(dict)).first->second.get();
}

namespace {

// Binds `values` to the parameters of `s` from `at` (1-based) on; nullopt binds NULL.
void BindRow(sqlite3_stmt* s, int at, std::initializer_list<std::optional<std::int64_t>> values) {
  for (const auto& v : values) {
    if (v)
      sqlite3_bind_int64(s, at++, *v);
    else
      sqlite3_bind_null(s, at++);
  }
}

std::optional<std::int64_t> IdOrNull(std::int64_t id) {
  return id == 0 ? std::nullopt : std::optional(id);
}

// `r` as the row whose first parameter is `at`; `rowid` is the rowid it will get, for its
// trace index's part.
void BindSpan(sqlite3_stmt* s, int at, const SpanRow& r, std::int64_t rowid) {
  BindRow(s, at,
          {rowid >> kTracePartShift, r.tid, r.tid2, r.span,
           r.root ? std::nullopt : std::optional(r.parent), r.start, r.dur, r.status, r.name,
           r.service, r.block, r.slot});
}

void BindTrace(sqlite3_stmt* s, int at, const TraceRow& r) {
  BindRow(s, at,
          {r.tid, r.tid2, r.start, r.dur, r.status, r.name, IdOrNull(r.model),
           IdOrNull(r.operation), IdOrNull(r.service), IdOrNull(r.tenant)});
}

}  // namespace

int Partition::AddSpans(std::span<const SpanRow> rows, void (*between)()) {
  while (!rows.empty()) {
    // Rows are appended (never deleted from a partition): a statement's rows take the rowids
    // after the last one, in order.
    const std::size_t n = rows.size() >= kRowsPerInsert ? kRowsPerInsert : 1;
    sqlite3_stmt* s = n == 1 ? span_ : spans_;
    for (std::size_t i = 0; i < n; ++i)
      BindSpan(s, static_cast<int>(i) * kSpanColumns + 1, rows[i],
               next_span_rowid_ + static_cast<std::int64_t>(i));
    if (int rc = Step(s); rc != SQLITE_OK) return rc;
    next_span_rowid_ = sqlite3_last_insert_rowid(db_) + 1;
    rows = rows.subspan(n);
    if (between != nullptr) between();
  }
  return SQLITE_OK;
}

int Partition::AddTraces(std::span<const TraceRow> rows) {
  while (!rows.empty()) {
    const std::size_t n = rows.size() >= kRowsPerInsert ? kRowsPerInsert : 1;
    sqlite3_stmt* s = n == 1 ? trace_ : traces_;
    for (std::size_t i = 0; i < n; ++i)
      BindTrace(s, static_cast<int>(i) * kTraceColumns + 1, rows[i]);
    if (int rc = Step(s); rc != SQLITE_OK) return rc;
    rows = rows.subspan(n);
  }
  return SQLITE_OK;
}

int Partition::AddLog(const LogRow& r) {
  sqlite3_stmt* s = log_;
  sqlite3_bind_int64(s, 1, r.time);
  if (r.has_trace) {
    sqlite3_bind_int64(s, 2, r.tid);
    sqlite3_bind_int64(s, 3, r.tid2);
  }
  if (r.has_span) sqlite3_bind_int64(s, 4, r.span);
  BindRow(s, 5, {r.severity, IdOrNull(r.event), r.block, r.slot});
  return Step(s);
}

const std::string& Partition::Text(std::int64_t id) {
  static const std::string kEmpty;
  if (id == 0) return kEmpty;
  if (auto it = texts_.find(id); it != texts_.end()) return it->second;
  if (texts_.size() >= kMaxCached) texts_.clear();
  std::string text;
  sqlite3_bind_int64(text_, 1, id);
  if (sqlite3_step(text_) == SQLITE_ROW) {
    const auto* p = sqlite3_column_text(text_, 0);
    if (p != nullptr)
      text.assign(reinterpret_cast<const char*>(p),
                  static_cast<std::size_t>(sqlite3_column_bytes(text_, 0)));
  }
  sqlite3_reset(text_);
  return texts_.emplace(id, std::move(text)).first->second;
}

bool Partition::ReadBlock(std::int64_t id, std::string* raw) {
  sqlite3_bind_int64(read_block_, 1, id);
  bool ok = false;
  if (sqlite3_step(read_block_) == SQLITE_ROW) {
    const auto* p = static_cast<const char*>(sqlite3_column_blob(read_block_, 0));
    const int n = sqlite3_column_bytes(read_block_, 0);
    const std::int64_t zdict = sqlite3_column_int64(read_block_, 1);
    block::Dictionary* dict = zdict != 0 ? Dictionary(zdict) : nullptr;
    ok = p != nullptr && (zdict == 0 || dict != nullptr) &&
         block::Decompress(std::string_view(p, static_cast<std::size_t>(n)), raw, kMaxBlockBytes,
                           dict);
  }
  sqlite3_reset(read_block_);
  return ok;
}

std::int64_t Partition::MaxRowid(const char* table) {
  return QueryInt(db_, fmt::format("SELECT coalesce(max(rowid), 0) FROM {}", table).c_str());
}

}  // namespace infertel::exporting
