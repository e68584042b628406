#include "export/sqlite/sqlite_store.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <simdjson.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <fstream>

#include "common/telemetry_builders.h"
#include "core/clock.h"
#include "export/sqlite/block.h"
#include "export/sqlite/partition.h"

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
    path_ = (dir_ / "store").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<SqliteStore> OpenStore(StoreOptions o = {}) {
    o.path = path_;
    auto s = std::make_unique<SqliteStore>();
    std::string error;
    EXPECT_TRUE(s->Open(o, &error)) << error;
    return s;
  }

  // Every file of the store directory with its WAL, as `du` would count them.
  std::uint64_t DirBytes() {
    std::uint64_t n = 0;
    for (const auto& e : fs::directory_iterator(path_))
      if (e.is_regular_file()) n += e.file_size();
    return n;
  }

  // The store's files this process holds open after they were removed (what `du` no longer
  // sees but the file system still keeps): how many, and their bytes.
  std::pair<int, std::uint64_t> RemovedButOpen() {
    int n = 0;
    std::uint64_t bytes = 0;
    for (const auto& e : fs::directory_iterator("/proc/self/fd")) {
      std::error_code ec;
      const std::string target = fs::read_symlink(e.path(), ec).string();
      if (ec || !target.starts_with(path_) || !target.ends_with(" (deleted)")) continue;
      struct stat st {};
      if (::stat(e.path().c_str(), &st) != 0) continue;
      ++n;
      bytes += static_cast<std::uint64_t>(st.st_size);
    }
    return {n, bytes};
  }

  fs::path dir_;
  std::string path_;
};

std::string Json(const std::string& text, std::string_view key) {
  simdjson::dom::parser p;
  simdjson::dom::element e;
  if (p.parse(text).at_key(key).get(e) != simdjson::SUCCESS) return "<absent>";
  return simdjson::minify(e);
}

TEST(StoreBlock, RecordsRoundTripThroughZstd) {
  block::Writer w;
  w.NextRecord();
  w.Varint(300);
  w.Signed(-5);
  w.Bytes("attributes");
  const std::string packed = block::Compress(w.bytes(), 3);
  std::string raw;
  ASSERT_TRUE(block::Decompress(packed, &raw, 1 << 20));
  block::Reader r(raw);
  EXPECT_EQ(r.Varint(), 300u);
  EXPECT_EQ(r.Signed(), -5);
  EXPECT_EQ(r.Bytes(), "attributes");
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.Bytes(), "");  // past the end: empty, and marked
  EXPECT_FALSE(r.ok());
  EXPECT_FALSE(block::Decompress("not zstd", &raw, 1 << 20));
  EXPECT_FALSE(block::Decompress(packed, &raw, 4));  // inflates beyond the bound
}

// A span record as the demo's traffic has them: the same keys, different numbers.
std::string DemoLikeRecord(int i) {
  return fmt::format(R"({{"gen_ai.request.model":"model-{}","gen_ai.usage.input_tokens":{},)"
                     R"("gen_ai.usage.output_tokens":{},"gen_ai.latency.time_to_first_token":{},)"
                     R"("gen_ai.latency.e2e":{},"gen_ai.response.finish_reasons":["stop"]}})",
                     i % 3, 17 * i % 997, 31 * i % 401, 1000003LL * i % 9999991,
                     7777777LL * i % 99999989);
}

TEST(StoreBlock, ADictionaryCompressedBlockReadsBackOnlyWithItsDictionary) {
  std::string samples;
  std::vector<std::size_t> sizes;
  for (int i = 0; i < 1000; ++i) {
    samples += DemoLikeRecord(i);
    sizes.push_back(DemoLikeRecord(i).size());
  }
  auto dict = block::Train(samples, sizes, 8 * 1024);
  ASSERT_NE(dict, nullptr);
  block::Writer w;
  for (int i = 1000; i < 1030; ++i) {
    w.NextRecord();
    w.Bytes(DemoLikeRecord(i));
  }
  const std::string with = block::Compress(w.bytes(), 3, nullptr, dict.get());
  const std::string without = block::Compress(w.bytes(), 3);
  ASSERT_FALSE(with.empty());
  EXPECT_LT(with.size(), without.size());
  std::string raw;
  ASSERT_TRUE(block::Decompress(with, &raw, 1 << 20, dict.get()));
  EXPECT_EQ(raw, w.bytes());
  EXPECT_FALSE(block::Decompress(with, &raw, 1 << 20));  // not without it
  block::Dictionary other("not a trained dictionary, only content");
  EXPECT_FALSE(block::Decompress(with, &raw, 1 << 20, &other));
  EXPECT_FALSE(block::Train(samples.substr(0, 100), {100}, 8 * 1024));  // too little to learn
}

