#pragma once
// Pieces shared by the store's files (sqlite_store.cc, store_write.cc, store_read.cc); not an
// interface of the store.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace infertel::exporting::store_internal {

std::uint64_t FileBytes(const std::string& path);
// A database file with its -wal and -shm files.
std::uint64_t WithWal(const std::string& path);
std::int64_t NowMs();
// A file's modification time in unix ms (now when it cannot be read).
std::int64_t ModifiedMs(const std::string& path);
std::string PartitionPath(const std::string& dir, std::int64_t ms);
std::vector<std::pair<std::int64_t, std::string>> ListPartitions(const std::string& dir);
std::string OldFormatMessage(const std::string& path);
// Logs a store failure, at most once per 10 s (what is suppressed is counted in the message).
void LogStoreProblem(std::string_view what);
// SQLite without its process-wide allocation statistics (store_write.cc has why).
void ConfigureSqliteOnce();

// An id's bytes as two big-endian halves (a trace id) or one (a span id), and back.
std::int64_t IdHalf(std::string_view bytes, std::size_t offset);
void AppendIdHex(std::string* out, std::int64_t half);

}  // namespace infertel::exporting::store_internal
