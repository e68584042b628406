#include "export/sqlite/sqlite_store.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <simdjson.h>
#include <sqlite3.h>

#include <atomic>
#include <filesystem>

#include "core/clock.h"
#include "export/sqlite/sqlite_store.h"
#include "test_util.h"

namespace infertel::exporting {
namespace {

namespace fs = std::filesystem;
using testing::AddSpan;

class SqliteStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("infertel-store-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "t.db").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<SqliteStore> OpenStore(StoreOptions o = {}) {
    o.path = path_;
    auto s = std::make_unique<SqliteStore>();
    std::string error;
    EXPECT_TRUE(s->Open(o, &error)) << error;
    return s;
  }

  // Runs a query returning one row and hands the statement to `f`.
  template <typename F>
  void QueryRow(SqliteStore& s, const char* sql, F f) {
    sqlite3_stmt* st = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(s.handle(), sql, -1, &st, nullptr), SQLITE_OK)
        << sqlite3_errmsg(s.handle());
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    f(st);
    sqlite3_finalize(st);
  }

  fs::path dir_;
  std::string path_;
};

std::string Text(sqlite3_stmt* st, int i) {
  const auto* p = sqlite3_column_text(st, i);
  return p ? reinterpret_cast<const char*>(p) : "<null>";
}

TEST_F(SqliteStoreTest, StoresSpansWithTheDocumentedColumns) {
  auto store = OpenStore();
  TracesRequest req = testing::RichRequest();
  AddSpan(&req, "00f067aa0ba902b7", "", "root", 1700000000000000000ull, 1700000000200000000ull);
  std::string error;
  ASSERT_TRUE(store->InsertTraces(req, &error)) << error;
  EXPECT_EQ(store->CountSpans(), 2);

  QueryRow(*store, "PRAGMA journal_mode", [](sqlite3_stmt* st) { EXPECT_EQ(Text(st, 0), "wal"); });
  // An 8 MiB page cache (negative: KiB), so the trace id index stays in memory.
  QueryRow(*store, "PRAGMA cache_size",
           [](sqlite3_stmt* st) { EXPECT_EQ(sqlite3_column_int64(st, 0), -8192); });
  QueryRow(*store,
           "SELECT trace_id, span_id, parent_span_id, name, kind, start_time_unix_nano, "
           "end_time_unix_nano, status_code, attributes, events, links, resource, scope, "
           "status_message, service_name FROM spans WHERE name = 'chat m'",
           [](sqlite3_stmt* st) {
             EXPECT_EQ(Text(st, 0), testing::kTrace);
             EXPECT_EQ(Text(st, 1), "b7ad6b7169203331");
             EXPECT_EQ(Text(st, 2), "00f067aa0ba902b7");
             EXPECT_EQ(sqlite3_column_int(st, 4), 2);
             EXPECT_EQ(sqlite3_column_type(st, 5), SQLITE_INTEGER);
             EXPECT_EQ(sqlite3_column_int64(st, 5), 1700000000000000000ll);
             EXPECT_EQ(sqlite3_column_int64(st, 6), 1700000000123456789ll);
             EXPECT_EQ(sqlite3_column_int(st, 7), 2);
             simdjson::dom::parser p;
             simdjson::dom::object attrs;
             ASSERT_EQ(p.parse(Text(st, 8)).get_object().get(attrs), simdjson::SUCCESS);
             EXPECT_EQ(std::string_view(attrs["gen_ai.request.model"].get_string().value()), "m");
             EXPECT_EQ(attrs["gen_ai.usage.input_tokens"].get_int64().value(), 42);
             EXPECT_EQ(attrs["big"].get_int64().value(), 9007199254740993);
             EXPECT_DOUBLE_EQ(attrs["gen_ai.request.temperature"].get_double().value(), 0.25);
             EXPECT_TRUE(attrs["gen_ai.request.is_stream"].get_bool().value());
             EXPECT_EQ(attrs["gen_ai.response.finish_reasons"].get_array().size(), 2u);
             simdjson::dom::parser p2;
             simdjson::dom::array events;
             ASSERT_EQ(p2.parse(Text(st, 9)).get_array().get(events), simdjson::SUCCESS);
             ASSERT_EQ(events.size(), 1u);
             simdjson::dom::element ev = events.at(0).value();
             EXPECT_EQ(std::string_view(ev["name"].get_string().value()), "gen_ai.content.prompt");
             EXPECT_EQ(ev["time_unix_nano"].get_uint64().value(), 1700000000000000500ull);
             EXPECT_EQ(ev["attributes"]["n"].get_int64().value(), 1);
             simdjson::dom::parser p3;
             simdjson::dom::array links;
             ASSERT_EQ(p3.parse(Text(st, 10)).get_array().get(links), simdjson::SUCCESS);
             simdjson::dom::element l = links.at(0).value();
             EXPECT_EQ(std::string_view(l["trace_id"].get_string().value()),
                       "11111111111111111111111111111111");
             EXPECT_EQ(std::string_view(l["span_id"].get_string().value()), "2222222222222222");
             EXPECT_EQ(std::string_view(l["attributes"]["why"].get_string().value()), "retry");
             simdjson::dom::parser p4;
             simdjson::dom::object res;
             ASSERT_EQ(p4.parse(Text(st, 11)).get_object().get(res), simdjson::SUCCESS);
             EXPECT_EQ(std::string_view(res["service.name"].get_string().value()), "infertel-test");
             EXPECT_EQ(Text(st, 12), "infertel.gateway");
             EXPECT_EQ(Text(st, 13), "boom");
             EXPECT_EQ(Text(st, 14), "infertel-test");
           });
  // A root's parent is NULL.
  QueryRow(*store, "SELECT parent_span_id IS NULL FROM spans WHERE name = 'root'",
           [](sqlite3_stmt* st) { EXPECT_EQ(sqlite3_column_int(st, 0), 1); });
  QueryRow(*store,
           "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name IN "
           "('spans_trace_part', 'spans_start')",
           [](sqlite3_stmt* st) { EXPECT_EQ(sqlite3_column_int(st, 0), 2); });
  // Valid JSON for SQLite's own JSON functions too.
  QueryRow(*store,
           "SELECT json_extract(attributes, '$.\"gen_ai.usage.input_tokens\"') FROM spans "
           "WHERE name = 'chat m'",
           [](sqlite3_stmt* st) { EXPECT_EQ(sqlite3_column_int(st, 0), 42); });
}