TEST_F(SqliteStoreTest, StoresSpansWithTheDocumentedFields) {
  auto store = OpenStore();
  TracesRequest req = testing::RichRequest();
  AddSpan(&req, "00f067aa0ba902b7", "", "root", 1700000000000000000ull, 1700000000200000000ull);
  std::string error;
  ASSERT_TRUE(store->InsertTraces(req, &error)) << error;
  EXPECT_EQ(store->CountSpans(), 2);
  SpanFilter f;
  f.name = "chat m";
  const auto spans = store->Spans(f);
  ASSERT_EQ(spans.size(), 1u);
  const StoredSpan& s = spans[0];
  EXPECT_EQ(s.trace_id, testing::kTrace);
  EXPECT_EQ(s.span_id, "b7ad6b7169203331");
  EXPECT_EQ(s.parent_span_id, "00f067aa0ba902b7");
  EXPECT_EQ(s.kind, 2);
  EXPECT_EQ(s.start_time_unix_nano, 1700000000000000000ll);
  EXPECT_EQ(s.end_time_unix_nano, 1700000000123456789ll);
  EXPECT_EQ(s.status_code, 2);
  EXPECT_EQ(s.status_message, "boom");
  EXPECT_EQ(Json(s.attributes, "gen_ai.request.model"), "\"m\"");
  EXPECT_EQ(Json(s.attributes, "gen_ai.usage.input_tokens"), "42");
  EXPECT_EQ(Json(s.attributes, "big"), "9007199254740993");
  EXPECT_EQ(Json(s.attributes, "gen_ai.request.is_stream"), "true");
  EXPECT_EQ(s.events, R"([{"name":"gen_ai.content.prompt","time_unix_nano":1700000000000000500,)"
                      R"("attributes":{"n":1}}])");
  EXPECT_EQ(s.links,
            R"([{"trace_id":"11111111111111111111111111111111","span_id":"2222222222222222",)"
            R"("attributes":{"why":"retry"}}])");
  EXPECT_EQ(Json(s.resource, "service.name"), "\"infertel-test\"");
  EXPECT_EQ(s.scope, "infertel.gateway");
  EXPECT_EQ(s.service_name, "infertel-test");
  f.name = "root";
  ASSERT_EQ(store->Spans(f).size(), 1u);
  EXPECT_EQ(store->Spans(f)[0].parent_span_id, "");

  // The dump's JSON: times as exact decimal strings, attributes as an object.
  std::string json;
  AppendSpanJson(&json, s);
  EXPECT_EQ(Json(json, "start_time_unix_nano"), "\"1700000000000000000\"");
  EXPECT_EQ(Json(json, "parent_span_id"), "\"00f067aa0ba902b7\"");
  EXPECT_EQ(Json(Json(json, "attributes"), "gen_ai.request.model"), "\"m\"");
}

// Demo-like spans in requests of 40, enough for the partition to train its dictionary.
void InsertDemoLikeSpans(SqliteStore* store, int first, int count) {
  for (int i = first; i < first + count; i += 40) {
    TracesRequest req;
    for (int j = i; j < i + 40 && j < first + count; ++j) {
      Span* s = AddSpan(&req, fmt::format("{:016x}", j + 1), "", "chat", 1000 + j, 2000 + j,
                        fmt::format("{:032x}", j + 1));
      s->mutable_attributes()->Clear();
      AddAttr(s->mutable_attributes(), "record", DemoLikeRecord(j));
    }
    std::string error;
    ASSERT_TRUE(store->InsertTraces(req, &error)) << error;
  }
}

