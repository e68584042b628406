// The store's fault hooks (export/sqlite/store_health.h), the exporter that calls them, and
// the data directory's rules (export/sqlite/data_dir.h).
#include "export/sqlite/store_health.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <map>

#include "common/telemetry_builders.h"
#include "core/clock.h"
#include "export/sqlite/data_dir.h"
#include "export/sqlite/sqlite_store.h"

namespace infertel::exporting {
namespace {

namespace fs = std::filesystem;

class StoreHealthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("infertel-health-test-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    dir_ = root_ / "data";
    fs::create_directories(dir_);
    path_ = (dir_ / "s.db").string();
  }
  void TearDown() override { fs::remove_all(root_); }

  // A health whose watcher stays out of the way: the tests call CheckNow.
  std::shared_ptr<StoreHealth> Health() {
    return std::make_shared<StoreHealth>(
        StoreHealthOptions{.path = path_,
                           .check_interval = std::chrono::hours(1),
                           .probe_interval = std::chrono::milliseconds(0),
                           .min_free_bytes = 0});
  }

  static std::int64_t Spans(const std::string& path) {
    SqliteStore s;
    std::string error;
    EXPECT_TRUE(s.Open(path, &error)) << error;
    return s.CountSpans();
  }

  fs::path root_, dir_;
  std::string path_;
};

TEST(StoreFaultTest, ClassifiesSqliteAndErrno) {
  EXPECT_EQ(ClassifySqliteError(SQLITE_FULL, 0), StoreFault::kDiskFull);
  EXPECT_EQ(ClassifySqliteError(SQLITE_IOERR_WRITE, ENOSPC), StoreFault::kDiskFull);
  EXPECT_EQ(ClassifySqliteError(SQLITE_IOERR_WRITE, EROFS), StoreFault::kReadOnly);
  EXPECT_EQ(ClassifySqliteError(SQLITE_READONLY_DBMOVED, 0), StoreFault::kReadOnly);
  EXPECT_EQ(ClassifySqliteError(SQLITE_CANTOPEN, ENOENT), StoreFault::kDirectoryMissing);
  EXPECT_EQ(ClassifySqliteError(SQLITE_IOERR_FSYNC, EIO), StoreFault::kIoError);
  EXPECT_EQ(ClassifySqliteError(SQLITE_IOERR, 0), StoreFault::kIoError);
  EXPECT_EQ(ClassifySqliteError(SQLITE_BUSY, 0), StoreFault::kNone);
  EXPECT_EQ(ClassifySqliteError(SQLITE_CONSTRAINT_PRIMARYKEY, 0), StoreFault::kNone);
  EXPECT_EQ(StoreFaultName(StoreFault::kDirectoryMissing), "directory_missing");
  EXPECT_EQ(StoreFaultName(StoreFault::kIoError), "io_error");
}

TEST_F(StoreHealthTest, SeesTheDirectoryGoneAndTheFileReplaced) {
  FileIdentity none;
  EXPECT_EQ(CheckStorePath(path_, none, 0).fault, StoreFault::kNone);
  EXPECT_EQ(CheckStorePath(path_, none, ~std::uint64_t{0}).fault, StoreFault::kDiskFull);
  { std::ofstream(path_) << "x"; }
  struct stat st {};
  ASSERT_EQ(::stat(path_.c_str(), &st), 0);
  FileIdentity opened{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino),
                      true};
  EXPECT_EQ(CheckStorePath(path_, opened, 0).fault, StoreFault::kNone);
  fs::rename(path_, path_ + ".old");
  { std::ofstream(path_) << "y"; }
  EXPECT_EQ(CheckStorePath(path_, opened, 0).fault, StoreFault::kFileMissing);
  fs::remove_all(dir_);
  const PathCheck gone = CheckStorePath(path_, opened, 0);
  EXPECT_EQ(gone.fault, StoreFault::kDirectoryMissing);
  EXPECT_NE(gone.detail.find("No such file or directory"), std::string::npos) << gone.detail;
}

