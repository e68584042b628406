#include "export/sqlite/store_health.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "core/thread_name.h"

namespace infertel::exporting {
namespace {

constexpr std::chrono::seconds kLogInterval{10};

std::string ErrnoText(int err) { return std::strerror(err); }

}  // namespace

std::string_view StoreFaultName(StoreFault f) {
  switch (f) {
    case StoreFault::kNone:
      return "none";
    case StoreFault::kDirectoryMissing:
      return "directory_missing";
    case StoreFault::kFileMissing:
      return "file_missing";
    case StoreFault::kDiskFull:
      return "disk_full";
    case StoreFault::kReadOnly:
      return "read_only";
    case StoreFault::kIoError:
    case StoreFault::kCount:
      break;
  }
  return "io_error";
}

StoreFault ClassifyErrno(int err) {
  switch (err) {
    case ENOSPC:
    case EDQUOT:
      return StoreFault::kDiskFull;
    case EROFS:
      return StoreFault::kReadOnly;
    case ENOENT:
    case ENOTDIR:
      return StoreFault::kDirectoryMissing;
    default:
      return StoreFault::kIoError;
  }
}

StoreFault ClassifySqliteError(int extended_code, int system_errno) {
  switch (extended_code & 0xff) {
    case SQLITE_FULL:
      return StoreFault::kDiskFull;
    case SQLITE_READONLY:
      return StoreFault::kReadOnly;
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      // The system's errno says more than SQLite's code (SQLITE_IOERR_WRITE on EROFS).
      return system_errno != 0 ? ClassifyErrno(system_errno) : StoreFault::kIoError;
    default:
      return StoreFault::kNone;  // busy, locked, constraint, misuse: not the file system
  }
}

StoreFault ClassifySqliteFailure(sqlite3* db) {
  return db ? ClassifySqliteError(sqlite3_extended_errcode(db), sqlite3_system_errno(db))
            : StoreFault::kIoError;
}

PathCheck CheckStorePath(const std::string& path, const FileIdentity& opened,
                         std::uint64_t min_free_bytes) {
  namespace fs = std::filesystem;
  const fs::path p(path);
  const std::string dir = p.has_parent_path() ? p.parent_path().string() : std::string(".");
  struct stat st {};
  const int dir_errno = ::stat(dir.c_str(), &st) != 0 ? errno : S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
  if (dir_errno != 0)
    return {StoreFault::kDirectoryMissing,
            fmt::format("directory {}: {}", dir, ErrnoText(dir_errno))};
  struct statvfs vfs {};
  if (::statvfs(dir.c_str(), &vfs) == 0) {
    if (vfs.f_flag & ST_RDONLY)
      return {StoreFault::kReadOnly, fmt::format("{} is on a read-only file system", dir)};
    const std::uint64_t free_bytes =
        static_cast<std::uint64_t>(vfs.f_bavail) * static_cast<std::uint64_t>(vfs.f_frsize);
    if (free_bytes < min_free_bytes)
      return {StoreFault::kDiskFull,
              fmt::format("{} bytes left on the file system of {}", free_bytes, dir)};
  }
  if (!opened.known) return {};
  if (::stat(path.c_str(), &st) != 0)
    return {StoreFault::kFileMissing, fmt::format("{}: {}", path, ErrnoText(errno))};
  if (static_cast<std::uint64_t>(st.st_dev) != opened.dev ||
      static_cast<std::uint64_t>(st.st_ino) != opened.ino)
    return {StoreFault::kFileMissing, fmt::format("{} was replaced by another file", path)};
  return {};
}

StoreHealth::StoreHealth(StoreHealthOptions options) : options_(std::move(options)) {
  watcher_ = std::thread([this] { Watch(); });
}

StoreHealth::~StoreHealth() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (watcher_.joinable()) watcher_.join();
}

void StoreHealth::RegisterStats(StatsRegistry* stats) {
  for (std::size_t i = 1; i < kStoreFaultCount; ++i) {
    stats->Add("infertel_store_faults",
               "Faults of the embedded store's file system, by cause (docs/store.md)",
               StatsRegistry::Type::kCounter,
               fmt::format("cause=\"{}\"", StoreFaultName(static_cast<StoreFault>(i))),
               &faults_[i]);
  }
  stats->AddFn("infertel_store_faulted",
               "1 while the embedded store has a fault and its writes are dropped",
               StatsRegistry::Type::kGauge, "", [this] { return Faulted() ? 1.0 : 0.0; });
}

void StoreHealth::Watch() {
  NameThisThread("store-health");
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    CheckNow();
    lock.lock();
    stop_cv_.wait_for(lock, options_.check_interval, [this] { return stopping_; });
  }
}

