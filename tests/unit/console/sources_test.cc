#include "console/sources.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>

#include "engines/sglang/sglang_keys.h"
#include "engines/vllm/vllm_keys.h"
#include "http/simple_server.h"

namespace infertel::console {
namespace {

using config::Key;
using config::Value;
namespace bhttp = boost::beast::http;

config::EnvLookup NoEnv() {
  return [](std::string_view) -> std::optional<std::string> { return std::nullopt; };
}

class TempFile {
 public:
  TempFile() {
    path_ = (std::filesystem::temp_directory_path() /
             ("infertel-console-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++) +
              ".yaml"))
                .string();
  }
  ~TempFile() { std::filesystem::remove(path_); }
  void Write(std::string_view text) {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out << text;
  }
  const std::string& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  std::string path_;
};

TEST(FileSourceTest, LoadsChangesAndKeepsTheLastGoodValues) {
  TempFile f;
  f.Write("otel.instrumentation.vllm.tracing.level: 2\n");
  LayeredConfig lc(NoEnv(), nullptr);
  FileSource src(f.path(), &lc);
  ASSERT_TRUE(src.PollOnce());
  EXPECT_EQ(lc.KeyOf(engines::vllm::keys().tracing_level).value, Value{std::int64_t{2}});
  EXPECT_EQ(lc.Status(Layer::kFile).origin, f.path());

  f.Write(
      "otel.instrumentation.vllm.tracing.level: 0\notel.instrumentation.vllm.metrics.enabled: "
      "false\n");
  ASSERT_TRUE(src.PollOnce());
  EXPECT_EQ(lc.KeyOf(engines::vllm::keys().tracing_level).value, Value{std::int64_t{0}});
  EXPECT_EQ(lc.KeyOf(engines::vllm::keys().metrics_enabled).value, Value{false});

  // Invalid: bad syntax, unknown key, bad value. Each keeps the last good values.
  for (std::string_view bad : {"otel.instrumentation.vllm.tracing.level: [2\n",
                               "otel.instrumentation.vllm.tracing.levels: 1\n",
                               "otel.instrumentation.vllm.tracing.level: 5\n"}) {
    f.Write(bad);
    EXPECT_FALSE(src.PollOnce()) << bad;
    auto st = lc.Status(Layer::kFile);
    EXPECT_FALSE(st.ok);
    EXPECT_FALSE(st.error.empty());
    EXPECT_EQ(lc.KeyOf(engines::vllm::keys().tracing_level).value, Value{std::int64_t{0}}) << bad;
    EXPECT_EQ(lc.KeyOf(engines::vllm::keys().metrics_enabled).value, Value{false});
  }

  // Gone: an error too, values kept; back: read again.
  std::filesystem::remove(f.path());
  EXPECT_FALSE(src.PollOnce());
  EXPECT_NE(lc.Status(Layer::kFile).error.find("cannot read"), std::string::npos);
  EXPECT_EQ(lc.KeyOf(engines::vllm::keys().tracing_level).value, Value{std::int64_t{0}});
  f.Write("otel.instrumentation.vllm.tracing.level: 1\n");
  ASSERT_TRUE(src.PollOnce());
  EXPECT_TRUE(lc.Status(Layer::kFile).ok);
  EXPECT_EQ(lc.KeyOf(engines::vllm::keys().tracing_level).value, Value{std::int64_t{1}});
  EXPECT_EQ(lc.KeyOf(engines::vllm::keys().metrics_enabled).source, config::Source::kDefault);
}

TEST(FileSourceTest, SameSizeAndMtimeEditIsFoundByTheContentHash) {
  TempFile f;
  f.Write("otel.instrumentation.vllm.tracing.level: 1\n");
  LayeredConfig lc(NoEnv(), nullptr);
  FileSource src(f.path(), &lc, /*rehash_every=*/3);
  ASSERT_TRUE(src.PollOnce());
  struct stat before {};
  ASSERT_EQ(::stat(f.path().c_str(), &before), 0);
  f.Write("otel.instrumentation.vllm.tracing.level: 2\n");  // same size
  timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, f.path().c_str(), times, 0), 0);
  int polls = 0;
  while (lc.KeyOf(engines::vllm::keys().tracing_level).value != Value{std::int64_t{2}} &&
         polls < 10) {
    src.PollOnce();
    ++polls;
  }
  EXPECT_EQ(lc.KeyOf(engines::vllm::keys().tracing_level).value, Value{std::int64_t{2}});
  EXPECT_LE(polls, 3);
  EXPECT_GE(polls, 2);  // not at the first poll: stat said nothing changed
}

