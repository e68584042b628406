#pragma once
// The two polled console sources: a watched file and a remote URL. Each feeds one layer of a
// LayeredConfig; a failed read or an invalid document keeps the layer's last good values,
// is logged once, and shows in the layer's status until a good read.
//
// PollOnce() is the whole behaviour (tests call it directly); Start() runs it on a thread of
// its own every interval. Blocking happens only on that thread.

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "console/document.h"
#include "console/layered_config.h"
#include "core/stats.h"
#include "http/url.h"

namespace infertel::console {

// Console documents refused, by source and reason: each time a source turns to a refused
// document (the same document read again is not counted again).
struct ConsoleStats {
  std::array<std::atomic<std::uint64_t>, kRefusalCount> file{};
  std::array<std::atomic<std::uint64_t>, kRefusalCount> url{};
  // infertel_console_refused_documents_total{source, reason}
  void Register(StatsRegistry* registry) const;
};

// Runs `poll` every `interval` on its own thread until Stop().
class Poller {
 public:
  Poller() = default;
  ~Poller() { Stop(); }
  Poller(const Poller&) = delete;
  Poller& operator=(const Poller&) = delete;
  void Start(std::chrono::milliseconds interval, std::function<void()> poll);
  void Stop();
  // Runs `poll` now rather than at the end of the interval (SIGHUP); the interval restarts.
  void Wake();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  bool wake_ = false;  // guarded by mu_
  std::thread thread_;
};

// Watches a YAML/JSON file: stat every poll; the content is read and hashed when the mtime
// or size changed, and every `rehash_every` polls regardless (an edit within the same mtime
// tick and size), so a change applies within max(interval, rehash_every × interval).
// The file is opened without blocking and read only if it is a regular file: a FIFO would
// block the watcher, and the agent's stop with it. `stats` may be null.
class FileSource {
 public:
  FileSource(std::string path, LayeredConfig* config, int rehash_every = 4,
             ConsoleStats* stats = nullptr);
  // Returns false when the file could not be read or was invalid (the error is in the status).
  bool PollOnce();
  void Start(std::chrono::milliseconds interval);
  void Stop() { poller_.Stop(); }
  // Reads the file whole now on the watcher's thread, whatever its mtime and size (SIGHUP).
  void ReadNow() {
    reread_.store(true);
    poller_.Wake();
  }
  const std::string& path() const { return path_; }

 private:
  // Records a failed attempt; `refusal` is set when the document (not the read) failed.
  void Fail(std::string error, std::optional<Refusal> refusal = std::nullopt);

  const std::string path_;
  LayeredConfig* const config_;
  const int rehash_every_;
  ConsoleStats* const stats_;
  // Poller-thread state.
  bool have_stat_ = false;
  std::int64_t mtime_ns_ = 0;
  std::uint64_t size_ = 0;
  std::optional<std::uint64_t> hash_;  // of the content last handled
  bool last_ok_ = false;
  bool loaded_once_ = false;  // a good document was read once: there are values to keep
  int polls_since_read_ = 0;
  std::string last_error_;
  std::atomic<bool> reread_{false};  // ReadNow() was called
  Poller poller_;
};

// Polls a console URL with If-None-Match: a 304 leaves everything as it is.
class UrlSource {
 public:
  // `stats` may be null.
  UrlSource(http::Url url, LayeredConfig* config,
            std::chrono::milliseconds timeout = std::chrono::seconds(2),
            ConsoleStats* stats = nullptr);
  bool PollOnce();
  void Start(std::chrono::milliseconds interval);
  void Stop() { poller_.Stop(); }
  // Polls now on the poller's thread (SIGHUP).
  void PollNow() { poller_.Wake(); }
  const std::string& etag() const { return etag_; }

 private:
  void Fail(std::string error, std::optional<Refusal> refusal = std::nullopt);

  const http::Url url_;
  LayeredConfig* const config_;
  const std::chrono::milliseconds timeout_;
  ConsoleStats* const stats_;
  // Poller-thread state.
  std::string etag_;
  bool last_doc_ok_ = false;   // whether the document behind etag_ was valid
  DocumentError doc_error_{};  // why it was not
  std::string last_error_;
  Poller poller_;
};

// FNV-1a 64 of `data` (change detection, not security).
std::uint64_t Fnv1a64(std::string_view data);

}  // namespace infertel::console
