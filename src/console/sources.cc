#include "console/sources.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>

#include "console/document.h"
#include "core/thread_name.h"
#include "http/sync_client.h"

namespace infertel::console {
namespace {

// What reading the console file gave: its text, or an error (with the refusal when the file
// is there but not acceptable).
struct FileRead {
  std::string text;
  std::string error;
  std::optional<Refusal> refusal;
};

FileRead TooLarge(std::uint64_t size) {
  return {"", fmt::format("file of {} bytes is larger than {} bytes", size, kMaxDocumentBytes),
          Refusal::kTooLarge};
}

// Opens without blocking (open() of a FIFO waits for a writer, read() for data) and reads
// only a regular file, at most kMaxDocumentBytes of it.
FileRead ReadConsoleFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return {"", fmt::format("cannot read: {}", std::strerror(errno)), std::nullopt};
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    return {"", fmt::format("cannot read: {}", std::strerror(errno)), std::nullopt};
  if (!S_ISREG(st.st_mode))
    return {"", "not a regular file (a FIFO, a device or a directory is not read)",
            Refusal::kNotRegularFile};
  if (static_cast<std::uint64_t>(st.st_size) > kMaxDocumentBytes) return TooLarge(st.st_size);
  FileRead r;
  r.text.resize(kMaxDocumentBytes + 1);  // one more: a file that grew since fstat shows it
  std::size_t got = 0;
  while (got < r.text.size()) {
    const ssize_t n = ::read(fd, r.text.data() + got, r.text.size() - got);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      return {"", fmt::format("cannot read: {}", std::strerror(errno)), std::nullopt};
    }
    got += static_cast<std::size_t>(n);
  }
  if (got > kMaxDocumentBytes) return TooLarge(got);
  r.text.resize(got);
  return r;
}

void Count(std::array<std::atomic<std::uint64_t>, kRefusalCount>* counters,
           std::optional<Refusal> refusal) {
  if (counters != nullptr && refusal)
    (*counters)[static_cast<std::size_t>(*refusal)].fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

void ConsoleStats::Register(StatsRegistry* registry) const {
  for (std::size_t i = 0; i < kRefusalCount; ++i) {
    const std::string_view reason = RefusalName(static_cast<Refusal>(i));
    for (const auto& [source, counters] : {std::pair{"file", &file}, std::pair{"url", &url}}) {
      registry->Add("infertel_console_refused_documents",
                    "Console documents refused (their source keeps its last good values)",
                    StatsRegistry::Type::kCounter,
                    fmt::format(R"(source="{}",reason="{}")", source, reason), &(*counters)[i]);
    }
  }
}

std::uint64_t Fnv1a64(std::string_view data) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

void Poller::Start(std::chrono::milliseconds interval, std::function<void()> poll) {
  Stop();
  {
    std::lock_guard lock(mu_);
    stop_ = false;
  }
  thread_ = std::thread([this, interval, poll = std::move(poll)] {
    NameThisThread("console-poll");
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait_for(lock, interval, [&] { return stop_ || wake_; });
      if (stop_) break;
      wake_ = false;
      lock.unlock();
      poll();
      lock.lock();
    }
  });
}

void Poller::Wake() {
  {
    std::lock_guard lock(mu_);
    wake_ = true;
  }
  cv_.notify_all();
}

void Poller::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

// ---- FileSource

FileSource::FileSource(std::string path, LayeredConfig* config, int rehash_every,
                       ConsoleStats* stats)
    : path_(std::move(path)), config_(config), rehash_every_(rehash_every), stats_(stats) {
  config_->Configure(Layer::kFile, path_);
}

void FileSource::Start(std::chrono::milliseconds interval) {
  poller_.Start(interval, [this] { PollOnce(); });
}

void FileSource::Fail(std::string error, std::optional<Refusal> refusal) {
  if (error != last_error_) {
    // Before a first good read there are no values to keep: the caller reports the error.
    if (loaded_once_)
      spdlog::warn("console file {}: {}{}; keeping the last good values", path_,
                   refusal ? "refused: " : "", error);
    Count(stats_ ? &stats_->file : nullptr, refusal);
    last_error_ = error;
  }
  if (refusal) error = "refused: " + error;
  last_ok_ = false;
  config_->SetLayerError(Layer::kFile, std::move(error));
}

