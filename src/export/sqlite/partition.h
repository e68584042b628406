#pragma once
// One file of the store: the spans and log records that arrived in one window of time (a
// partition). The store directory holds several (sqlite_store.h); retention removes a whole
// file. Each file is an ordinary SQLite database in WAL mode:
//
//   CREATE TABLE dict (id INTEGER PRIMARY KEY, text TEXT NOT NULL UNIQUE);
//     -- every repeated text once: span names, service names, models, operations, scope names,
//     -- resources (as JSON objects)
//   CREATE TABLE blocks (id INTEGER PRIMARY KEY, signal INTEGER NOT NULL, -- 0 spans, 1 logs
//                        arrival INTEGER NOT NULL,  -- unix ns when the agent wrote it
//                        items INTEGER NOT NULL, data BLOB NOT NULL,    -- zstd (block.h)
//                        zdict INTEGER NOT NULL DEFAULT 0);  -- its zstd dictionary, 0: none
//   CREATE TABLE zdicts (id INTEGER PRIMARY KEY, data BLOB NOT NULL);
//     -- zstd dictionaries (block.h), themselves zstd-compressed: trained from the records of
//     -- the first blocks, or the previous partition's, so that the file reads on its own
//   CREATE TABLE spans (part INTEGER NOT NULL,      -- rowid >> 16: the trace index's part
//                       tid INTEGER NOT NULL, tid2 INTEGER NOT NULL, -- trace id, two halves
//                       span INTEGER NOT NULL, parent INTEGER,       -- NULL for a root
//                       start INTEGER NOT NULL, dur INTEGER NOT NULL, -- unix ns; end - start
//                       status INTEGER NOT NULL, name INTEGER NOT NULL, service INTEGER NOT NULL,
//                       block INTEGER NOT NULL, slot INTEGER NOT NULL);
//   CREATE INDEX spans_trace ON spans (part, tid);
//   CREATE TABLE traces (tid, tid2, start, dur, status, name, model, operation, service, tenant);
//     -- a row per trace and partition: its first local root (a span whose parent is not in
//     -- the same export batch)
//   CREATE INDEX traces_model ON traces (model);
//   CREATE INDEX traces_error ON traces (status) WHERE status = 2;  -- error traces only
//   CREATE TABLE logs (time, tid, tid2, span, severity, event, block, slot);
//   CREATE INDEX logs_trace ON logs (tid);
//
// Ids (trace, span) are 8-byte halves read big-endian as signed integers; texts are dict ids.
// The block record of a span: kind, status message, attributes, events, links (JSON), resource
// and scope (dict ids), dropped attributes, events and links counts. Of a log record: observed
// time, severity text, body, attributes (JSON), resource, scope.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "export/sqlite/block.h"

struct sqlite3;
struct sqlite3_stmt;

namespace infertel::exporting {

// PRAGMA application_id of a partition ("infe"), and its format version (user_version).
constexpr std::int32_t kPartitionAppId = 0x696e6665;
constexpr std::int32_t kPartitionFormat = 4;  // 3: zstd dictionaries; 4: attributes as protobuf
// Rows per part of the trace index: a transaction's inserts stay within the newest part's
// pages instead of all over the index, and a trace by id costs one seek per part (docs/store.md:
// 2^13 rows gave 37 ms per trace with 10 million spans, 2^16 4.7 ms and 150k spans/s written).
constexpr int kTracePartShift = 16;

struct SpanRow {
  std::int64_t tid = 0, tid2 = 0, span = 0, parent = 0;
  bool root = true;
  std::int64_t start = 0, dur = 0;
  int status = 0;
  std::int64_t name = 0, service = 0, block = 0;
  std::uint32_t slot = 0;
};

struct TraceRow {
  std::int64_t tid = 0, tid2 = 0, start = 0, dur = 0;
  int status = 0;
  std::int64_t name = 0, model = 0, operation = 0, service = 0, tenant = 0;  // 0: none (NULL)
};

struct LogRow {
  std::int64_t time = 0;
  bool has_trace = false, has_span = false;
  std::int64_t tid = 0, tid2 = 0, span = 0;
  int severity = 0;
  std::int64_t event = 0;  // 0: none
  std::int64_t block = 0;
  std::uint32_t slot = 0;
};

class Partition {
 public:
  // Opens a partition file; `write` creates it and its schema if absent (through `vfs` when
  // not null). A file that is not a partition (another SQLite database) is refused.
  static std::unique_ptr<Partition> Open(const std::string& path, bool write, const char* vfs,
                                         std::string* error);
  ~Partition();
  Partition(const Partition&) = delete;
  Partition& operator=(const Partition&) = delete;

