// The store's queries: partitions newest first, rows found by their columns and indexes, the
// rest of each item read from its block.
#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_set>

#include "core/hex.h"
#include "export/sqlite/block.h"
#include "export/sqlite/partition.h"
#include "export/sqlite/record_attributes.h"
#include "export/sqlite/sqlite_store.h"
#include "export/sqlite/store_internal.h"
#include "otlp/json_util.h"

namespace infertel::exporting {

using namespace store_internal;

namespace {

// A statement finalized at scope exit.
class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& sql) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s_, nullptr) != SQLITE_OK) {
      sqlite3_finalize(s_);
      s_ = nullptr;
    }
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  sqlite3_stmt* get() const { return s_; }
  explicit operator bool() const { return s_ != nullptr; }
  bool Row() { return sqlite3_step(s_) == SQLITE_ROW; }
  std::int64_t Int(int i) const { return sqlite3_column_int64(s_, i); }
  bool Null(int i) const { return sqlite3_column_type(s_, i) == SQLITE_NULL; }

 private:
  sqlite3_stmt* s_ = nullptr;
};

std::string TraceHex(std::int64_t tid, std::int64_t tid2) {
  std::string out;
  AppendIdHex(&out, tid);
  AppendIdHex(&out, tid2);
  return out;
}

std::string SpanHex(std::int64_t id) {
  std::string out;
  AppendIdHex(&out, id);
  return out;
}

// A decoded block and where each record starts, kept while rows of it follow one another.
class BlockCache {
 public:
  // The record at `slot` of block `id` in `p`; an empty reader (ok() false) when unreadable.
  block::Reader Record(Partition* p, std::int64_t id, std::uint32_t slot, bool logs) {
    if (p != p_ || id != id_) {
      p_ = p;
      id_ = id;
      starts_.clear();
      if (!p->ReadBlock(id, &raw_)) raw_.clear();
      Index(logs);
    }
    if (slot >= starts_.size()) {
      block::Reader bad({});
      bad.Varint();
      return bad;
    }
    return block::Reader(std::string_view(raw_).substr(starts_[slot]));
  }

 private:
  void Index(bool logs) {
    block::Reader r(raw_);
    while (!r.done() && r.ok()) {
      starts_.push_back(raw_.size() - r.Remaining());
      if (logs) {
        r.Signed();
        for (int i = 0; i < 3; ++i) r.Bytes();
        r.Varint();
        r.Bytes();
        r.Bytes();
      } else {
        r.Varint();
        for (int i = 0; i < 4; ++i) r.Bytes();
        for (int i = 0; i < 5; ++i) r.Varint();
      }
    }
  }

  Partition* p_ = nullptr;
  std::int64_t id_ = 0;
  std::string raw_;
  std::vector<std::size_t> starts_;
};

constexpr const char* kSpanColumns =
    "SELECT tid, tid2, span, parent, start, dur, status, name, service, block, slot FROM spans ";

StoredSpan ReadSpan(Partition* p, Stmt& s, BlockCache& blocks) {
  StoredSpan sp;
  sp.trace_id = TraceHex(s.Int(0), s.Int(1));
  sp.span_id = SpanHex(s.Int(2));
  if (!s.Null(3)) sp.parent_span_id = SpanHex(s.Int(3));
  sp.start_time_unix_nano = s.Int(4);
  sp.end_time_unix_nano = static_cast<std::int64_t>(static_cast<std::uint64_t>(s.Int(4)) +
                                                    static_cast<std::uint64_t>(s.Int(5)));
  sp.status_code = static_cast<int>(s.Int(6));
  sp.name = p->Text(s.Int(7));
  sp.service_name = p->Text(s.Int(8));
  block::Reader r = blocks.Record(p, s.Int(9), static_cast<std::uint32_t>(s.Int(10)), false);
  sp.kind = static_cast<int>(r.Varint());
  sp.status_message = r.Bytes();
  sp.attributes = RecordAttributesJson(r.Bytes());
  sp.events = r.Bytes();
  sp.links = r.Bytes();
  sp.resource = p->Text(static_cast<std::int64_t>(r.Varint()));
  sp.scope = p->Text(static_cast<std::int64_t>(r.Varint()));
  sp.dropped_attributes_count = static_cast<std::int64_t>(r.Varint());
  sp.dropped_events_count = static_cast<std::int64_t>(r.Varint());
  sp.dropped_links_count = static_cast<std::int64_t>(r.Varint());
  if (!r.ok()) {
    // A damaged or missing block: the row's own columns are still right.
    if (sp.events.empty()) sp.events = "[]";
    if (sp.links.empty()) sp.links = "[]";
    if (sp.resource.empty()) sp.resource = "{}";
  }
  return sp;
}

}  // namespace