std::int64_t QueryInt(const std::string& file, const char* sql) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* s = nullptr;
  std::int64_t v = -1;
  if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
    v = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  sqlite3_close(db);
  return v;
}

void Exec(const std::string& file, const char* sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(file.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
}

// Spans whose record reads back whole, and spans read at all (ids and name from their rows).
std::pair<int, int> WholeAndAll(SqliteStore* store) {
  int whole = 0, all = 0;
  for (const auto& s : store->Spans({})) {
    ++all;
    const int j = std::stoi(s.span_id, nullptr, 16) - 1;
    EXPECT_EQ(s.trace_id, fmt::format("{:032x}", j + 1));
    EXPECT_EQ(s.name, "chat");
    whole += Json(s.attributes, "record") != "<absent>";
  }
  return {whole, all};
}

// A partition trains a zstd dictionary from its first blocks' records and compresses the
// rest with it; without the dictionary (a damaged or missing table) the rows still read.
TEST_F(SqliteStoreTest, BlocksUseThePartitionsDictionaryAndRowsReadWithoutIt) {
  constexpr int kSpans = 1200;
  std::string file;
  {
    auto store = OpenStore();
    InsertDemoLikeSpans(store.get(), 0, kSpans);
    ASSERT_EQ(store->Files().size(), 1u);
    file = store->Files()[0];
    EXPECT_EQ(QueryInt(file, "SELECT count(*) FROM zdicts"), 1);
    EXPECT_GT(QueryInt(file, "SELECT count(*) FROM blocks WHERE zdict = 1"), 0);
    EXPECT_GT(QueryInt(file, "SELECT count(*) FROM blocks WHERE zdict = 0"), 0);
    EXPECT_EQ(WholeAndAll(store.get()), std::make_pair(kSpans, kSpans));
  }
  const int before_dict =
      static_cast<int>(QueryInt(file, "SELECT sum(items) FROM blocks WHERE zdict = 0"));
  for (const char* damage : {"UPDATE zdicts SET data = x'28b52ffd00'", "DROP TABLE zdicts"}) {
    Exec(file, damage);
    auto store = OpenStore();  // a new partition; the damaged one read as it is
    EXPECT_EQ(WholeAndAll(store.get()), std::make_pair(before_dict, kSpans)) << damage;
  }
}

// Small exports fill one block across transactions (the open block, rewritten with each),
// and every span reads back whole after each of them; a full block closes and the next starts.
TEST_F(SqliteStoreTest, SmallExportsFillOneBlockAcrossTransactions) {
  auto store = OpenStore();
  constexpr int kPerExport = 10, kExports = 60;
  for (int i = 0; i < kExports; ++i) {
    InsertDemoLikeSpans(store.get(), i * kPerExport, kPerExport);
    if (i % 7 == 0 || i == kExports - 1) {
      EXPECT_EQ(WholeAndAll(store.get()),
                std::make_pair((i + 1) * kPerExport, (i + 1) * kPerExport))
          << i;
    }
  }
  const std::string file = store->Files()[0];
  EXPECT_EQ(QueryInt(file, "SELECT count(*) FROM blocks WHERE signal = 0"), 2);
  EXPECT_EQ(QueryInt(file, "SELECT max(items) FROM blocks WHERE signal = 0"), 512);
  EXPECT_EQ(QueryInt(file, "SELECT sum(items) FROM blocks WHERE signal = 0"),
            kPerExport * kExports);
  EXPECT_EQ(QueryInt(file, "SELECT count(DISTINCT block) FROM spans"), 2);
  // A store opened again starts a partition, and with it a block of its own.
  store.reset();
  store = OpenStore();
  InsertDemoLikeSpans(store.get(), kPerExport * kExports, kPerExport);
  EXPECT_EQ(WholeAndAll(store.get()),
            std::make_pair(kPerExport * (kExports + 1), kPerExport * (kExports + 1)));
}

// A transaction that fails after rewriting the open block (a span row refused, here by a
// trigger) leaves the block as it was committed; the next spans read back whole.
TEST_F(SqliteStoreTest, AFailedTransactionLeavesTheOpenBlockAsCommitted) {
  auto store = OpenStore();
  InsertDemoLikeSpans(store.get(), 0, 10);
  const std::string file = store->Files()[0];
  Exec(file, "CREATE TRIGGER refuse BEFORE INSERT ON spans BEGIN SELECT RAISE(ABORT, 'no'); END");
  TracesRequest req;
  AddSpan(&req, fmt::format("{:016x}", 100), "", "chat", 1, 2, fmt::format("{:032x}", 100));
  std::string error;
  EXPECT_FALSE(store->InsertTraces(req, &error));
  Exec(file, "DROP TRIGGER refuse");
  InsertDemoLikeSpans(store.get(), 10, 10);
  EXPECT_EQ(WholeAndAll(store.get()), std::make_pair(20, 20));
  EXPECT_EQ(QueryInt(file, "SELECT sum(items) FROM blocks WHERE signal = 0"), 20);
}

// Rows go in many to a statement (Partition::kRowsPerInsert); each keeps the trace index's
// part of its own rowid, across the first part's end, and every root its summary row.
TEST_F(SqliteStoreTest, RowsInsertedManyAtATimeKeepTheirPartsAndSummaries) {
  constexpr int kSpans = (1 << kTracePartShift) + 437;  // odd: statements of one row too
  auto store = OpenStore();
  for (int i = 0; i < kSpans;) {
    TracesRequest req;
    const int n = std::min(kSpans - i, 1 + (i % 3 == 0 ? 600 : i % 37));
    for (int j = i; j < i + n; ++j)
      AddSpan(&req, fmt::format("{:016x}", j + 1), "", "chat", 1000 + j, 2000 + j,
              fmt::format("{:032x}", j + 1));
    std::string error;
    ASSERT_TRUE(store->InsertTraces(req, &error)) << error;
    i += n;
  }
  ASSERT_EQ(store->Files().size(), 1u);
  const std::string file = store->Files()[0];
  EXPECT_EQ(QueryInt(file, "SELECT count(*) FROM spans"), kSpans);
  EXPECT_EQ(QueryInt(file, "SELECT max(rowid) FROM spans"), kSpans);
  EXPECT_EQ(QueryInt(file, "SELECT count(*) FROM spans WHERE part != rowid >> 16"), 0);
  EXPECT_EQ(QueryInt(file, "SELECT count(*) FROM spans WHERE span != rowid"), 0);  // in order
  EXPECT_EQ(QueryInt(file, "SELECT count(DISTINCT tid2) FROM traces"), kSpans);
  EXPECT_EQ(QueryInt(file, "SELECT count(*) FROM traces WHERE tid2 != rowid"), 0);
  for (int j : {0, 15, 16, (1 << kTracePartShift) - 1, 1 << kTracePartShift, kSpans - 1}) {
    const auto spans = store->TraceSpans(fmt::format("{:032x}", j + 1));
    ASSERT_EQ(spans.size(), 1u) << j;
    EXPECT_EQ(spans[0].span_id, fmt::format("{:016x}", j + 1));
  }
  TraceFilter f;
  f.limit = 3;
  const auto page = store->Traces(f);
  ASSERT_EQ(page.size(), 3u);
  EXPECT_EQ(page[0].trace_id, fmt::format("{:032x}", kSpans));  // the newest first
}

// After a roll, the new partition's first blocks use the previous partition's dictionary,
// stored in the new file so that it reads on its own.
TEST_F(SqliteStoreTest, ANewPartitionStartsWithThePreviousDictionary) {
  StoreOptions o;
  o.max_bytes = 2 << 20;  // partitions of 256 KiB
  auto store = OpenStore(o);
  int spans = 0;
  for (; store->Files().size() < 2 && spans < 40000; spans += 400)
    InsertDemoLikeSpans(store.get(), spans, 400);
  ASSERT_GE(store->Files().size(), 2u);
  const std::string newest = store->Files().back();
  EXPECT_EQ(QueryInt(newest, "SELECT zdict FROM blocks ORDER BY id LIMIT 1"), 1);
  EXPECT_EQ(QueryInt(newest, "SELECT count(*) FROM zdicts WHERE id = 1"), 1);
  store.reset();
  std::string error, raw;
  auto p = Partition::Open(newest, false, nullptr, &error);
  ASSERT_NE(p, nullptr) << error;
  EXPECT_TRUE(p->ReadBlock(QueryInt(newest, "SELECT min(id) FROM blocks"), &raw));
  EXPECT_FALSE(raw.empty());
}

// Each span keeps exactly its own text (ids, JSON), however the spans before it differ.
TEST_F(SqliteStoreTest, EachSpanKeepsItsOwnTextWhenSpansDiffer) {
  auto store = OpenStore();
  TracesRequest req;
  const std::string long_value(3000, 'x');
  Span* a = AddSpan(&req, "1111111111111111", "2222222222222222", "a", 1, 2,
                    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
  AddAttr(a->mutable_attributes(), "long", long_value);
  a->add_events()->set_name("e");
  auto* link = a->add_links();
  link->set_trace_id(testing::Bytes("cccccccccccccccccccccccccccccccc"));
  link->set_span_id(testing::Bytes("3333333333333333"));
  AddSpan(&req, "4444444444444444", "", "b", 3, 4, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
  Span* c = AddSpan(&req, "5555555555555555", "0000000000000000", "c", 5, 6,
                    "dddddddddddddddddddddddddddddddd");
  AddAttr(c->mutable_attributes(), "k", "v");
  std::string error;
  ASSERT_TRUE(store->InsertTraces(req, &error)) << error;
  std::vector<std::vector<std::string>> rows;
  for (const auto& s : store->Spans({}))
    rows.push_back(
        {s.name, s.trace_id, s.span_id, s.parent_span_id, s.attributes, s.events, s.links});
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0],
            (std::vector<std::string>{"a", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "1111111111111111",
                                      "2222222222222222", "{\"long\":\"" + long_value + "\"}",
                                      R"([{"name":"e","time_unix_nano":0,"attributes":{}}])",
                                      R"([{"trace_id":"cccccccccccccccccccccccccccccccc",)"
                                      R"("span_id":"3333333333333333","attributes":{}}])"}));
  // No parent, and an all-zero parent, are both a root.
  EXPECT_EQ(rows[1], (std::vector<std::string>{"b", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
                                               "4444444444444444", "", "{}", "[]", "[]"}));
  EXPECT_EQ(rows[2],
            (std::vector<std::string>{"c", "dddddddddddddddddddddddddddddddd", "5555555555555555",
                                      "", R"({"k":"v"})", "[]", "[]"}));
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
  const auto stored = store->Logs({});
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_EQ(stored[0].time_unix_nano, 555);
  EXPECT_EQ(stored[0].observed_time_unix_nano, 555);
  EXPECT_EQ(stored[0].severity_number, 17);
  EXPECT_EQ(stored[0].event_name, "gen_ai.choice");
  EXPECT_EQ(stored[0].body, "\"oops\"");
  EXPECT_EQ(stored[0].trace_id, "");

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
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(MetricsFilePath(path_).c_str(), &db, SQLITE_OPEN_READONLY, nullptr),
            SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db,
                               "SELECT value, time_unix_nano, type, labels FROM metrics WHERE "
                               "labels LIKE '%\"a\"%'",
                               -1, &st, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_DOUBLE_EQ(sqlite3_column_double(st, 0), 5);
  EXPECT_EQ(sqlite3_column_int64(st, 1), 200);
  EXPECT_EQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 3)),
            std::string("{\"engine\":\"0\",\"model_name\":\"a\"}"));  // keys sorted
  sqlite3_finalize(st);
  sqlite3_close(db);

  // Bounded by series: a new series beyond the limit is refused and counted, known ones update.
  StoreOptions o;
  o.path = (dir_ / "few").string();
  o.max_series = 1;
  SqliteStore few;
  ASSERT_TRUE(few.Open(o, &error)) << error;
  ASSERT_TRUE(few.UpsertMetrics(metrics(1, 100, "a"), &error));
  ASSERT_TRUE(few.UpsertMetrics(metrics(2, 100, "b"), &error));
  ASSERT_TRUE(few.UpsertMetrics(metrics(3, 200, "a"), &error));
  EXPECT_EQ(few.CountMetrics(), 1);
  EXPECT_EQ(few.stats()->series_refused.load(), 1u);
}