// A row's own text (hex ids, JSON) is made in buffers kept from row to row and bound without
// a copy; each row must still keep exactly its own, whatever the rows before it held.
TEST_F(SqliteStoreTest, EachRowKeepsItsOwnTextWhenRowsDiffer) {
  auto store = OpenStore();
  TracesRequest req;
  const std::string long_value(3000, 'x');
  Span* a = AddSpan(&req, "1111111111111111", "2222222222222222", "a", 1, 2,
                    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
  AddAttr(a->mutable_attributes(), "long", long_value);
  auto* ev = a->add_events();
  ev->set_name("e");
  auto* link = a->add_links();
  link->set_trace_id(testing::Bytes("cccccccccccccccccccccccccccccccc"));
  link->set_span_id(testing::Bytes("3333333333333333"));
  AddSpan(&req, "4444444444444444", "", "b", 3, 4, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
  Span* c = AddSpan(&req, "5555555555555555", "0000000000000000", "c", 5, 6,
                    "dddddddddddddddddddddddddddddddd");
  AddAttr(c->mutable_attributes(), "k", "v");
  std::string error;
  ASSERT_TRUE(store->InsertTraces(req, &error)) << error;
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(store->handle(),
                               "SELECT name, trace_id, span_id, parent_span_id, attributes, "
                               "events, links FROM spans ORDER BY name",
                               -1, &st, nullptr),
            SQLITE_OK);
  std::vector<std::vector<std::string>> rows;
  while (sqlite3_step(st) == SQLITE_ROW) {
    rows.emplace_back();
    for (int i = 0; i < 7; ++i) rows.back().push_back(Text(st, i));
  }
  sqlite3_finalize(st);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0],
            (std::vector<std::string>{"a", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "1111111111111111",
                                      "2222222222222222", "{\"long\":\"" + long_value + "\"}",
                                      R"([{"name":"e","time_unix_nano":0,"attributes":{}}])",
                                      R"([{"trace_id":"cccccccccccccccccccccccccccccccc",)"
                                      R"("span_id":"3333333333333333","attributes":{}}])"}));
  // No parent, and an all-zero parent, are both NULL.
  EXPECT_EQ(rows[1], (std::vector<std::string>{"b", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
                                               "4444444444444444", "<null>", "{}", "[]", "[]"}));
  EXPECT_EQ(rows[2],
            (std::vector<std::string>{"c", "dddddddddddddddddddddddddddddddd", "5555555555555555",
                                      "<null>", R"({"k":"v"})", "[]", "[]"}));
}

