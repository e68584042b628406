#include "console/sources.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>

#include "console/document.h"
#include "core/thread_name.h"
#include "http/sync_client.h"

namespace infertel::console {

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

FileSource::FileSource(std::string path, LayeredConfig* config, int rehash_every)
    : path_(std::move(path)), config_(config), rehash_every_(rehash_every) {
  config_->Configure(Layer::kFile, path_);
}

void FileSource::Start(std::chrono::milliseconds interval) {
  poller_.Start(interval, [this] { PollOnce(); });
}

void FileSource::Fail(std::string error) {
  // Before a first good read there are no values to keep: the caller reports the error.
  if (error != last_error_ && loaded_once_) {
    spdlog::warn("console file {}: {}; keeping the last good values", path_, error);
    last_error_ = error;
  }
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
  if (size > kMaxDocumentBytes) {
    have_stat_ = false;
    hash_.reset();
    Fail(fmt::format("file of {} bytes is larger than {} bytes", size, kMaxDocumentBytes));
    return false;
  }
  std::ifstream in(path_, std::ios::binary);
  std::string text;
  if (in) {
    text.resize(kMaxDocumentBytes + 1);
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(in.gcount()));
  }
  if (!in && !in.eof()) {
    have_stat_ = false;
    hash_.reset();
    Fail(fmt::format("cannot read: {}", std::strerror(errno)));
    return false;
  }
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
  if (auto* err = std::get_if<std::string>(&parsed)) {
    Fail(*err);
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

UrlSource::UrlSource(http::Url url, LayeredConfig* config, std::chrono::milliseconds timeout)
    : url_(std::move(url)), config_(config), timeout_(timeout) {
  config_->Configure(Layer::kUrl, url_.ToString());
}

void UrlSource::Start(std::chrono::milliseconds interval) {
  poller_.Start(interval, [this] { PollOnce(); });
}

void UrlSource::Fail(std::string error) {
  if (error != last_error_) {
    spdlog::warn("console url {}: {}; keeping the last good values", url_.ToString(), error);
    last_error_ = error;
  }
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
    Fail("unreachable: " + error);
    return false;
  }
  if (res.status == 304) {
    // Nothing changed since the document behind etag_; whether that one was good decides.
    if (!last_doc_ok_) {
      Fail(doc_error_);
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
  if (auto* err = std::get_if<std::string>(&parsed)) {
    last_doc_ok_ = false;
    doc_error_ = *err;
    Fail(*err);
    return false;
  }
  last_doc_ok_ = true;
  last_error_.clear();
  config_->SetLayer(Layer::kUrl, std::get<ConsoleValues>(std::move(parsed)));
  return true;
}

}  // namespace infertel::console