  sqlite3* db() { return db_; }
  const std::string& path() const { return path_; }

  // Writing; every call but Begin inside Begin .. Commit. SQLite result codes.
  int Begin();
  int Commit();
  void Rollback();
  // The dict id of `text`, added when new.
  int Intern(std::string_view text, std::int64_t* id);
  // A block compressed with dictionary `zdict` (an AddDictionary id; 0: none).
  int AddBlock(int signal, std::int64_t arrival, std::uint32_t items, std::string_view packed,
               std::int64_t zdict, std::int64_t* id);
  // Block `id` again, with more records after the ones it had (the store's open block).
  int ReplaceBlock(std::int64_t id, std::uint32_t items, std::string_view packed,
                   std::int64_t zdict);
  // Stores a zstd dictionary's bytes; `id` is what blocks compressed with it name.
  int AddDictionary(std::string_view bytes, std::int64_t* id);
  // Rows go in kRowsPerInsert to a statement: each statement's own work (its cursors opened
  // and closed, its reset) was about a third of a row's insert on the store lane.
  static constexpr std::size_t kRowsPerInsert = 16;
  // Any number of rows; every kRowsPerInsert of them in one statement, `between` (when not
  // null) called after each statement.
  int AddSpans(std::span<const SpanRow> rows, void (*between)() = nullptr);
  int AddTraces(std::span<const TraceRow> rows);
  int AddLog(const LogRow& row);
  // Bounds the WAL: the checkpoint interval and the size a checkpoint leaves the WAL at.
  void LimitWal(std::uint64_t bytes);

  // Reading. The text of a dict id ("" when unknown), cached.
  const std::string& Text(std::int64_t id);
  // The dict id of `text`, or 0 when this partition does not have it.
  std::int64_t Find(std::string_view text);
  // A block's records, decompressed; false when absent or damaged, or when its dictionary is.
  bool ReadBlock(std::int64_t id, std::string* raw);
  // Dictionary `id`, loaded once; nullptr when absent or damaged.
  block::Dictionary* Dictionary(std::int64_t id);
  // The largest rowid of `table` (spans or logs: rows are never deleted from a partition, so
  // it is also their count).
  std::int64_t MaxRowid(const char* table);

 private:
  Partition() = default;
  bool Init(bool write, std::string* error);
  // A statement kept for the partition's life; the destructor finalizes it.
  sqlite3_stmt* Prepare(const char* sql);
  int Step(sqlite3_stmt* s);

  std::string path_;
  sqlite3* db_ = nullptr;
  sqlite3_stmt* find_ = nullptr;
  sqlite3_stmt* intern_ = nullptr;
  sqlite3_stmt* block_ = nullptr;
  sqlite3_stmt* replace_block_ = nullptr;
  sqlite3_stmt* span_ = nullptr;
  sqlite3_stmt* spans_ = nullptr;  // kRowsPerInsert rows
  sqlite3_stmt* trace_ = nullptr;
  sqlite3_stmt* traces_ = nullptr;  // kRowsPerInsert rows
  sqlite3_stmt* log_ = nullptr;
  sqlite3_stmt* text_ = nullptr;
  sqlite3_stmt* read_block_ = nullptr;
  sqlite3_stmt* zdict_ = nullptr;
  sqlite3_stmt* read_zdict_ = nullptr;
  std::vector<sqlite3_stmt*> prepared_;  // every statement above that Prepare made
  // Dictionaries read so far (a partition has one or two); nullptr for one unreadable.
  std::unordered_map<std::int64_t, std::unique_ptr<block::Dictionary>> zdicts_;
  // Bounded: cleared when it holds kMaxCached texts (a sender naming every span differently).
  // Found by a string_view: a std::string made for each lookup was an allocation per span
  // whose name is longer than 15 bytes ("chat " and a model's name).
  absl::flat_hash_map<std::string, std::int64_t> ids_;
  std::unordered_map<std::int64_t, std::string> texts_;
  std::int64_t next_span_rowid_ = 1;
};

}  // namespace infertel::exporting