// A partition's connection closes when the partition goes, every statement it prepared
// finalized first (an unused one kept it open once: a removed file's space held until exit).
// A statement someone else left open on it keeps the file only until that statement goes, and
// nothing is finalized twice.
TEST_F(SqliteStoreTest, APartitionClosesItsFileWhenItGoes) {
  fs::create_directories(path_);
  std::string error;
  const std::string file = path_ + "/spans-1.db";
  auto p = Partition::Open(file, true, nullptr, &error);
  ASSERT_NE(p, nullptr) << error;
  p.reset();
  fs::remove(file);
  EXPECT_EQ(RemovedButOpen().first, 0);

  const std::string other = path_ + "/spans-2.db";
  p = Partition::Open(other, true, nullptr, &error);
  ASSERT_NE(p, nullptr) << error;
  sqlite3_stmt* outside = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(p->db(), "SELECT count(*) FROM spans", -1, &outside, nullptr),
            SQLITE_OK);
  p.reset();  // logged ("closed with statements still open"), the connection kept for `outside`
  fs::remove(other);
  EXPECT_EQ(RemovedButOpen().first, 1);
  sqlite3_finalize(outside);
  EXPECT_EQ(RemovedButOpen().first, 0);
}

// The bound: after every write the files and their WALs are within max_bytes (plus the WAL's
// slack); the oldest files went, counted, and what is left reads back.
TEST_F(SqliteStoreTest, FilesAndWalsStayWithinTheBound) {
  StoreOptions o;
  o.max_bytes = 3 << 20;
  auto store = OpenStore(o);
  std::string error;
  std::uint64_t peak = 0;
  std::string last_trace;
  // Enough spans to fill the bound more than once, whatever a span takes.
  for (int batch = 0; batch < 200; ++batch) {
    TracesRequest req;
    for (int i = 0; i < 200; ++i) {
      last_trace = fmt::format("{:016x}{:016x}", batch + 1, i + 1);
      Span* s = AddSpan(&req, fmt::format("{:016x}", i + 1), "", "s", 1, 2, last_trace);
      // Incompressible: a random value per span.
      AddAttr(s->mutable_attributes(), "r",
              fmt::format("{:016x}{:016x}", std::rand(), std::rand()));
    }
    ASSERT_TRUE(store->InsertTraces(req, &error)) << error;
    // The files removed count until nothing holds them open: each export here leaves the
    // partition's last block open and rewrites it (ReplaceBlock), whose statement once kept
    // every removed partition's connection, and its file, open for good.
    const auto [removed_open, removed_bytes] = RemovedButOpen();
    EXPECT_EQ(removed_open, 0) << batch;
    peak = std::max(peak, DirBytes() + removed_bytes);
    EXPECT_LE(store->DiskBytes(), o.max_bytes + o.max_bytes / 32) << batch;
  }
  EXPECT_LE(peak, o.max_bytes + o.max_bytes / 32);
  EXPECT_GT(store->stats()->spans_removed_size.load(), 0u);
  EXPECT_GT(store->stats()->files_removed.load(), 0u);
  EXPECT_EQ(store->TraceSpans(last_trace).size(), 1u);
  EXPECT_EQ(store->Removed().spans_size, store->stats()->spans_removed_size.load());
  EXPECT_GE(store->Files().size(), 4u);  // the grain: about an eighth of the bound per file
}