void StoreHealth::CheckNow() {
  FileIdentity identity;
  {
    std::lock_guard lock(mu_);
    identity = identity_;
  }
  PathCheck check = CheckStorePath(options_.path, identity, options_.min_free_bytes);
  std::lock_guard lock(mu_);
  observed_ = check.fault;
  if (check.fault == StoreFault::kNone) return;
  // A recreated directory shows as a missing file until a writer reopens: the same fault.
  if (cause_ != StoreFault::kNone && (check.fault == cause_ || !Blocks(check.fault))) return;
  EnterLocked(check.fault, std::move(check.detail));
}

bool StoreHealth::Blocks(StoreFault observed) {
  // A missing file is what a reopen mends; the others a writer cannot change.
  return observed != StoreFault::kNone && observed != StoreFault::kFileMissing;
}

std::uint64_t StoreHealth::Opened() {
  struct stat st {};
  std::lock_guard lock(mu_);
  if (::stat(options_.path.c_str(), &st) == 0)
    identity_ = {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino),
                 true};
  return epoch_;
}

StoreHealth::Gate StoreHealth::BeforeWrite(std::uint64_t opened_epoch) {
  std::lock_guard lock(mu_);
  if (cause_ == StoreFault::kNone) return opened_epoch == epoch_ ? Gate::kWrite : Gate::kReopen;
  const auto now = Clock::now();
  if (Blocks(observed_) || now - last_probe_ < options_.probe_interval) return Gate::kDrop;
  last_probe_ = now;
  return Gate::kReopen;
}

bool StoreHealth::AfterWriteOk() {
  FileIdentity identity;
  {
    std::lock_guard lock(mu_);
    identity = identity_;
  }
  struct stat st {};
  if (identity.known && (::stat(options_.path.c_str(), &st) != 0 ||
                         static_cast<std::uint64_t>(st.st_dev) != identity.dev ||
                         static_cast<std::uint64_t>(st.st_ino) != identity.ino)) {
    CheckNow();  // begins the fault with its cause: the directory or the file
    return false;
  }
  std::lock_guard lock(mu_);
  // Not while the watcher still sees a cause: a write into a full disk's existing pages, or
  // one that was under way when the file system went read-only, does not end the fault.
  if (cause_ != StoreFault::kNone && !Blocks(observed_)) RecoverLocked();
  return true;
}

void StoreHealth::AfterWriteFailed(StoreFault fault, std::string_view error) {
  if (fault == StoreFault::kNone) return;
  std::lock_guard lock(mu_);
  if (fault != cause_) EnterLocked(fault, std::string(error));
}

void StoreHealth::EnterLocked(StoreFault fault, std::string detail) {
  const bool was_faulted = cause_ != StoreFault::kNone;
  if (!was_faulted) since_ = Clock::now();
  cause_ = fault;
  detail_ = std::move(detail);
  ++epoch_;  // every writer reopens before it writes again
  last_probe_ = {};
  faults_[static_cast<std::size_t>(fault)].fetch_add(1, std::memory_order_relaxed);
  faulted_.store(true, std::memory_order_relaxed);
  std::uint64_t unlogged = 0;
  fault_logged_ = MayLogLocked(&unlogged);
  if (!fault_logged_) return;
  spdlog::error(
      "store {}: {} ({}): its writes are dropped and counted until the cause goes, then it is "
      "reopened there{}",
      options_.path, StoreFaultName(fault), detail_,
      unlogged ? fmt::format(" ({} earlier faults not logged)", unlogged) : "");
}

void StoreHealth::RecoverLocked() {
  const StoreFault was = cause_;
  cause_ = StoreFault::kNone;
  detail_.clear();
  faulted_.store(false, std::memory_order_relaxed);
  // Said whenever its fault was, so that the log never ends on a fault that is over.
  if (!std::exchange(fault_logged_, false)) return;
  const auto seconds = std::chrono::duration<double>(Clock::now() - since_).count();
  spdlog::info("store {}: recovered from {} after {:.1f} s: writing again", options_.path,
               StoreFaultName(was), seconds);
}

bool StoreHealth::MayLogLocked(std::uint64_t* unlogged) {
  const auto now = Clock::now();
  if (last_log_ != Clock::time_point{} && now - last_log_ < kLogInterval) {
    ++unlogged_;
    return false;
  }
  last_log_ = now;
  *unlogged = std::exchange(unlogged_, 0);
  return true;
}

StoreFault StoreHealth::Cause() const {
  std::lock_guard lock(mu_);
  return cause_;
}

std::string StoreHealth::Describe() const {
  std::lock_guard lock(mu_);
  if (cause_ == StoreFault::kNone) return {};
  const auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - since_).count();
  return fmt::format("store {} faulted: {} for {} s ({}); its writes are dropped until it recovers",
                     options_.path, StoreFaultName(cause_), seconds, detail_);
}

}  // namespace infertel::exporting