TEST(FileSourceTest, StartedWatcherAppliesWithinTheInterval) {
  TempFile f;
  f.Write("{}");
  LayeredConfig lc(NoEnv(), nullptr);
  FileSource src(f.path(), &lc);
  ASSERT_TRUE(src.PollOnce());
  src.Start(std::chrono::milliseconds(20));
  f.Write("{\"otel.instrumentation.genai.message-content.max-length\": 77}");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (lc.KeyOf(Key::kMessageContentMaxLength).value != Value{std::int64_t{77}} &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  src.Stop();
  EXPECT_EQ(lc.KeyOf(Key::kMessageContentMaxLength).value, Value{std::int64_t{77}});
}

// SIGHUP: the file is read whole at once, although stat says nothing changed and the
// watcher's next poll is an hour away.
TEST(FileSourceTest, ReadNowReadsAtOnceWhateverTheMtime) {
  TempFile f;
  f.Write("otel.instrumentation.vllm.tracing.level: 1\n");
  LayeredConfig lc(NoEnv(), nullptr);
  FileSource src(f.path(), &lc, /*rehash_every=*/1000);
  ASSERT_TRUE(src.PollOnce());
  src.Start(std::chrono::hours(1));
  struct stat before {};
  ASSERT_EQ(::stat(f.path().c_str(), &before), 0);
  f.Write("otel.instrumentation.vllm.tracing.level: 2\n");  // same size
  timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, f.path().c_str(), times, 0), 0);
  src.ReadNow();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (lc.KeyOf(engines::vllm::keys().tracing_level).value != Value{std::int64_t{2}} &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  src.Stop();
  EXPECT_EQ(lc.KeyOf(engines::vllm::keys().tracing_level).value, Value{std::int64_t{2}});
}

// A console peer: serves `doc` with ETag "v<version>", 304 on a matching If-None-Match.
class ConsolePeer {
 public:
  ConsolePeer() {
    std::string error;
    server_ = http::SimpleServer::Start(
        {"127.0.0.1", 0},
        [this](const http::StringRequest& req) {
          std::lock_guard lock(mu_);
          ++requests_;
          std::string etag = "\"v" + std::to_string(version_) + "\"";
          auto inm = req.find(bhttp::field::if_none_match);
          if (inm != req.end() && inm->value() == etag) {
            ++not_modified_;
            http::StringResponse res{bhttp::status::not_modified, req.version()};
            res.set(bhttp::field::etag, etag);
            return res;
          }
          auto res = http::MakeResponse(status_, doc_, "application/json");
          res.set(bhttp::field::etag, etag);
          return res;
        },
        &error);
    EXPECT_NE(server_, nullptr) << error;
  }
  void Set(std::string doc, unsigned status = 200) {
    std::lock_guard lock(mu_);
    doc_ = std::move(doc);
    status_ = status;
    ++version_;
  }
  int requests() {
    std::lock_guard lock(mu_);
    return requests_;
  }
  int not_modified() {
    std::lock_guard lock(mu_);
    return not_modified_;
  }
  http::Url url() const {
    return *http::ParseUrl("http://127.0.0.1:" + std::to_string(server_->port()) + "/console");
  }
  void Stop() { server_->Stop(); }