// SQLite's allocation statistics are off in the agent (a mutex on every malloc and free that
// nothing reads): configured before SQLite's first use, which is the first store opened here.
TEST_F(SqliteStoreTest, SqliteKeepsNoAllocationStatistics) {
  auto store = OpenStore();
  TracesRequest req = testing::RichRequest();
  std::string error;
  ASSERT_TRUE(store->InsertTraces(req, &error)) << error;
  EXPECT_EQ(sqlite3_memory_used(), 0);
  EXPECT_EQ(sqlite3_memory_highwater(0), 0);
}

// The store lets its pacer pause between rows, and inside SQLite's commit between its file
// writes (the paced VFS), but only while its lane keeps up.
TEST_F(SqliteStoreTest, WritesLetThePacerPauseBetweenRowsAndFileWrites) {
  auto store = OpenStore();
  std::atomic<std::uint64_t> queued{0};
  store->SetPacer(
      pipeline::Pacer(&queued, 1, std::chrono::nanoseconds(0), std::chrono::nanoseconds(0)));
  std::string error;
  std::uint64_t before = store->pacer().pauses();
  TracesRequest spans;
  for (int i = 0; i < 20; ++i) AddSpan(&spans, fmt::format("{:016x}", i + 1), "", "s", 1, 2);
  ASSERT_TRUE(store->InsertTraces(spans, &error)) << error;
  // One per row, and more for the WAL writes of the commit.
  EXPECT_GT(store->pacer().pauses() - before, 20u);

  before = store->pacer().pauses();
  LogsRequest logs;
  auto* sl = logs.add_resource_logs()->add_scope_logs();
  for (int i = 0; i < 5; ++i) sl->add_log_records()->set_observed_time_unix_nano(i + 1);
  ASSERT_TRUE(store->InsertLogs(logs, &error)) << error;
  EXPECT_GT(store->pacer().pauses() - before, 5u);

  before = store->pacer().pauses();
  MetricsRequest metrics;
  auto* m = metrics.add_resource_metrics()->add_scope_metrics()->add_metrics();
  m->set_name("vllm:num_requests_running");
  for (int i = 0; i < 3; ++i) {
    auto* p = m->mutable_gauge()->add_data_points();
    p->set_as_double(i);
    AddAttr(p->mutable_attributes(), "engine", std::to_string(i));
  }
  ASSERT_TRUE(store->UpsertMetrics(metrics, &error)) << error;
  EXPECT_GT(store->pacer().pauses() - before, 3u);

  // A backlog behind the lane: no pause at all, and every row still written.
  queued = 1;
  before = store->pacer().pauses();
  TracesRequest more;
  for (int i = 0; i < 20; ++i) AddSpan(&more, fmt::format("{:016x}", i + 100), "", "s", 1, 2);
  ASSERT_TRUE(store->InsertTraces(more, &error)) << error;
  EXPECT_EQ(store->pacer().pauses(), before);
  EXPECT_EQ(store->CountSpans(), 40);
  EXPECT_EQ(store->CountLogs(), 5);
  EXPECT_EQ(store->CountMetrics(), 3);
}

