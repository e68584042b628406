#pragma once
// Faults of the embedded store's file system, and the hooks every store writer calls around
// its writes (docs/store.md, "Faults").
//
// A fault is one of: the store's directory deleted, the store file deleted or replaced, the
// disk full, the file system read-only, or any other I/O error. They are seen two ways:
//   - a watcher thread looks at the path every second: stat(2) of the file against the
//     identity (device, inode) the writers opened, and of its directory; statvfs(2) of the
//     directory for ST_RDONLY and the bytes left to unprivileged users. A deleted directory
//     gives no write error (the open file lives on, unlinked), so only this sees it;
//   - a writer reports each failed write, classified from SQLite's result code and errno.
// A fault is logged once with its cause (at most one every 10 s) and once more at recovery,
// counted in infertel_store_faults_total{cause}, shown by Describe() in /healthz, and while
// it lasts writes are not attempted: the writer drops the batch (the pipeline counts it as
// export_failed) instead of retrying against a dead disk. Once the watcher no longer sees the
// cause, one writer at a time probes (at most every second): it reopens the store at the path
// (a recreated directory gets a new file) and writes; a write that succeeds ends the fault.
// Every writer whose store was opened before the latest fault reopens before its next write,
// so that none keeps writing into a file that was unlinked.
//
// The hooks, for a writer holding `epoch` (from Opened()):
//   switch (health.BeforeWrite(epoch)) { kWrite: write; kReopen: reopen, epoch = Opened(),
//   write; kDrop: drop the batch }, then AfterWriteOk() (false: the batch was lost) or
//   AfterWriteFailed(cause, error).
// Thread-safe: writers on several threads (one per signal) share one StoreHealth.

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "core/stats.h"

struct sqlite3;

namespace infertel::exporting {

enum class StoreFault : std::uint8_t {
  kNone,
  kDirectoryMissing,  // the store's directory is gone
  kFileMissing,       // the directory is there, the file the writers opened is not
  kDiskFull,          // ENOSPC, SQLITE_FULL, or less than min_free_bytes left
  kReadOnly,          // EROFS, SQLITE_READONLY, or the file system mounted read-only
  kIoError,           // any other failure of the file system (SQLITE_IOERR, CORRUPT, ...)
  kCount,
};
inline constexpr std::size_t kStoreFaultCount = static_cast<std::size_t>(StoreFault::kCount);

// The `cause` label value: none, directory_missing, file_missing, disk_full, read_only,
// io_error.
std::string_view StoreFaultName(StoreFault f);
// A failed SQLite call's cause, from its extended result code and sqlite3_system_errno; kNone
// for failures that are not the file system's (lock contention, a constraint, misuse).
StoreFault ClassifySqliteError(int extended_code, int system_errno);
// The cause of the last failure on a SQLite connection (kIoError when there is none).
StoreFault ClassifySqliteFailure(sqlite3* db);
// A failed system call's cause from errno (for writers that write files themselves).
StoreFault ClassifyErrno(int err);

// The file a writer opened, to tell it from another at the same path.
struct FileIdentity {
  std::uint64_t dev = 0, ino = 0;
  bool known = false;
};

// What the file system says about `path` now: kNone, or the fault and its words.
struct PathCheck {
  StoreFault fault = StoreFault::kNone;
  std::string detail;
};
PathCheck CheckStorePath(const std::string& path, const FileIdentity& opened,
                         std::uint64_t min_free_bytes);

struct StoreHealthOptions {
  std::string path;  // the store file (a directory for a writer that keeps several files)
  std::chrono::milliseconds check_interval{1000};
  std::chrono::milliseconds probe_interval{1000};
  // Fewer bytes left than this (statvfs f_bavail: what an unprivileged user may still write,
  // so root's reserve is left alone) counts as a full disk.
  std::uint64_t min_free_bytes = 1u << 20;
};

class StoreHealth {
 public:
  enum class Gate { kWrite, kReopen, kDrop };

  // Starts the watcher thread.
  explicit StoreHealth(StoreHealthOptions options);
  ~StoreHealth();  // stops and joins the watcher
  StoreHealth(const StoreHealth&) = delete;
  StoreHealth& operator=(const StoreHealth&) = delete;

  // infertel_store_faults_total{cause}, infertel_store_faulted.
  void RegisterStats(StatsRegistry* stats);

  // ---- writer hooks ----
  // After a writer opened the store at the path: records the file's identity; returns the
  // epoch to pass to BeforeWrite.
  std::uint64_t Opened();
  // Whether to write now, reopen first, or drop the batch.
  Gate BeforeWrite(std::uint64_t opened_epoch);
  // After a write that succeeded: ends a fault whose cause the watcher no longer sees. False
  // when the file written is no longer at the path (its directory or itself deleted): the
  // write is lost, the fault begins now, and the writer reports the batch as failed.
  bool AfterWriteOk();
  // After a write or a reopen that failed with `fault` (ClassifySqliteError); kNone (lock
  // contention) changes nothing.
  void AfterWriteFailed(StoreFault fault, std::string_view error);

  // ---- readers ----
  bool Faulted() const { return faulted_.load(std::memory_order_relaxed); }
  StoreFault Cause() const;
  // One line for /healthz while faulted ("store faulted: disk_full for 12 s (...)"), else "".
  std::string Describe() const;
  // Runs the watcher's check once, now (tests).
  void CheckNow();

 private:
  using Clock = std::chrono::steady_clock;
  void Watch();
  // Under mu_: a new fault (or another cause), counted and logged.
  void EnterLocked(StoreFault fault, std::string detail);
  void RecoverLocked();
  // Under mu_: whether a fault may be logged now (at most one every 10 s; its recovery is
  // logged when it was).
  bool MayLogLocked(std::uint64_t* unlogged);
  static bool Blocks(StoreFault observed);

  const StoreHealthOptions options_;
  mutable std::mutex mu_;  // guards everything below but the atomics
  FileIdentity identity_;
  StoreFault cause_ = StoreFault::kNone;
  StoreFault observed_ = StoreFault::kNone;  // the watcher's last look
  std::string detail_;
  Clock::time_point since_{}, last_probe_{}, last_log_{};
  std::uint64_t unlogged_ = 0;  // faults not logged since the last one that was
  bool fault_logged_ = false;
  std::uint64_t epoch_ = 1;
  std::atomic<bool> faulted_{false};
  std::array<std::atomic<std::uint64_t>, kStoreFaultCount> faults_{};

  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::thread watcher_;
};

}  // namespace infertel::exporting