TEST_F(StoreHealthTest, DropsWhileTheCauseLastsThenProbesAndRecovers) {
  StatsRegistry stats;
  auto health = Health();
  health->RegisterStats(&stats);
  { std::ofstream(path_) << "x"; }
  const std::uint64_t epoch = health->Opened();
  EXPECT_EQ(health->BeforeWrite(epoch), StoreHealth::Gate::kWrite);
  fs::remove_all(dir_);
  health->CheckNow();
  EXPECT_TRUE(health->Faulted());
  EXPECT_EQ(health->Cause(), StoreFault::kDirectoryMissing);
  EXPECT_NE(health->Describe().find("directory_missing"), std::string::npos);
  EXPECT_NE(stats.Render().find("infertel_store_faults_total{cause=\"directory_missing\"} 1"),
            std::string::npos)
      << stats.Render();
  EXPECT_NE(stats.Render().find("infertel_store_faulted 1"), std::string::npos);
  EXPECT_EQ(health->BeforeWrite(epoch), StoreHealth::Gate::kDrop);
  health->CheckNow();  // the same cause again: not a new fault
  EXPECT_NE(stats.Render().find("cause=\"directory_missing\"} 1"), std::string::npos);

  fs::create_directories(dir_);
  health->CheckNow();  // the directory is back, the file not yet: a reopen mends that
  EXPECT_TRUE(health->Faulted());
  EXPECT_EQ(health->BeforeWrite(epoch), StoreHealth::Gate::kReopen);
  { std::ofstream(path_) << "new"; }
  const std::uint64_t reopened = health->Opened();
  EXPECT_NE(reopened, epoch);
  EXPECT_TRUE(health->AfterWriteOk());
  EXPECT_FALSE(health->Faulted());
  EXPECT_EQ(health->Describe(), "");
  EXPECT_EQ(health->BeforeWrite(reopened), StoreHealth::Gate::kWrite);
  EXPECT_EQ(health->BeforeWrite(epoch), StoreHealth::Gate::kReopen);  // a writer that slept
  EXPECT_NE(stats.Render().find("infertel_store_faulted 0"), std::string::npos);
}

TEST_F(StoreHealthTest, AWriteFailureIsAFaultUntilAWriteSucceeds) {
  auto health = Health();
  { std::ofstream(path_) << "x"; }
  const std::uint64_t epoch = health->Opened();
  health->AfterWriteFailed(StoreFault::kNone, "database is locked");
  EXPECT_FALSE(health->Faulted());
  health->AfterWriteFailed(StoreFault::kDiskFull, "database or disk is full");
  EXPECT_EQ(health->Cause(), StoreFault::kDiskFull);
  health->CheckNow();  // the watcher sees space: the writer may probe
  EXPECT_EQ(health->BeforeWrite(epoch), StoreHealth::Gate::kReopen);
  health->AfterWriteFailed(StoreFault::kDiskFull, "database or disk is full");
  EXPECT_TRUE(health->Faulted());
  EXPECT_TRUE(health->AfterWriteOk());
  EXPECT_FALSE(health->Faulted());
}

TEST_F(StoreHealthTest, AWriteIntoAnUnlinkedFileIsLost) {
  auto health = Health();
  { std::ofstream(path_) << "x"; }
  health->Opened();
  fs::remove(path_);
  EXPECT_FALSE(health->AfterWriteOk());
  EXPECT_EQ(health->Cause(), StoreFault::kFileMissing);
}