// Only the store's own writes are paced: a row count (a read) and a thread that set no pacer
// go straight through, and the store reads back what it wrote through the paced VFS, from
// another connection too.
TEST_F(SqliteStoreTest, ReadsAndOtherConnectionsAreNotPaced) {
  auto store = OpenStore();
  std::atomic<std::uint64_t> queued{0};
  store->SetPacer(
      pipeline::Pacer(&queued, 1, std::chrono::nanoseconds(0), std::chrono::nanoseconds(0)));
  TracesRequest spans;
  AddSpan(&spans, "00000000000000aa", "", "s", 1, 2);
  std::string error;
  ASSERT_TRUE(store->InsertTraces(spans, &error)) << error;
  const std::uint64_t after_insert = store->pacer().pauses();
  EXPECT_EQ(store->CountSpans(), 1);
  EXPECT_EQ(store->TraceSpans(testing::kTrace).size(), 1u);
  EXPECT_EQ(store->pacer().pauses(), after_insert);

  SqliteStore reader;
  ASSERT_TRUE(reader.Open(path_, &error)) << error;
  EXPECT_EQ(reader.CountSpans(), 1);
  EXPECT_EQ(reader.TraceSpans(testing::kTrace).size(), 1u);
  EXPECT_EQ(store->pacer().pauses(), after_insert);
}

TEST_F(SqliteStoreTest, StoresLogsAndKeepsTheLatestMetricPoint) {
  auto store = OpenStore();
  LogsRequest logs;
  auto* lr = logs.add_resource_logs()->add_scope_logs()->add_log_records();
  lr->set_observed_time_unix_nano(555);
  lr->set_severity_number(otlp_logs::SEVERITY_NUMBER_ERROR);
  lr->mutable_body()->set_string_value("oops");
  AddAttr(lr->mutable_attributes(), "event.name", "gen_ai.choice");
  std::string error;
  ASSERT_TRUE(store->InsertLogs(logs, &error)) << error;
  QueryRow(*store,
           "SELECT time_unix_nano, severity_number, event_name, body, trace_id IS NULL FROM logs",
           [](sqlite3_stmt* st) {
             EXPECT_EQ(sqlite3_column_int64(st, 0), 555);
             EXPECT_EQ(sqlite3_column_int(st, 1), 17);
             EXPECT_EQ(Text(st, 2), "gen_ai.choice");
             EXPECT_EQ(Text(st, 3), "\"oops\"");
             EXPECT_EQ(sqlite3_column_int(st, 4), 1);
           });

  auto metrics = [](double v, std::uint64_t t, const char* model) {
    MetricsRequest m;
    auto* metric = m.add_resource_metrics()->add_scope_metrics()->add_metrics();
    metric->set_name("vllm:num_requests_running");
    auto* p = metric->mutable_gauge()->add_data_points();
    p->set_as_double(v);
    p->set_time_unix_nano(t);
    AddAttr(p->mutable_attributes(), "model_name", model);
    AddAttr(p->mutable_attributes(), "engine", "0");
    return m;
  };
  ASSERT_TRUE(store->UpsertMetrics(metrics(1, 100, "a"), &error)) << error;
  ASSERT_TRUE(store->UpsertMetrics(metrics(5, 200, "a"), &error));
  ASSERT_TRUE(store->UpsertMetrics(metrics(3, 150, "a"), &error));  // older: ignored
  ASSERT_TRUE(store->UpsertMetrics(metrics(7, 100, "b"), &error));
  EXPECT_EQ(store->CountMetrics(), 2);
  QueryRow(*store,
           "SELECT value, time_unix_nano, type, labels FROM metrics WHERE labels LIKE '%\"a\"%'",
           [](sqlite3_stmt* st) {
             EXPECT_DOUBLE_EQ(sqlite3_column_double(st, 0), 5);
             EXPECT_EQ(sqlite3_column_int64(st, 1), 200);
             EXPECT_EQ(Text(st, 2), "gauge");
             EXPECT_EQ(Text(st, 3), "{\"engine\":\"0\",\"model_name\":\"a\"}");  // keys sorted
           });
}

TEST_F(SqliteStoreTest, RetentionByAgeDeletesOldRows) {
  StoreOptions o;
  o.max_age = std::chrono::hours(1);
  auto store = OpenStore(o);
  const std::uint64_t now = WallNanos();
  const std::uint64_t hour = 3600ull * 1'000'000'000ull;
  TracesRequest req;
  AddSpan(&req, "0000000000000001", "", "old", now - 2 * hour, now - 2 * hour + 1000);
  AddSpan(&req, "0000000000000002", "", "new", now - 10, now);
  std::string error;
  ASSERT_TRUE(store->InsertTraces(req, &error)) << error;
  RetentionResult r = store->EnforceRetention(now);
  EXPECT_EQ(r.spans_deleted, 1);
  EXPECT_EQ(store->CountSpans(), 1);
  QueryRow(*store, "SELECT name FROM spans",
           [](sqlite3_stmt* st) { EXPECT_EQ(Text(st, 0), "new"); });
}