std::vector<Partition*> SqliteStore::Readers() {
  std::vector<std::unique_ptr<Partition>> kept;
  const auto files = ListPartitions(options_.path);
  for (auto it = files.rbegin(); it != files.rend(); ++it) {
    const std::string& path = it->second;
    auto have = std::find_if(readers_.begin(), readers_.end(),
                             [&](const auto& r) { return r != nullptr && r->path() == path; });
    if (have != readers_.end()) {
      kept.push_back(std::move(*have));
      continue;
    }
    std::string error;
    if (auto p = Partition::Open(path, false, nullptr, &error)) kept.push_back(std::move(p));
  }
  readers_ = std::move(kept);
  std::vector<Partition*> out;
  for (auto& r : readers_) out.push_back(r.get());
  return out;
}

std::vector<StoredSpan> SqliteStore::TraceSpans(std::string_view trace_id) {
  std::string bytes;
  if (!HexToBytes(trace_id, &bytes) || bytes.size() != 16) return {};
  const std::int64_t tid = IdHalf(bytes, 0), tid2 = IdHalf(bytes, 8);
  std::vector<std::tuple<std::int64_t, std::size_t, StoredSpan>> rows;  // start, order, span
  BlockCache blocks;
  const auto readers = Readers();
  // Oldest partition first, so that spans with one start keep their arrival order.
  for (auto it = readers.rbegin(); it != readers.rend(); ++it) {
    Partition* p = *it;
    Stmt s(p->db(), std::string(kSpanColumns) + "WHERE part = ?1 AND tid = ?2 AND tid2 = ?3");
    if (!s) continue;
    const std::int64_t parts = p->MaxRowid("spans") >> kTracePartShift;
    // One seek per part of the index (partition.h).
    for (std::int64_t part = 0; part <= parts; ++part) {
      sqlite3_bind_int64(s.get(), 1, part);
      sqlite3_bind_int64(s.get(), 2, tid);
      sqlite3_bind_int64(s.get(), 3, tid2);
      while (s.Row()) {
        StoredSpan sp = ReadSpan(p, s, blocks);
        rows.emplace_back(sp.start_time_unix_nano, rows.size(), std::move(sp));
      }
      sqlite3_reset(s.get());
    }
  }
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return std::tie(std::get<0>(a), std::get<1>(a)) < std::tie(std::get<0>(b), std::get<1>(b));
  });
  std::vector<StoredSpan> out;
  out.reserve(rows.size());
  for (auto& r : rows) out.push_back(std::move(std::get<2>(r)));
  return out;
}

std::vector<StoredSpan> SqliteStore::Spans(const SpanFilter& f) {
  if (!f.trace_id.empty()) {
    auto spans = TraceSpans(f.trace_id);
    std::erase_if(spans, [&](const StoredSpan& s) { return !f.name.empty() && s.name != f.name; });
    if (f.limit > 0 && spans.size() > f.limit) spans.resize(f.limit);
    return spans;
  }
  std::vector<StoredSpan> out;
  BlockCache blocks;
  const auto readers = Readers();
  for (auto it = readers.rbegin(); it != readers.rend(); ++it) {
    Partition* p = *it;
    std::int64_t name = 0;
    if (!f.name.empty() && (name = p->Find(f.name)) == 0) continue;
    Stmt s(p->db(),
           std::string(kSpanColumns) + (name ? "WHERE name = ?1 " : "") + "ORDER BY rowid");
    if (!s) continue;
    if (name) sqlite3_bind_int64(s.get(), 1, name);
    while ((f.limit == 0 || out.size() < f.limit) && s.Row()) out.push_back(ReadSpan(p, s, blocks));
  }
  return out;
}

