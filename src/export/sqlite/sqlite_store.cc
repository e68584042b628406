// The store directory: opening it, the bound on disk, retention, and the exporters. The writes
// themselves are in store_write.cc, the queries in store_read.cc.
#include "export/sqlite/sqlite_store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

#include "core/clock.h"
#include "export/sqlite/paced_vfs.h"
#include "export/sqlite/partition.h"
#include "export/sqlite/store_health.h"
#include "export/sqlite/store_internal.h"

namespace infertel::exporting {

namespace fs = std::filesystem;
using namespace store_internal;

struct SqliteStore::Closed {
  std::string path;
  std::int64_t started_ms = 0;
  std::int64_t ended_ms = 0;  // its last write: everything in it arrived before
  std::uint64_t bytes = 0, spans = 0, logs = 0;
};

namespace store_internal {

std::uint64_t FileBytes(const std::string& path) {
  std::error_code ec;
  const auto n = fs::file_size(path, ec);
  return ec ? 0 : n;
}

std::uint64_t WithWal(const std::string& path) {
  return FileBytes(path) + FileBytes(path + "-wal") + FileBytes(path + "-shm");
}

std::int64_t ModifiedMs(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return NowMs();
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1'000'000;
}

std::int64_t NowMs() { return static_cast<std::int64_t>(WallNanos() / 1'000'000); }

std::string PartitionPath(const std::string& dir, std::int64_t ms) {
  return fmt::format("{}/spans-{:013d}.db", dir, ms);
}

// The partitions in `dir`, oldest first, with their start times.
std::vector<std::pair<std::int64_t, std::string>> ListPartitions(const std::string& dir) {
  std::vector<std::pair<std::int64_t, std::string>> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() != 22 || name.rfind("spans-", 0) != 0 || name.substr(19) != ".db") continue;
    std::int64_t ms = 0;
    try {
      ms = std::stoll(name.substr(6, 13));
    } catch (...) {
      continue;
    }
    out.emplace_back(ms, e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The store of earlier versions was one SQLite file at --store: say what to do with it.
std::string OldFormatMessage(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[16] = {};
  in.read(head, sizeof(head));
  const bool sqlite = std::string_view(head, 15) == "SQLite format 3";
  if (!sqlite) return fmt::format("store {}: a file is there, the store is a directory", path);
  return fmt::format(
      "store {} is a single SQLite file, the store format of earlier infertel versions (a `spans` "
      "table); "
      "this version keeps a directory of files. Move the file away (sqlite3 still reads it) "
      "or pass --store a directory",
      path);
}

}  // namespace store_internal

SqliteStore::SqliteStore() = default;

SqliteStore::~SqliteStore() { CloseFiles(); }

void SqliteStore::CloseFiles() {
  if (current_ != nullptr && current_spans_ + current_logs_ == 0) {
    // An empty partition (nothing arrived since start) is not worth keeping.
    const std::string path = current_->path();
    current_.reset();
    std::error_code ec;
    fs::remove(path, ec);
  }
  readers_.clear();
  if (current_ != nullptr) {
    // As at a roll: readers of the file then make no WAL and shared-memory files of their own
    // (32 KiB each time). Not waiting: while another process reads it, it stays in WAL mode.
    sqlite3_busy_timeout(current_->db(), 0);
    sqlite3_exec(current_->db(), "PRAGMA journal_mode=DELETE", nullptr, nullptr, nullptr);
  }
  current_.reset();
  sqlite3_finalize(upsert_metric_);
  upsert_metric_ = nullptr;
  sqlite3_close_v2(metrics_);
  metrics_ = nullptr;
  if (lock_fd_ >= 0) ::close(lock_fd_);
  lock_fd_ = -1;
  closed_.clear();
  summarized_.clear();
  open_spans_ = {};
  series_.clear();
}

StoreFault SqliteStore::LastFault() const { return static_cast<StoreFault>(last_fault_); }

std::uint64_t SqliteStore::ReopenSince(std::uint64_t epoch, StoreHealth& health,
                                       std::string* error) {
  {
    std::lock_guard lock(mu_);
    if (opened_epoch_ > epoch) return opened_epoch_;
    // Files of a deleted directory live on unlinked: closed, and a new directory opened.
    CloseFiles();
    if (!OpenWriter(error)) {
      CloseFiles();
      return 0;
    }
    opened_epoch_ = health.Opened();
  }
  EnforceRetention(WallNanos());
  return opened_epoch_;
}

bool SqliteStore::Open(const std::string& path, std::string* error) {
  StoreOptions o;
  o.path = path;
  o.read_only = true;
  return Open(o, error);
}

bool SqliteStore::Open(const StoreOptions& options, std::string* error) {
  ConfigureSqliteOnce();
  options_ = options;
  if (options_.stats == nullptr) options_.stats = std::make_shared<StoreStats>();
  std::error_code ec;
  if (fs::exists(options_.path, ec) && !fs::is_directory(options_.path, ec)) {
    *error = OldFormatMessage(options_.path);
    return false;
  }
  if (options_.read_only) {
    if (!fs::is_directory(options_.path, ec)) {
      *error = fmt::format("no store at {}", options_.path);
      return false;
    }
    return true;
  }
  if (!OpenWriter(error)) return false;
  // Files that aged out while no agent ran go now, not at the first export.
  EnforceRetention(WallNanos());
  return true;
}

bool SqliteStore::OpenWriter(std::string* error) {
  std::error_code ec;
  fs::create_directories(options_.path, ec);
  if (ec) {
    last_fault_ = static_cast<std::uint8_t>(ClassifyErrno(ec.value()));
    *error = fmt::format("store {}: {}", options_.path, ec.message());
    return false;
  }
  // One writer per directory: two would each count only their own files against the bound.
  lock_fd_ = ::open((options_.path + "/lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd_ < 0 || ::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    last_fault_ =
        static_cast<std::uint8_t>(lock_fd_ < 0 ? ClassifyErrno(errno) : StoreFault::kNone);
    *error =
        fmt::format("store {}: {}", options_.path,
                    lock_fd_ < 0 ? std::strerror(errno) : "another process is writing this store");
    return false;
  }
  const RetentionRecord before = Removed();
  options_.stats->spans_removed_age = before.spans_age;
  options_.stats->spans_removed_size = before.spans_size;
  options_.stats->logs_removed_age = before.logs_age;
  options_.stats->logs_removed_size = before.logs_size;
  return ScanPartitions(error) && OpenMetrics(error) && StartPartition(error);
}

// Opens each partition left by an earlier run once, which replays and folds its WAL (after a
// kill, the transactions it committed), and notes its size and rows.
bool SqliteStore::ScanPartitions(std::string* error) {
  for (const auto& [ms, path] : ListPartitions(options_.path)) {
    Closed c;
    c.path = path;
    c.started_ms = ms;
    c.ended_ms = ModifiedMs(path);  // before opening it, which writes to it
    std::string open_error;
    if (auto p = Partition::Open(path, true, nullptr, &open_error)) {
      c.spans = static_cast<std::uint64_t>(p->MaxRowid("spans"));
      c.logs = static_cast<std::uint64_t>(p->MaxRowid("logs"));
      sqlite3_exec(p->db(), "PRAGMA journal_mode=DELETE", nullptr, nullptr, nullptr);
    } else {
      // Unreadable: kept (it may be a user's) but counted, and the first to go.
      LogStoreProblem(open_error);
    }
    c.bytes = WithWal(path);
    closed_.push_back(std::move(c));
  }
  (void)error;
  return true;
}

bool SqliteStore::StartPartition(std::string* error) {
  std::int64_t ms = NowMs();
  if (!closed_.empty()) ms = std::max(ms, closed_.back().started_ms + 1);
  const std::string path = PartitionPath(options_.path, ms);
  current_ = Partition::Open(path, true, PacedVfsName(), error);
  if (current_ == nullptr) return false;
  current_->LimitWal(WalLimit());
  current_started_ms_ = ms;
  current_spans_ = current_logs_ = 0;
  summarized_.clear();
  open_spans_ = {};
  packer_.NewPartition();
  return true;
}

std::uint64_t SqliteStore::WalLimit() const {
  return std::max<std::uint64_t>(options_.max_bytes / 64, 64 * 1024);
}

// Closes the current partition (its WAL folded into it, and journal mode DELETE, so that
// readers open it without making WAL files of their own) and starts the next.
void SqliteStore::Roll() {
  Closed c;
  c.path = current_->path();
  c.started_ms = current_started_ms_;
  c.spans = current_spans_;
  c.logs = current_logs_;
  c.ended_ms = NowMs();
  sqlite3_exec(current_->db(), "PRAGMA journal_mode=DELETE", nullptr, nullptr, nullptr);
  current_.reset();
  c.bytes = WithWal(c.path);
  closed_.push_back(std::move(c));
  std::string error;
  if (!StartPartition(&error)) LogStoreProblem(error);
}

std::uint64_t SqliteStore::DiskBytes() {
  std::uint64_t total = 0;
  for (const auto& c : closed_) total += c.bytes;
  if (current_ != nullptr) total += WithWal(current_->path());
  if (metrics_ != nullptr) total += WithWal(MetricsFilePath(options_.path));
  return total;
}

void SqliteStore::MakeRoom(std::uint64_t bytes) {
  const std::uint64_t part_max = std::max<std::uint64_t>(options_.max_bytes / 8, 256 * 1024);
  const auto age_ms = static_cast<std::int64_t>(options_.max_age.count()) * 1000;
  const bool old = age_ms > 0 && NowMs() - current_started_ms_ > age_ms / 8;
  if (current_ != nullptr && current_spans_ + current_logs_ > 0 &&
      (old || WithWal(current_->path()) + bytes > part_max))
    Roll();
  for (int round = 0; round < 1000 && options_.max_bytes > 0; ++round) {
    if (DiskBytes() + bytes <= options_.max_bytes) return;
    if (closed_.empty()) {
      if (current_ == nullptr || current_spans_ + current_logs_ == 0) return;
      Roll();
      continue;
    }
    RemoveOldest(false);
  }
}

void SqliteStore::RemoveUntilFits(std::uint64_t bytes) {
  while (options_.max_bytes > 0 && !closed_.empty() && DiskBytes() + bytes > options_.max_bytes)
    RemoveOldest(false);
}

void SqliteStore::RemoveOldest(bool by_age) {
  const Closed c = closed_.front();
  closed_.erase(closed_.begin());
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(c.path + suffix, ec);
  StoreStats& s = *options_.stats;
  (by_age ? s.spans_removed_age : s.spans_removed_size) += c.spans;
  (by_age ? s.logs_removed_age : s.logs_removed_size) += c.logs;
  ++s.files_removed;
  WriteRetentionRecord();
}

void SqliteStore::WriteRetentionRecord() {
  const StoreStats& s = *options_.stats;
  const std::string tmp = options_.path + "/retention.tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << "spans_removed_age " << s.spans_removed_age << "\nspans_removed_size "
        << s.spans_removed_size << "\nlogs_removed_age " << s.logs_removed_age
        << "\nlogs_removed_size " << s.logs_removed_size << "\nlast_unix_nano " << WallNanos()
        << "\n";
  }
  std::error_code ec;
  fs::rename(tmp, options_.path + "/retention", ec);
}

RetentionRecord SqliteStore::Removed() {
  RetentionRecord r;
  std::ifstream in(options_.path + "/retention");
  std::string key;
  std::int64_t v = 0;
  while (in >> key >> v) {
    if (key == "spans_removed_age") r.spans_age = static_cast<std::uint64_t>(v);
    if (key == "spans_removed_size") r.spans_size = static_cast<std::uint64_t>(v);
    if (key == "logs_removed_age") r.logs_age = static_cast<std::uint64_t>(v);
    if (key == "logs_removed_size") r.logs_size = static_cast<std::uint64_t>(v);
    if (key == "last_unix_nano") r.last_unix_nano = v;
  }
  return r;
}

RetentionResult SqliteStore::EnforceRetention(std::uint64_t now_unix_nano) {
  std::lock_guard lock(mu_);
  RetentionResult r;
  const auto age_ms = static_cast<std::int64_t>(options_.max_age.count()) * 1000;
  if (current_ == nullptr || age_ms <= 0) return r;
  const auto now_ms = static_cast<std::int64_t>(now_unix_nano / 1'000'000);
  // The current partition is closed once it is an eighth of max_age old, so that it can go.
  if (now_ms - current_started_ms_ > age_ms / 8 && current_spans_ + current_logs_ > 0) Roll();
  while (!closed_.empty()) {
    if (closed_.front().ended_ms >= now_ms - age_ms) break;
    r.spans_deleted += static_cast<std::int64_t>(closed_.front().spans);
    r.logs_deleted += static_cast<std::int64_t>(closed_.front().logs);
    RemoveOldest(true);
  }
  r.metrics_deleted = DeleteOldMetrics((now_ms - age_ms) * 1'000'000);
  return r;
}

std::vector<std::string> SqliteStore::Files() {
  std::vector<std::string> out;
  for (const auto& [ms, path] : ListPartitions(options_.path)) out.push_back(path);
  return out;
}

std::string MetricsFilePath(const std::string& store_dir) { return store_dir + "/metrics.db"; }

// ---- stats ----

void RegisterStoreStats(StatsRegistry& registry, std::shared_ptr<const StoreStats> stats) {
  const char* help = "Items the store's retention removed, by signal and reason.";
  auto add = [&](const char* labels, const std::atomic<std::uint64_t>* v) {
    registry.AddFn("infertel_store_retention_removed", help, StatsRegistry::Type::kCounter, labels,
                   [stats, v] { return static_cast<double>(v->load()); });
  };
  add("signal=\"traces\",reason=\"age\"", &stats->spans_removed_age);
  add("signal=\"traces\",reason=\"size\"", &stats->spans_removed_size);
  add("signal=\"logs\",reason=\"age\"", &stats->logs_removed_age);
  add("signal=\"logs\",reason=\"size\"", &stats->logs_removed_size);
  registry.AddFn("infertel_store_files_removed",
                 "Store partition files removed by retention (age or size).",
                 StatsRegistry::Type::kCounter, "",
                 [stats] { return static_cast<double>(stats->files_removed.load()); });
  registry.AddFn("infertel_store_metric_series_refused",
                 "Metric points of new series not stored: the store keeps at most its series "
                 "limit.",
                 StatsRegistry::Type::kCounter, "",
                 [stats] { return static_cast<double>(stats->series_refused.load()); });
}

// ---- exporters ----

namespace {

// Spans per export: one transaction each, whose cost per span falls with its size
// (docs/performance-history.md, "Larger store transactions").
constexpr std::size_t kStoreBatchRows = 4096;

// The process's writable stores by path: the trace, log and metric exporters share one.
std::shared_ptr<SqliteStore> SharedStore(const StoreOptions& options, std::string* error) {
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<SqliteStore>> stores;
  std::lock_guard lock(mu);
  std::error_code ec;
  // Absolute and normal, whether or not the directory exists yet.
  const std::string key = fs::absolute(options.path, ec).lexically_normal().string();
  if (auto s = stores[key].lock()) return s;
  auto s = std::make_shared<SqliteStore>();
  StoreOptions o = options;
  o.read_only = false;
  if (!s->Open(o, error)) return nullptr;
  stores[key] = s;
  return s;
}

template <typename Request>
class StoreExporter final : public pipeline::Exporter<Request> {
 public:
  StoreExporter(std::shared_ptr<SqliteStore> store, std::shared_ptr<StoreHealth> health)
      : store_(std::move(store)), health_(std::move(health)) {
    if (health_) epoch_ = health_->Opened();
  }
  std::string_view Name() const noexcept override { return "store"; }
  std::size_t BatchItems(std::size_t configured) const noexcept override {
    return std::max(configured, kStoreBatchRows);
  }