TEST_F(SqliteStoreTest, RetentionBySizeDeletesTheOldestFirst) {
  StoreOptions o;
  o.max_bytes = 256 * 1024;
  o.max_age = std::chrono::seconds(0);
  auto store = OpenStore(o);
  std::string error;
  const std::string filler(400, 'x');
  for (int batch = 0; batch < 20; ++batch) {
    TracesRequest req;
    for (int i = 0; i < 100; ++i) {
      const int n = batch * 100 + i;
      char id[17];
      std::snprintf(id, sizeof(id), "%016x", n + 1);
      Span* s = AddSpan(&req, id, "", "s" + std::to_string(n), 1000 + n, 2000 + n);
      AddAttr(s->mutable_attributes(), "filler", filler);
    }
    ASSERT_TRUE(store->InsertTraces(req, &error)) << error;
  }
  ASSERT_GT(store->UsedBytes(), o.max_bytes);
  RetentionResult r = store->EnforceRetention(WallNanos());
  EXPECT_GT(r.spans_deleted, 0);
  EXPECT_LE(store->UsedBytes(), o.max_bytes);
  const std::int64_t left = store->CountSpans();
  EXPECT_EQ(left, 2000 - r.spans_deleted);
  // What is left is the newest: the oldest remaining start time is above every deleted one.
  QueryRow(*store, "SELECT MIN(start_time_unix_nano), MAX(start_time_unix_nano) FROM spans",
           [&](sqlite3_stmt* st) {
             EXPECT_EQ(sqlite3_column_int64(st, 0), 1000 + r.spans_deleted);
             EXPECT_EQ(sqlite3_column_int64(st, 1), 1000 + 1999);
           });
}

TEST_F(SqliteStoreTest, ExporterWritesAndRefusesABadPath) {
  StoreOptions o;
  o.path = path_;
  std::string error;
  auto exporter = MakeStoreTraceExporter(o, &error);
  ASSERT_NE(exporter, nullptr) << error;
  TracesRequest req;
  const std::uint64_t now = WallNanos();
  AddSpan(&req, "0000000000000001", "", "a", now - 1000, now);
  EXPECT_TRUE(exporter->Export(req).ok());
  exporter->Shutdown();
  SqliteStore reader;
  ASSERT_TRUE(reader.Open(path_, &error)) << error;
  EXPECT_EQ(reader.CountSpans(), 1);

  o.path = (dir_ / "missing-dir" / "x.db").string();
  EXPECT_EQ(MakeStoreTraceExporter(o, &error), nullptr);
  EXPECT_FALSE(error.empty());
}

// Each export is one transaction, and a transaction's cost per row falls with its rows: the
// store's lanes ask for batches of 4,096 rows when the configured batch is smaller.
TEST_F(SqliteStoreTest, ExportersAskForLargerBatchesThanTheNetworkDefault) {
  StoreOptions o;
  o.path = path_;
  std::string error;
  auto traces = MakeStoreTraceExporter(o, &error);
  ASSERT_NE(traces, nullptr) << error;
  auto logs = MakeStoreLogExporter(o, &error);
  ASSERT_NE(logs, nullptr) << error;
  auto metrics = MakeStoreMetricExporter(o, &error);
  ASSERT_NE(metrics, nullptr) << error;
  EXPECT_EQ(traces->BatchItems(512), 4096u);
  EXPECT_EQ(logs->BatchItems(512), 4096u);
  EXPECT_EQ(metrics->BatchItems(512), 4096u);
  EXPECT_EQ(traces->BatchItems(8192), 8192u);  // a larger configured batch stands
  traces->Shutdown();
  logs->Shutdown();
  metrics->Shutdown();
}