std::vector<StoredLog> SqliteStore::Logs(const SpanFilter& f) {
  std::string bytes;
  const bool by_trace = !f.trace_id.empty();
  if (by_trace && (!HexToBytes(f.trace_id, &bytes) || bytes.size() != 16)) return {};
  std::vector<StoredLog> out;
  BlockCache blocks;
  const auto readers = Readers();
  for (auto it = readers.rbegin(); it != readers.rend(); ++it) {
    Partition* p = *it;
    Stmt s(p->db(), std::string("SELECT time, tid, tid2, span, severity, event, block, slot "
                                "FROM logs ") +
                        (by_trace ? "WHERE tid = ?1 AND tid2 = ?2 " : "") + "ORDER BY rowid");
    if (!s) continue;
    if (by_trace) {
      sqlite3_bind_int64(s.get(), 1, IdHalf(bytes, 0));
      sqlite3_bind_int64(s.get(), 2, IdHalf(bytes, 8));
    }
    while ((f.limit == 0 || out.size() < f.limit) && s.Row()) {
      StoredLog l;
      l.time_unix_nano = s.Int(0);
      if (!s.Null(1)) l.trace_id = TraceHex(s.Int(1), s.Int(2));
      if (!s.Null(3)) l.span_id = SpanHex(s.Int(3));
      l.severity_number = static_cast<int>(s.Int(4));
      l.event_name = p->Text(s.Int(5));
      block::Reader r = blocks.Record(p, s.Int(6), static_cast<std::uint32_t>(s.Int(7)), true);
      l.observed_time_unix_nano = r.Signed();
      l.severity_text = r.Bytes();
      l.body = r.Bytes();
      l.attributes = r.Bytes();
      l.resource = p->Text(static_cast<std::int64_t>(r.Varint()));
      l.scope = r.Bytes();
      l.service_name = r.Bytes();
      if (l.body.empty()) l.body = "null";
      if (l.attributes.empty()) l.attributes = "{}";
      if (l.resource.empty()) l.resource = "{}";
      out.push_back(std::move(l));
    }
  }
  return out;
}

// The summary rows matching `f`, newest arrival first: each partition's traces table read
// backwards by rowid (the order rows arrived in), through an index when a filter names a
// model or the error status.
std::vector<TraceSummary> SqliteStore::Traces(const TraceFilter& f) {
  std::vector<TraceSummary> out;
  std::unordered_set<std::string> seen;
  for (Partition* p : Readers()) {
    if (out.size() >= f.limit) break;
    std::string where = "WHERE 1";
    std::vector<std::int64_t> args;
    auto by_text = [&](const std::string& value, const char* column) {
      if (value.empty()) return true;
      const std::int64_t id = p->Find(value);
      if (id == 0) return false;
      where += fmt::format(" AND {} = ?{}", column, args.size() + 1);
      args.push_back(id);
      return true;
    };
    if (!by_text(f.model, "model") || !by_text(f.operation, "operation") ||
        !by_text(f.service, "service") || !by_text(f.tenant, "tenant"))
      continue;
    auto by_int = [&](bool on, const char* cond, std::int64_t v) {
      if (!on) return;
      where += fmt::format(" AND {} ?{}", cond, args.size() + 1);
      args.push_back(v);
    };
    // A literal, not a parameter: SQLite uses the partial index of errors (partition.cc) only
    // for a query whose text says `status = 2`.
    if (f.status >= 0) where += fmt::format(" AND status = {}", f.status);
    if (f.status == TraceFilter::kNotError) where += " AND status != 2";
    by_int(f.start_from > 0, "start >=", f.start_from);
    by_int(f.start_to > 0, "start <", f.start_to);
    by_int(f.min_duration_ns > 0, "dur >=", f.min_duration_ns);
    Stmt s(p->db(),
           "SELECT tid, tid2, start, dur, status, name, model, operation, service, tenant FROM "
           "traces " +
               where + " ORDER BY rowid DESC");
    if (!s) continue;
    for (std::size_t i = 0; i < args.size(); ++i)
      sqlite3_bind_int64(s.get(), static_cast<int>(i + 1), args[i]);
    while (out.size() < f.limit && s.Row()) {
      std::string id = TraceHex(s.Int(0), s.Int(1));
      if (!seen.insert(id).second) continue;
      TraceSummary t;
      t.trace_id = std::move(id);
      t.start_time_unix_nano = s.Int(2);
      t.duration_ns = s.Int(3);
      t.status_code = static_cast<int>(s.Int(4));
      t.name = p->Text(s.Int(5));
      t.model = p->Text(s.Int(6));
      t.operation = p->Text(s.Int(7));
      t.service = p->Text(s.Int(8));
      t.tenant = p->Text(s.Int(9));
      out.push_back(std::move(t));
    }
  }
  return out;
}