TEST_F(StoreHealthTest, ExporterDropsDuringAFaultAndReopensARecreatedDirectory) {
  auto health = Health();
  StoreOptions o;
  o.path = path_;
  std::string error;
  auto exporter = MakeStoreTraceExporter(o, &error, health);
  ASSERT_TRUE(exporter) << error;
  auto logs = MakeStoreLogExporter(o, &error, health);  // a second connection, idle meanwhile
  ASSERT_TRUE(logs) << error;
  TracesRequest req;  // now: retention (24 h) leaves it
  const std::uint64_t now = WallNanos();
  testing::AddSpan(&req, "b7ad6b7169203331", "", "chat m", now, now + 1);
  ASSERT_TRUE(exporter->Export(req).ok());
  EXPECT_EQ(Spans(path_), 1);

  fs::remove_all(dir_);
  // Before the watcher looks, the write lands in the unlinked file: reported lost.
  pipeline::ExportResult lost = exporter->Export(req);
  EXPECT_EQ(lost.code, pipeline::ExportCode::kPermanent);
  EXPECT_EQ(health->Cause(), StoreFault::kDirectoryMissing);
  pipeline::ExportResult dropped = exporter->Export(req);
  EXPECT_EQ(dropped.code, pipeline::ExportCode::kPermanent);
  EXPECT_NE(dropped.message.find("directory_missing"), std::string::npos) << dropped.message;

  fs::create_directories(dir_);
  health->CheckNow();
  ASSERT_TRUE(exporter->Export(req).ok());
  EXPECT_FALSE(health->Faulted());
  EXPECT_EQ(Spans(path_), 1);  // a new store in the recreated directory
  // The idle connection reopens too, and closing its old one (on the unlinked file) leaves the
  // new store's WAL, which holds the span, alone.
  LogsRequest log_req;
  log_req.add_resource_logs()->add_scope_logs()->add_log_records()->set_time_unix_nano(now);
  ASSERT_TRUE(logs->Export(log_req).ok());
  EXPECT_EQ(Spans(path_), 1);
  SqliteStore reader;
  ASSERT_TRUE(reader.Open(path_, &error)) << error;
  EXPECT_EQ(reader.CountLogs(), 1);
  logs->Shutdown();
  exporter->Shutdown();
}

TEST(DataDirTest, ChoosesByTheDocumentedRules) {
  std::map<std::string, std::string> vars;
  config::EnvLookup env = [&](std::string_view k) -> std::optional<std::string> {
    auto it = vars.find(std::string(k));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
  std::string error;
  EXPECT_FALSE(ChooseDataDir("", env, false, &error));
  EXPECT_NE(error.find("--data-dir"), std::string::npos);
  vars["HOME"] = "/home/u";
  EXPECT_EQ(ChooseDataDir("", env, false, &error)->path, "/home/u/.local/state/infertel");
  vars["XDG_STATE_HOME"] = "/x/state";
  EXPECT_EQ(ChooseDataDir("", env, false, &error)->path, "/x/state/infertel");
  EXPECT_EQ(ChooseDataDir("", env, true, &error)->path, "/var/lib/infertel");
  vars["STATE_DIRECTORY"] = "/var/lib/svc:/var/lib/other";
  auto d = ChooseDataDir("", env, true, &error);
  EXPECT_EQ(d->path, "/var/lib/svc");
  EXPECT_NE(d->rule.find("STATE_DIRECTORY"), std::string::npos);
  vars["INFERTEL_DATA_DIR"] = "/e";
  EXPECT_EQ(ChooseDataDir("", env, true, &error)->path, "/e");
  d = ChooseDataDir("/f", env, true, &error);
  EXPECT_EQ(d->path, "/f");
  EXPECT_EQ(d->rule, "from --data-dir");
}

TEST_F(StoreHealthTest, MakesTheDataDirectoryWithMode0750) {
  const fs::path made = root_ / "a" / "b" / "infertel";
  std::string error;
  ASSERT_TRUE(MakeDataDir(made.string() + "/", &error)) << error;
  struct stat st {};
  ASSERT_EQ(::stat(made.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0750u);
  ASSERT_EQ(::stat((root_ / "a").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  EXPECT_TRUE(MakeDataDir(made.string(), &error));  // already there
  { std::ofstream((root_ / "file").string()) << "x"; }
  EXPECT_FALSE(MakeDataDir((root_ / "file" / "d").string(), &error));
  EXPECT_NE(error.find("cannot create"), std::string::npos);
}

}  // namespace
}  // namespace infertel::exporting