// A trace is found through the index on its id's first 8 hex digits, and only its own spans
// come back when another trace shares those digits.
TEST_F(SqliteStoreTest, FindsATraceByItsIdPrefixIndexAndKeepsItsOwnSpans) {
  auto store = OpenStore();
  TracesRequest req;
  const std::string a = "abcdef0100000000000000000000000a";
  const std::string b = "abcdef0100000000000000000000000b";  // same first 8 digits
  AddSpan(&req, "0000000000000001", "", "a1", 1000, 2000, a);
  AddSpan(&req, "0000000000000002", "", "b1", 1100, 2100, b);
  AddSpan(&req, "0000000000000003", "0000000000000001", "a2", 1200, 1900, a);
  std::string error;
  ASSERT_TRUE(store->InsertTraces(req, &error)) << error;
  const auto spans = store->TraceSpans(a);
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0].name, "a1");
  EXPECT_EQ(spans[1].name, "a2");
  ASSERT_EQ(store->TraceSpans(b).size(), 1u);
  EXPECT_TRUE(store->TraceSpans("ffffffff000000000000000000000000").empty());

  std::string plan;
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(store->handle(),
                               (std::string("EXPLAIN QUERY PLAN ") + kTraceSpansSql).c_str(), -1,
                               &st, nullptr),
            SQLITE_OK);
  while (sqlite3_step(st) == SQLITE_ROW)
    plan += reinterpret_cast<const char*>(sqlite3_column_text(st, 3)) + std::string("\n");
  sqlite3_finalize(st);
  EXPECT_NE(plan.find("SEARCH spans USING INDEX spans_trace_part (trace_part=? AND <expr>=?)"),
            std::string::npos)
      << plan;
}