 private:
  std::mutex mu_;
  std::string doc_ = "{}";
  unsigned status_ = 200;
  int version_ = 1;
  int requests_ = 0;
  int not_modified_ = 0;
  std::unique_ptr<http::SimpleServer> server_;
};

// A FIFO with no writer used to block the poll in open() forever (and the agent's stop, which
// joins the watcher). Now it is refused at once, and counted.
TEST(FileSourceTest, FifoAndDirectoryAreRefusedWithoutBlocking) {
  TempFile f;
  ASSERT_EQ(::mkfifo(f.path().c_str(), 0600), 0);
  LayeredConfig lc(NoEnv(), nullptr);
  ConsoleStats stats;
  FileSource src(f.path(), &lc, 4, &stats);
  auto poll = std::async(std::launch::async, [&] { return src.PollOnce(); });
  if (poll.wait_for(std::chrono::seconds(2)) != std::future_status::ready) {
    // Unblock it (a writer opens the FIFO) so that the test can end, then fail.
    const int fd = ::open(f.path().c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) ::close(fd);
    FAIL() << "PollOnce blocked on a FIFO";
  }
  EXPECT_FALSE(poll.get());
  EXPECT_FALSE(lc.Status(Layer::kFile).ok);
  EXPECT_NE(lc.Status(Layer::kFile).error.find("refused: not a regular file"), std::string::npos)
      << lc.Status(Layer::kFile).error;
  EXPECT_EQ(stats.file[static_cast<std::size_t>(Refusal::kNotRegularFile)], 1u);
  EXPECT_FALSE(src.PollOnce());  // the same refusal again is not counted again
  EXPECT_EQ(stats.file[static_cast<std::size_t>(Refusal::kNotRegularFile)], 1u);

  FileSource dir(std::filesystem::temp_directory_path().string(), &lc, 4, &stats);
  EXPECT_FALSE(dir.PollOnce());
  EXPECT_EQ(stats.file[static_cast<std::size_t>(Refusal::kNotRegularFile)], 2u);
}

TEST(FileSourceTest, RefusedDocumentsAreCountedByReasonAndKeepTheLastGoodValues) {
  TempFile f;
  f.Write("otel.instrumentation.vllm.tracing.level: 1\n");
  LayeredConfig lc(NoEnv(), nullptr);
  ConsoleStats stats;
  FileSource src(f.path(), &lc, 4, &stats);
  ASSERT_TRUE(src.PollOnce());
  std::string bomb = "a: &a {b: 1, c: 1, d: 1, e: 1, f: 1, g: 1, h: 1, i: 1}\n";
  for (char c = 'b'; c <= 'k'; ++c)
    bomb += std::string(1, c) + ": &" + c + " {x: *" + static_cast<char>(c - 1) + ", y: *" +
            static_cast<char>(c - 1) + ", z: *" + static_cast<char>(c - 1) + "}\n";
  f.Write(bomb);
  EXPECT_FALSE(src.PollOnce());
  EXPECT_EQ(stats.file[static_cast<std::size_t>(Refusal::kTooManyNodes)], 1u);
  EXPECT_FALSE(lc.Status(Layer::kFile).ok);
  EXPECT_EQ(lc.KeyOf(engines::vllm::keys().tracing_level).value, Value{std::int64_t{1}});
  f.Write(std::string(kMaxDocumentBytes + 1, '#'));
  EXPECT_FALSE(src.PollOnce());
  EXPECT_EQ(stats.file[static_cast<std::size_t>(Refusal::kTooLarge)], 1u);
}