// Age is the agent's clock at arrival: spans dated far in the future go with their file, and
// spans dated long ago stay until their file is old. Most recent is the last to arrive.
TEST_F(SqliteStoreTest, RetentionAndRecencyFollowArrivalTime) {
  StoreOptions o;
  o.max_age = std::chrono::seconds(80);
  auto store = OpenStore(o);
  std::string error;
  const std::uint64_t now = WallNanos();
  const std::string future = "f0000000000000000000000000000001",
                    past = "a0000000000000000000000000000002";
  TracesRequest first;
  AddSpan(&first, "0000000000000001", "", "future", now + 3'000'000'000'000'000'000ull,
          now + 3'000'000'000'000'000'001ull, future);
  ASSERT_TRUE(store->InsertTraces(first, &error)) << error;
  TracesRequest second;
  AddSpan(&second, "0000000000000002", "", "past", 1'000'000'000, 1'000'000'001, past);
  ASSERT_TRUE(store->InsertTraces(second, &error)) << error;
  EXPECT_EQ(store->RecentTraceIds(10, ""), (std::vector<std::string>{past, future}));
  // Nothing is old yet: the files arrived just now.
  EXPECT_EQ(store->EnforceRetention(now).spans_deleted, 0);
  EXPECT_EQ(store->CountSpans(), 2);
  // A retention pass when everything arrived more than max_age ago: the current file is
  // closed (older than max_age / 8) and removed, with both spans.
  const std::uint64_t later = now + 200'000'000'000ull;
  store->EnforceRetention(later);
  EXPECT_EQ(store->stats()->spans_removed_age.load(), 2u);
  EXPECT_EQ(store->CountSpans(), 0);
  TracesRequest third;
  AddSpan(&third, "0000000000000003", "", "new", now, now + 1, "c0000000000000000000000000000003");
  ASSERT_TRUE(store->InsertTraces(third, &error)) << error;
  store->EnforceRetention(WallNanos());
  EXPECT_EQ(store->RecentTraceIds(10, ""),
            (std::vector<std::string>{"c0000000000000000000000000000003"}));
  EXPECT_EQ(store->Removed().spans_age, 2u);
}