// Each row carries its part of the trace index (rowid / 16384), and a trace whose spans lie in
// several parts, with rows of other traces between them, is found whole and in start order.
TEST_F(SqliteStoreTest, FindsATraceWhoseSpansLieInSeveralParts) {
  auto store = OpenStore();
  const std::string a = "abcdef0100000000000000000000000a";
  TracesRequest first;
  AddSpan(&first, "0000000000000001", "", "a-root", 1000, 9000, a);
  std::string error;
  ASSERT_TRUE(store->InsertTraces(first, &error)) << error;
  // Two parts of other traces' rows, written as the store writes them.
  TracesRequest filler;
  for (int i = 0; i < 2 * 16384; ++i)
    AddSpan(&filler, fmt::format("{:016x}", i + 100), "", "other", 500, 600,
            fmt::format("{:032x}", i + 100));
  ASSERT_TRUE(store->InsertTraces(filler, &error)) << error;
  TracesRequest later;
  AddSpan(&later, "0000000000000003", "0000000000000002", "a-grandchild", 3000, 4000, a);
  AddSpan(&later, "0000000000000002", "0000000000000001", "a-child", 2000, 8000, a);
  ASSERT_TRUE(store->InsertTraces(later, &error)) << error;

  QueryRow(*store,
           "SELECT count(*), sum(trace_part = rowid / 16384), min(trace_part), max(trace_part) "
           "FROM spans",
           [](sqlite3_stmt* st) {
             EXPECT_EQ(sqlite3_column_int64(st, 0), 2 * 16384 + 3);
             EXPECT_EQ(sqlite3_column_int64(st, 1), 2 * 16384 + 3);
             EXPECT_EQ(sqlite3_column_int64(st, 2), 0);
             EXPECT_EQ(sqlite3_column_int64(st, 3), 2);
           });
  const auto spans = store->TraceSpans(a);
  ASSERT_EQ(spans.size(), 3u);
  EXPECT_EQ(spans[0].name, "a-root");
  EXPECT_EQ(spans[1].name, "a-child");
  EXPECT_EQ(spans[2].name, "a-grandchild");
  EXPECT_EQ(store->TraceSpans(fmt::format("{:032x}", 100 + 16384)).size(), 1u);

  // Parts far apart are sought one by one, not every number between them.
  ASSERT_EQ(sqlite3_exec(store->handle(),
                         "UPDATE spans SET trace_part = 1000000000000 WHERE name = 'a-child'",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  EXPECT_EQ(store->TraceSpans(a).size(), 3u);
}

// A store made before trace parts (no trace_part column; the index on the id's prefix alone,
// or, older, on the whole id): read-only it finds its traces as it is; opened for writing it
// gets the column (NULL in its rows) and the index on parts in place of the old one, and finds
// a trace whose spans are on both sides of the change.
TEST_F(SqliteStoreTest, AStoreMadeBeforePartsKeepsItsTracesFindable) {
  for (const char* old_index : {"CREATE INDEX spans_trace_key ON spans(substr(trace_id, 1, 8))",
                                "CREATE INDEX spans_trace_id ON spans(trace_id)"}) {
    SCOPED_TRACE(old_index);
    fs::remove(path_);
    {
      auto store = OpenStore();
      TracesRequest req;
      AddSpan(&req, "0000000000000001", "", "old", 1000, 2000);
      std::string error;
      ASSERT_TRUE(store->InsertTraces(req, &error)) << error;
      // Back to the schema of before: no column, the old index.
      ASSERT_EQ(sqlite3_exec(store->handle(),
                             (std::string("DROP INDEX spans_trace_part; ALTER TABLE spans DROP "
                                          "COLUMN trace_part; ") +
                              old_index)
                                 .c_str(),
                             nullptr, nullptr, nullptr),
                SQLITE_OK)
          << sqlite3_errmsg(store->handle());
    }
    {
      SqliteStore reader;
      std::string error;
      ASSERT_TRUE(reader.Open(path_, &error)) << error;
      ASSERT_EQ(reader.TraceSpans(testing::kTrace).size(), 1u);
    }
    auto store = OpenStore();
    QueryRow(*store,
             "SELECT group_concat(name) FROM (SELECT name FROM sqlite_master WHERE type = 'index' "
             "AND tbl_name = 'spans' ORDER BY name)",
             [](sqlite3_stmt* st) { EXPECT_EQ(Text(st, 0), "spans_start,spans_trace_part"); });
    QueryRow(*store, "SELECT trace_part FROM spans WHERE name = 'old'",
             [](sqlite3_stmt* st) { EXPECT_EQ(sqlite3_column_type(st, 0), SQLITE_NULL); });
    TracesRequest req;
    AddSpan(&req, "0000000000000002", "0000000000000001", "new", 1500, 1900);
    std::string error;
    ASSERT_TRUE(store->InsertTraces(req, &error)) << error;
    QueryRow(*store, "SELECT trace_part FROM spans WHERE name = 'new'",
             [](sqlite3_stmt* st) { EXPECT_EQ(sqlite3_column_int64(st, 0), 0); });
    const auto spans = store->TraceSpans(testing::kTrace);
    ASSERT_EQ(spans.size(), 2u);
    EXPECT_EQ(spans[0].name, "old");
    EXPECT_EQ(spans[1].name, "new");
  }
}

// A store the agent creates has 16 KiB pages (fewer pages and WAL frames per row); a file made
// before, with SQLite's 4 KiB pages in WAL mode, cannot change its page size and keeps working.
TEST_F(SqliteStoreTest, NewStoresHave16KiBPagesAndOlderStoresKeepTheirs) {
  auto page_size = [&](SqliteStore& s) {
    std::int64_t v = 0;
    QueryRow(s, "PRAGMA page_size", [&](sqlite3_stmt* st) { v = sqlite3_column_int64(st, 0); });
    return v;
  };
  {
    auto store = OpenStore();
    EXPECT_EQ(page_size(*store), 16384);
  }
  fs::remove(path_);
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "PRAGMA page_size=4096; PRAGMA journal_mode=WAL; CREATE TABLE t(x)",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  auto store = OpenStore();
  EXPECT_EQ(page_size(*store), 4096);
  TracesRequest req;
  AddSpan(&req, "0000000000000001", "", "old", 1000, 2000);
  std::string error;
  ASSERT_TRUE(store->InsertTraces(req, &error)) << error;
  EXPECT_EQ(store->TraceSpans(testing::kTrace).size(), 1u);
}

// Recent traces: newest first by their newest span, each once however many spans it has; with
// a service, by that service's newest span.
TEST_F(SqliteStoreTest, RecentTracesAreDistinctAndNewestFirst) {
  auto store = OpenStore();
  const std::string a = "a0000000000000000000000000000001", b = "b0000000000000000000000000000002",
                    c = "c0000000000000000000000000000003";
  TracesRequest req;
  AddSpan(&req, "0000000000000001", "", "a-old", 1000, 1100, a);
  AddSpan(&req, "0000000000000002", "", "b", 2000, 2100, b);
  AddSpan(&req, "0000000000000003", "", "c", 3000, 3100, c);
  AddSpan(&req, "0000000000000004", "", "a-new", 4000, 4100, a);
  AddSpan(&req, "0000000000000005", "", "a-newer", 5000, 5100, a);
  std::string error;
  ASSERT_TRUE(store->InsertTraces(req, &error)) << error;
  TracesRequest other;  // another service, in trace b only
  AddSpan(&other, "0000000000000006", "", "b-engine", 2500, 2600, b);
  other.mutable_resource_spans(0)
      ->mutable_resource()
      ->mutable_attributes(0)
      ->mutable_value()
      ->set_string_value("engine");
  ASSERT_TRUE(store->InsertTraces(other, &error)) << error;
  EXPECT_EQ(store->RecentTraceIds(2, ""), (std::vector<std::string>{a, c}));
  EXPECT_EQ(store->RecentTraceIds(10, ""), (std::vector<std::string>{a, c, b}));
  EXPECT_EQ(store->RecentTraceIds(10, "engine"), (std::vector<std::string>{b}));
  EXPECT_EQ(store->RecentTraceIds(10, "infertel-test"), (std::vector<std::string>{a, c, b}));
  EXPECT_TRUE(store->RecentTraceIds(0, "").empty());
}

// root ── child ── grandchild, plus an orphan whose parent never reached the store.
TEST_F(SqliteStoreTest, RendersATreeWithAnOrphan) {
  auto store = OpenStore();
  TracesRequest req;
  const std::uint64_t t0 = 1700000000000000000ull;
  Span* root = AddSpan(&req, "00000000000000a1", "", "chat m", t0, t0 + 250'000'000);
  AddAttr(root->mutable_attributes(), semconv::kGenAiRequestModel, "m");
  AddAttr(root->mutable_attributes(), semconv::kGenAiUsageInputTokens, std::int64_t{14});
  AddAttr(root->mutable_attributes(), semconv::kGenAiUsageOutputTokens, std::int64_t{8});
  AddSpan(&req, "00000000000000b2", "00000000000000a1", "llm_request", t0 + 1'000'000,
          t0 + 240'000'000);
  Span* gc = AddSpan(&req, "00000000000000c3", "00000000000000b2", "prefill", t0 + 2'000'000,
                     t0 + 3'500'500);
  gc->mutable_status()->set_code(otlp_trace::Status::STATUS_CODE_ERROR);
  AddAttr(gc->mutable_attributes(), semconv::kErrorType, "timeout");
  AddSpan(&req, "00000000000000d4", "00000000000000ff", "decode", t0 + 5'000'000, t0 + 6'000'000);
  std::string error;
  ASSERT_TRUE(store->InsertTraces(req, &error)) << error;

  const std::string out = RenderTraceTrees(*store, 10, "");
  const std::string expected_body =
      "  chat m  250.000 ms  model=m  in=14  out=8\n"
      "    llm_request  239.000 ms\n"
      "      prefill  1.500 ms  ERROR error.type=timeout\n"
      "  decode  1.000 ms\n";
  ASSERT_GE(out.size(), expected_body.size());
  EXPECT_EQ(out.substr(out.size() - expected_body.size()), expected_body) << out;
  EXPECT_EQ(
      out.rfind("trace 0af7651916cd43dd8448eb211c80319c  2023-11-14 22:13:20.000Z  4 spans", 0), 0u)
      << out;

  // Newest first, limit and service filter.
  TracesRequest other;
  AddSpan(&other, "0000000000000001", "", "later", t0 + 1'000'000'000, t0 + 1'001'000'000,
          "22222222222222222222222222222222");
  ASSERT_TRUE(store->InsertTraces(other, &error));
  const std::string one = RenderTraceTrees(*store, 1, "");
  EXPECT_NE(one.find("later"), std::string::npos);
  EXPECT_EQ(one.find("chat m"), std::string::npos);
  EXPECT_EQ(RenderTraceTrees(*store, 10, "nobody"), "");
  TraceQuery q;
  q.trace_id = std::string(testing::kTrace);
  EXPECT_EQ(RenderTraceTrees(*store, q), out);
}

}  // namespace
}  // namespace infertel::exporting