  pipeline::ExportResult Export(const Request& request) noexcept override {
    try {
      PaceWritesOnThisThread paced(&pacer_);
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
  bool UsePacer(pipeline::Pacer pacer) noexcept override {
    pacer_ = pacer;
    return true;
  }

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
    // The store is shared: the first exporter told reopens it, the others take its epoch.
    const std::uint64_t epoch = store_->ReopenSince(epoch_, *health_, error);
    if (epoch == 0) {
      health_->AfterWriteFailed(store_->LastFault(), *error);
      return false;
    }
    epoch_ = epoch;
    return true;
  }
  // The hooks after a write: false when its batch is lost (written into an unlinked file).
  bool Reported(bool ok, std::string* error) {
    if (!ok) {
      health_->AfterWriteFailed(store_->LastFault(), *error);
      return true;
    }
    if (health_->AfterWriteOk()) return true;
    *error = health_->Describe();
    return false;
  }

  void MaybeCleanup() {
    // Only the trace exporter runs age retention: one pass for the shared store.
    if constexpr (!std::is_same_v<Request, TracesRequest>) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_cleanup_ < store_->options().cleanup_interval) return;
    last_cleanup_ = now;
    store_->EnforceRetention(WallNanos());
  }

  std::shared_ptr<SqliteStore> store_;
  std::shared_ptr<StoreHealth> health_;  // null: no fault handling (tests)
  std::uint64_t epoch_ = 0;
  pipeline::Pacer pacer_;
  std::chrono::steady_clock::time_point last_cleanup_{};
};

template <typename Request>
std::unique_ptr<pipeline::Exporter<Request>> MakeStoreExporter(const StoreOptions& options,
                                                               std::shared_ptr<StoreHealth> health,
                                                               std::string* error) {
  auto store = SharedStore(options, error);
  if (store == nullptr) return nullptr;
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