// A trace's spans are found in every file they arrived in, and a page of traces is filtered by
// model, status, operation and minimum duration, newest first.
TEST_F(SqliteStoreTest, FindsTracesAcrossFilesAndFiltersAPage) {
  StoreOptions o;
  o.max_bytes = 8 << 20;  // files of 1 MiB
  auto store = OpenStore(o);
  std::string error;
  const std::string trace = "0123456789abcdef0123456789abcdef";
  for (int batch = 0; batch < 40; ++batch) {
    TracesRequest req;
    for (int i = 0; i < 400; ++i) {
      const bool mine = i == 0;
      Span* s = AddSpan(&req, fmt::format("{:08x}{:08x}", batch + 1, i + 1), "",
                        mine ? "mine" : "other", 1000, 1000 + i * 1000,
                        mine ? trace : fmt::format("{:016x}{:016x}", batch + 7, i + 1));
      AddAttr(s->mutable_attributes(), semconv::kGenAiRequestModel, i % 2 ? "m1" : "m2");
      AddAttr(s->mutable_attributes(), semconv::kGenAiOperationName, "chat");
      AddAttr(s->mutable_attributes(), "r",
              fmt::format("{:016x}{:016x}", std::rand(), std::rand()));
      if (i % 10 == 3) s->mutable_status()->set_code(otlp_trace::Status::STATUS_CODE_ERROR);
    }
    ASSERT_TRUE(store->InsertTraces(req, &error)) << error;
  }
  ASSERT_GE(store->Files().size(), 2u);
  EXPECT_EQ(store->TraceSpans(trace).size(), 40u);
  TraceFilter f;
  f.model = "m1";
  f.status = 2;
  f.min_duration_ns = 50'000;
  f.operation = "chat";
  const auto page = store->Traces(f);
  ASSERT_EQ(page.size(), 50u);
  for (const auto& t : page) {
    EXPECT_EQ(t.model, "m1");
    EXPECT_EQ(t.status_code, 2);
    EXPECT_GE(t.duration_ns, 50'000);
  }
  EXPECT_EQ(page[0].trace_id, fmt::format("{:016x}{:016x}", 39 + 7, 394));  // the newest
  // Errors are found through their partial index, any other status by reading backwards.
  TraceFilter unset;
  unset.status = 0;
  const auto unset_page = store->Traces(unset);
  ASSERT_EQ(unset_page.size(), 50u);
  for (const auto& t : unset_page) EXPECT_EQ(t.status_code, 0);
  TraceFilter errors;
  errors.status = 2;
  errors.limit = 1000;
  EXPECT_EQ(store->Traces(errors).size(), 1000u);
  f.model = "nobody";
  EXPECT_TRUE(store->Traces(f).empty());
}

// A restarted writer finds what the last one committed, in its files, and starts a new one; a
// second writer on the same directory is refused.
TEST_F(SqliteStoreTest, ReopensItsFilesAndHasOneWriter) {
  std::string error;
  {
    auto store = OpenStore();
    TracesRequest req;
    AddSpan(&req, "0000000000000001", "", "a", 1, 2);
    ASSERT_TRUE(store->InsertTraces(req, &error)) << error;
    SqliteStore second;
    StoreOptions o;
    o.path = path_;
    EXPECT_FALSE(second.Open(o, &error));
    EXPECT_NE(error.find("another process"), std::string::npos) << error;
  }
  auto store = OpenStore();
  TracesRequest req;
  AddSpan(&req, "0000000000000002", "", "b", 3, 4);
  ASSERT_TRUE(store->InsertTraces(req, &error)) << error;
  EXPECT_EQ(store->TraceSpans(testing::kTrace).size(), 2u);
  EXPECT_EQ(store->Files().size(), 2u);
}

// The format of earlier versions (one SQLite file with a spans table) is refused, saying what
// to do; nothing is written to it.
TEST_F(SqliteStoreTest, RefusesTheOldSingleFileFormat) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE spans (trace_id TEXT)", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  const auto size = fs::file_size(path_);
  for (bool read_only : {false, true}) {
    StoreOptions o;
    o.path = path_;
    o.read_only = read_only;
    SqliteStore store;
    std::string error;
    EXPECT_FALSE(store.Open(o, &error));
    EXPECT_NE(error.find("Move the file away"), std::string::npos) << error;
  }
  EXPECT_EQ(fs::file_size(path_), size);
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

  std::ofstream(dir_ / "a-file") << "x";
  o.path = (dir_ / "a-file" / "store").string();
  EXPECT_EQ(MakeStoreTraceExporter(o, &error), nullptr);
  EXPECT_FALSE(error.empty());
}