std::vector<std::string> SqliteStore::RecentTraceIds(std::size_t limit, std::string_view service) {
  TraceFilter f;
  f.limit = limit;
  f.service = std::string(service);
  std::vector<std::string> ids;
  for (auto& t : Traces(f)) ids.push_back(std::move(t.trace_id));
  return ids;
}

std::int64_t SqliteStore::CountSpans() {
  std::int64_t n = 0;
  for (Partition* p : Readers()) n += p->MaxRowid("spans");
  return n;
}

std::int64_t SqliteStore::CountLogs() {
  std::int64_t n = 0;
  for (Partition* p : Readers()) n += p->MaxRowid("logs");
  return n;
}

namespace {

void Field(std::string* out, std::string_view key, std::string_view text) {
  out->push_back(',');
  otlp_json::AppendString(out, key);
  out->push_back(':');
  otlp_json::AppendString(out, text);
}
void Raw(std::string* out, std::string_view key, std::string_view json) {
  out->push_back(',');
  otlp_json::AppendString(out, key);
  out->push_back(':');
  *out += json;
}
void HexOrNull(std::string* out, std::string_view key, const std::string& hex) {
  if (hex.empty())
    Raw(out, key, "null");
  else
    Field(out, key, hex);
}

}  // namespace

void AppendSpanJson(std::string* out, const StoredSpan& s) {
  *out += "{\"trace_id\":";
  otlp_json::AppendString(out, s.trace_id);
  Field(out, "span_id", s.span_id);
  HexOrNull(out, "parent_span_id", s.parent_span_id);
  Field(out, "name", s.name);
  Raw(out, "kind", std::to_string(s.kind));
  Field(out, "start_time_unix_nano", std::to_string(s.start_time_unix_nano));
  Field(out, "end_time_unix_nano", std::to_string(s.end_time_unix_nano));
  Raw(out, "status_code", std::to_string(s.status_code));
  Field(out, "status_message", s.status_message);
  Raw(out, "attributes", s.attributes);
  Raw(out, "events", s.events);
  Raw(out, "links", s.links);
  Raw(out, "resource", s.resource);
  Field(out, "scope", s.scope);
  Field(out, "service_name", s.service_name);
  Raw(out, "dropped_attributes_count", std::to_string(s.dropped_attributes_count));
  Raw(out, "dropped_events_count", std::to_string(s.dropped_events_count));
  Raw(out, "dropped_links_count", std::to_string(s.dropped_links_count));
  out->push_back('}');
}

void AppendLogJson(std::string* out, const StoredLog& l) {
  *out += "{\"time_unix_nano\":";
  otlp_json::AppendString(out, std::to_string(l.time_unix_nano));
  Field(out, "observed_time_unix_nano", std::to_string(l.observed_time_unix_nano));
  HexOrNull(out, "trace_id", l.trace_id);
  HexOrNull(out, "span_id", l.span_id);
  Raw(out, "severity_number", std::to_string(l.severity_number));
  Field(out, "severity_text", l.severity_text);
  if (l.event_name.empty())
    Raw(out, "event_name", "null");
  else
    Field(out, "event_name", l.event_name);
  Raw(out, "body", l.body);
  Raw(out, "attributes", l.attributes);
  Raw(out, "resource", l.resource);
  Field(out, "scope", l.scope);
  Field(out, "service_name", l.service_name);
  out->push_back('}');
}

}  // namespace infertel::exporting