bool FileSource::PollOnce() {
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) {
    have_stat_ = false;
    hash_.reset();  // read it again whole when it comes back
    Fail(fmt::format("cannot read: {}", std::strerror(errno)));
    return false;
  }
  const std::int64_t mtime_ns =
      static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  const auto size = static_cast<std::uint64_t>(st.st_size);
  ++polls_since_read_;
  if (reread_.exchange(false)) polls_since_read_ = rehash_every_;
  if (have_stat_ && mtime_ns == mtime_ns_ && size == size_ && polls_since_read_ < rehash_every_) {
    if (last_ok_) config_->MarkLayerOk(Layer::kFile);
    return last_ok_;
  }
  polls_since_read_ = 0;
  FileRead read = ReadConsoleFile(path_);
  if (!read.error.empty()) {
    have_stat_ = false;
    hash_.reset();
    Fail(std::move(read.error), read.refusal);
    return false;
  }
  const std::string& text = read.text;
  have_stat_ = true;
  mtime_ns_ = mtime_ns;
  size_ = size;
  const std::uint64_t hash = Fnv1a64(text);
  if (hash_ && *hash_ == hash) {  // touched, or re-read on schedule: same content
    if (last_ok_) config_->MarkLayerOk(Layer::kFile);
    return last_ok_;
  }
  hash_ = hash;
  auto parsed = ParseConsoleDocument(text);
  if (auto* err = std::get_if<DocumentError>(&parsed)) {
    Fail(err->message, err->reason);
    return false;
  }
  auto& values = std::get<ConsoleValues>(parsed);
  spdlog::info("console file {}: {} value(s) loaded", path_, values.size());
  loaded_once_ = true;
  last_error_.clear();
  last_ok_ = true;
  config_->SetLayer(Layer::kFile, std::move(values));
  return true;
}

// ---- UrlSource

UrlSource::UrlSource(http::Url url, LayeredConfig* config, std::chrono::milliseconds timeout,
                     ConsoleStats* stats)
    : url_(std::move(url)), config_(config), timeout_(timeout), stats_(stats) {
  config_->Configure(Layer::kUrl, url_.ToString());
}

void UrlSource::Start(std::chrono::milliseconds interval) {
  poller_.Start(interval, [this] { PollOnce(); });
}

void UrlSource::Fail(std::string error, std::optional<Refusal> refusal) {
  if (error != last_error_) {
    spdlog::warn("console url {}: {}{}; keeping the last good values", url_.ToString(),
                 refusal ? "refused: " : "", error);
    Count(stats_ ? &stats_->url : nullptr, refusal);
    last_error_ = error;
  }
  if (refusal) error = "refused: " + error;
  config_->SetLayerError(Layer::kUrl, std::move(error));
}

bool UrlSource::PollOnce() {
  http::SyncClient client(http::SyncTimeouts{timeout_, timeout_, timeout_});
  std::vector<std::pair<std::string, std::string>> headers = {
      {"Accept", "application/json, application/yaml;q=0.9, */*;q=0.5"}};
  if (!etag_.empty()) headers.emplace_back("If-None-Match", etag_);
  http::SyncResponse res;
  std::string error;
  if (!client.Send("GET", url_, headers, "", "", &res, &error, kMaxDocumentBytes)) {
    // A body past the limit is a refused document, not an unreachable console.
    if (client.last_error() == http::SyncError::kBodyTooLarge) {
      Fail(fmt::format("document larger than {} bytes", kMaxDocumentBytes), Refusal::kTooLarge);
      return false;
    }
    Fail("unreachable: " + error);
    return false;
  }
  if (res.status == 304) {
    // Nothing changed since the document behind etag_; whether that one was good decides.
    if (!last_doc_ok_) {
      Fail(doc_error_.message, doc_error_.reason);
      return false;
    }
    last_error_.clear();
    config_->MarkLayerOk(Layer::kUrl);
    return true;
  }
  if (res.status != 200) {
    Fail(fmt::format("GET answered {}", res.status));
    return false;
  }
  const std::string* etag = res.Header("etag");
  etag_ = etag != nullptr ? *etag : "";
  auto parsed = ParseConsoleDocument(res.body);
  if (auto* err = std::get_if<DocumentError>(&parsed)) {
    last_doc_ok_ = false;
    doc_error_ = *err;
    Fail(err->message, err->reason);
    return false;
  }
  last_doc_ok_ = true;
  last_error_.clear();
  config_->SetLayer(Layer::kUrl, std::get<ConsoleValues>(std::move(parsed)));
  return true;
}

}  // namespace infertel::console