// Recent traces: newest arrival first (of a trace's first span in a file), each once however
// many spans it has; with a service, the traces whose first local root is of that service.
TEST_F(SqliteStoreTest, RecentTracesAreDistinctAndNewestFirst) {
  auto store = OpenStore();
  const std::string a = "a0000000000000000000000000000001", b = "b0000000000000000000000000000002",
                    c = "c0000000000000000000000000000003";
  TracesRequest req;
  AddSpan(&req, "0000000000000001", "", "a-old", 1000, 1100, a);
  AddSpan(&req, "0000000000000002", "", "b", 2000, 2100, b);
  AddSpan(&req, "0000000000000003", "", "c", 3000, 3100, c);
  AddSpan(&req, "0000000000000004", "", "a-new", 4000, 4100, a);
  std::string error;
  ASSERT_TRUE(store->InsertTraces(req, &error)) << error;
  TracesRequest other;  // another service, in trace b only, arriving last
  AddSpan(&other, "0000000000000006", "", "b-engine", 2500, 2600, b);
  other.mutable_resource_spans(0)
      ->mutable_resource()
      ->mutable_attributes(0)
      ->mutable_value()
      ->set_string_value("engine");
  ASSERT_TRUE(store->InsertTraces(other, &error)) << error;
  EXPECT_EQ(store->RecentTraceIds(2, ""), (std::vector<std::string>{c, b}));
  EXPECT_EQ(store->RecentTraceIds(10, ""), (std::vector<std::string>{c, b, a}));
  EXPECT_TRUE(store->RecentTraceIds(10, "engine").empty());
  EXPECT_EQ(store->RecentTraceIds(10, "infertel-test"), (std::vector<std::string>{c, b, a}));
  EXPECT_EQ(store->TraceSpans(b).size(), 2u);
  EXPECT_TRUE(store->RecentTraceIds(0, "").empty());
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