TEST(UrlSourceTest, EtagAndNotModified) {
  ConsolePeer peer;
  peer.Set(R"({"otel.instrumentation.sglang.tracing.level": 1})");
  LayeredConfig lc(NoEnv(), nullptr);
  UrlSource src(peer.url(), &lc);
  ASSERT_TRUE(src.PollOnce());
  EXPECT_EQ(src.etag(), "\"v2\"");
  EXPECT_EQ(lc.KeyOf(engines::sglang::keys().tracing_level).value, Value{std::int64_t{1}});
  EXPECT_EQ(lc.KeyOf(engines::sglang::keys().tracing_level).layer, Layer::kUrl);

  // Unchanged: 304, nothing to do.
  ASSERT_TRUE(src.PollOnce());
  EXPECT_EQ(peer.not_modified(), 1);
  EXPECT_TRUE(lc.Status(Layer::kUrl).ok);

  peer.Set(R"({"otel.instrumentation.sglang.tracing.level": 2})");
  ASSERT_TRUE(src.PollOnce());
  EXPECT_EQ(lc.KeyOf(engines::sglang::keys().tracing_level).value, Value{std::int64_t{2}});
  EXPECT_EQ(peer.not_modified(), 1);

  // Invalid document: last good values stay, and stay through the 304s that follow.
  peer.Set(R"({"otel.instrumentation.sglang.tracing.level": "high"})");
  EXPECT_FALSE(src.PollOnce());
  EXPECT_FALSE(src.PollOnce());
  EXPECT_EQ(peer.not_modified(), 2);
  auto st = lc.Status(Layer::kUrl);
  EXPECT_FALSE(st.ok);
  EXPECT_NE(st.error.find("otel.instrumentation.sglang.tracing.level"), std::string::npos);
  EXPECT_EQ(lc.KeyOf(engines::sglang::keys().tracing_level).value, Value{std::int64_t{2}});

  // A server error is an error too.
  peer.Set("oops", 500);
  EXPECT_FALSE(src.PollOnce());
  EXPECT_NE(lc.Status(Layer::kUrl).error.find("500"), std::string::npos);

  // Unreachable: values kept, error shown.
  peer.Stop();
  EXPECT_FALSE(src.PollOnce());
  EXPECT_NE(lc.Status(Layer::kUrl).error.find("unreachable"), std::string::npos);
  EXPECT_EQ(lc.KeyOf(engines::sglang::keys().tracing_level).value, Value{std::int64_t{2}});
}

// The client stops reading at the limit and says so with a typed error, which the source
// counts as a refused document (not an unreachable console).
TEST(UrlSourceTest, OversizeDocumentIsRefusedAsTooLarge) {
  ConsolePeer peer;
  peer.Set(std::string(kMaxDocumentBytes + 1, '#'));
  LayeredConfig lc(NoEnv(), nullptr);
  ConsoleStats stats;
  UrlSource src(peer.url(), &lc, std::chrono::seconds(2), &stats);
  EXPECT_FALSE(src.PollOnce());
  EXPECT_NE(lc.Status(Layer::kUrl).error.find("refused: document larger"), std::string::npos)
      << lc.Status(Layer::kUrl).error;
  EXPECT_EQ(stats.url[static_cast<std::size_t>(Refusal::kTooLarge)], 1u);
}

TEST(UrlSourceTest, RecoversAfterAnOutage) {
  ConsolePeer peer;
  peer.Set("otel.instrumentation.vllm.tracing.level: 0\n");  // YAML over HTTP
  LayeredConfig lc(NoEnv(), nullptr);
  auto url = peer.url();
  url.port = 1;  // nothing listens there
  UrlSource down(url, &lc, std::chrono::milliseconds(300));
  EXPECT_FALSE(down.PollOnce());
  EXPECT_FALSE(lc.Status(Layer::kUrl).ok);
  UrlSource up(peer.url(), &lc);
  EXPECT_TRUE(up.PollOnce());
  EXPECT_TRUE(lc.Status(Layer::kUrl).ok);
  EXPECT_EQ(lc.KeyOf(engines::vllm::keys().tracing_level).value, Value{std::int64_t{0}});
}

}  // namespace
}  // namespace infertel::console
