#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <thread>

#include "common/engine_ids.h"
#include "console/engine_knobs.h"
#include "engines/sglang/control.h"
#include "engines/sglang/sglang_keys.h"
#include "engines/sglang/sglang_knobs.h"
#include "engines/vllm/vllm_keys.h"
#include "engines/vllm/vllm_knobs.h"
#include "http/simple_server.h"

namespace infertel::console {
namespace {

using config::Key;
using config::Source;
using config::Value;
using namespace std::chrono_literals;

// An engine whose knobs live in a map; failures can be switched on.
class FakeKnobs final : public EngineKnobs {
 public:
  struct Shared {
    std::mutex mu;
    std::map<Key, Value> engine;  // the engine's current values
    std::vector<std::string> calls;
    bool fail_reads = false;
    bool fail_applies = false;
    bool down = false;  // the engine does not answer at all (stopped, restarting)
    int answers_asked = 0;
  };
  explicit FakeKnobs(std::shared_ptr<Shared> s) : s_(std::move(s)) {}
  std::string_view engine() const override { return "sglang"; }
  std::string Unsupported(Key) const override { return ""; }
  std::optional<Original> ReadOriginal(Key key, std::string* error) override {
    std::lock_guard lock(s_->mu);
    s_->calls.push_back("read " + std::string(config::Spec(key).console_key));
    if (s_->fail_reads || s_->down) {
      *error = "engine down";
      return std::nullopt;
    }
    return Original{s_->engine.at(key), ""};
  }
  bool Apply(Key key, const Value& v, std::string* error) override {
    std::lock_guard lock(s_->mu);
    s_->calls.push_back("apply " + config::FormatValue(v));
    if (s_->fail_applies || s_->down) {
      *error = "refused";
      return false;
    }
    s_->engine[key] = v;
    return true;
  }
  bool Answers(std::string* error) override {
    std::lock_guard lock(s_->mu);
    ++s_->answers_asked;
    if (s_->down) *error = "connection refused";
    return !s_->down;
  }

 private:
  std::shared_ptr<Shared> s_;
};

config::Settings With(Key key, Value v, Source source = Source::kConsole) {
  config::Settings s;
  s.Mutable(key) = {std::move(v), source};
  return s;
}

KnobState StateOn(KnobController& c, Key key) {
  auto states = c.StateOf(key);
  EXPECT_EQ(states.size(), 1u);
  return states.empty() ? KnobState{} : states[0];
}

// A started controller over one fake SGLang engine.
std::unique_ptr<KnobController> StartOn(const std::shared_ptr<FakeKnobs::Shared>& shared,
                                        std::chrono::milliseconds retry,
                                        std::chrono::milliseconds check = 5s) {
  std::vector<KnobTarget> targets;
  targets.push_back({"sg", "http://127.0.0.1:1", std::make_unique<FakeKnobs>(shared)});
  auto c = std::make_unique<KnobController>(std::move(targets), retry, check);
  c->Start();
  return c;
}

TEST(KnobControllerTest, RecordsTheOriginalAtTheFirstOverrideAndRestoresIt) {
  auto shared = std::make_shared<FakeKnobs::Shared>();
  shared->engine[engines::sglang::keys().tracing_level] = Value{std::int64_t{3}};
  auto controller = StartOn(shared, 50ms);
  KnobController& c = *controller;

  // Unset (default source): the engine is left alone.
  c.Update(With(engines::sglang::keys().tracing_level, Value{std::int64_t{3}}, Source::kDefault));
  ASSERT_TRUE(c.WaitIdle(2s));
  EXPECT_TRUE(shared->calls.empty());
  EXPECT_EQ(StateOn(c, engines::sglang::keys().tracing_level).status, "engine");

  c.Update(With(engines::sglang::keys().tracing_level, Value{std::int64_t{1}}));
  ASSERT_TRUE(c.WaitIdle(2s));
  auto st = StateOn(c, engines::sglang::keys().tracing_level);
  EXPECT_EQ(st.status, "applied");
  EXPECT_EQ(st.original, Value{std::int64_t{3}});
  EXPECT_EQ(st.applied, Value{std::int64_t{1}});
  EXPECT_EQ(shared->engine[engines::sglang::keys().tracing_level], Value{std::int64_t{1}});

  // A second override does not read again: the original stays the engine's own.
  c.Update(With(engines::sglang::keys().tracing_level, Value{std::int64_t{0}}));
  ASSERT_TRUE(c.WaitIdle(2s));
  EXPECT_EQ(StateOn(c, engines::sglang::keys().tracing_level).original, Value{std::int64_t{3}});
  EXPECT_EQ(shared->engine[engines::sglang::keys().tracing_level], Value{std::int64_t{0}});

  // Removed from the console: restored.
  c.Update(config::Settings{});
  ASSERT_TRUE(c.WaitIdle(2s));
  st = StateOn(c, engines::sglang::keys().tracing_level);
  EXPECT_EQ(st.status, "engine");
  EXPECT_FALSE(st.applied.has_value());
  EXPECT_EQ(shared->engine[engines::sglang::keys().tracing_level], Value{std::int64_t{3}});
  EXPECT_EQ(shared->calls,
            (std::vector<std::string>{"read otel.instrumentation.sglang.tracing.level", "apply 1",
                                      "apply 0", "apply 3"}));
  c.Stop();
}

TEST(KnobControllerTest, FailuresAreShownAndRetried) {
  auto shared = std::make_shared<FakeKnobs::Shared>();
  shared->engine[engines::sglang::keys().log_requests] = Value{false};
  shared->fail_reads = true;
  auto controller = StartOn(shared, 30ms);
  KnobController& c = *controller;
  c.Update(With(engines::sglang::keys().log_requests, Value{true}));
  EXPECT_FALSE(c.WaitIdle(200ms));  // still retrying
  auto st = StateOn(c, engines::sglang::keys().log_requests);
  EXPECT_EQ(st.status, "error");
  EXPECT_NE(st.error.find("engine down"), std::string::npos);
  {
    std::lock_guard lock(shared->mu);
    shared->fail_reads = false;
  }
  ASSERT_TRUE(c.WaitIdle(2s));
  st = StateOn(c, engines::sglang::keys().log_requests);
  EXPECT_EQ(st.status, "applied");
  EXPECT_TRUE(st.error.empty());
  EXPECT_EQ(st.original, Value{false});
  c.Stop();
}

// Polls `done` (under the fake's lock) every 10 ms for up to 3 s.
template <typename F>
bool Eventually(FakeKnobs::Shared& s, F done) {
  for (int i = 0; i < 300; ++i) {
    {
      std::lock_guard lock(s.mu);
      if (done()) return true;
    }
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

TEST(KnobControllerTest, AnEngineThatRestartsGetsTheConsoleValuesAgain) {
  auto shared = std::make_shared<FakeKnobs::Shared>();
  shared->engine[engines::sglang::keys().tracing_level] = Value{std::int64_t{3}};
  auto controller = StartOn(shared, 30ms, 40ms);
  KnobController& c = *controller;
  c.Update(With(engines::sglang::keys().tracing_level, Value{std::int64_t{1}}));
  ASSERT_TRUE(c.WaitIdle(2s));
  ASSERT_EQ(StateOn(c, engines::sglang::keys().tracing_level).status, "applied");

  // The engine goes away and comes back with its own level, as a restarted SGLang does.
  {
    std::lock_guard lock(shared->mu);
    shared->down = true;
    shared->engine[engines::sglang::keys().tracing_level] = Value{std::int64_t{3}};
  }
  KnobState st;
  for (int i = 0; i < 300 && st.status != "error"; ++i) {
    std::this_thread::sleep_for(10ms);
    st = StateOn(c, engines::sglang::keys().tracing_level);
  }
  EXPECT_EQ(st.status, "error");
  EXPECT_NE(st.error.find("does not answer (connection refused)"), std::string::npos) << st.error;
  EXPECT_EQ(st.original, Value{std::int64_t{3}});
  {
    std::lock_guard lock(shared->mu);
    shared->down = false;
  }
  ASSERT_TRUE(Eventually(*shared, [&] {
    return shared->engine[engines::sglang::keys().tracing_level] == Value{std::int64_t{1}};
  })) << "the console's level is applied again";
  ASSERT_TRUE(c.WaitIdle(2s));
  st = StateOn(c, engines::sglang::keys().tracing_level);
  EXPECT_EQ(st.status, "applied");
  EXPECT_TRUE(st.error.empty());
  EXPECT_EQ(st.applied, Value{std::int64_t{1}});
  EXPECT_EQ(st.original, Value{std::int64_t{3}});  // read once, at the first override
  {
    std::lock_guard lock(shared->mu);
    EXPECT_EQ(std::count(shared->calls.begin(), shared->calls.end(), "apply 1"), 2);
    EXPECT_EQ(std::count(shared->calls.begin(), shared->calls.end(),
                         "read otel.instrumentation.sglang.tracing.level"),
              1);
  }

  // Still answering: nothing is applied again.
  std::this_thread::sleep_for(200ms);
  {
    std::lock_guard lock(shared->mu);
    EXPECT_EQ(std::count(shared->calls.begin(), shared->calls.end(), "apply 1"), 2);
  }
  c.Stop();
}

TEST(KnobControllerTest, AnOriginalUnsetWhileTheEngineIsAwayIsRestoredWhenItAnswers) {
  auto shared = std::make_shared<FakeKnobs::Shared>();
  shared->engine[engines::sglang::keys().log_requests] = Value{false};
  auto controller = StartOn(shared, 30ms, 40ms);
  KnobController& c = *controller;
  c.Update(With(engines::sglang::keys().log_requests, Value{true}));
  ASSERT_TRUE(c.WaitIdle(2s));
  {
    std::lock_guard lock(shared->mu);
    shared->down = true;  // unreachable for a moment, keeping the console's value
  }
  c.Update(config::Settings{});     // the console lets go of the key meanwhile
  EXPECT_FALSE(c.WaitIdle(200ms));  // the restore is retried
  EXPECT_EQ(StateOn(c, engines::sglang::keys().log_requests).status, "error");
  {
    std::lock_guard lock(shared->mu);
    shared->down = false;
  }
  ASSERT_TRUE(c.WaitIdle(2s));
  auto st = StateOn(c, engines::sglang::keys().log_requests);
  EXPECT_EQ(st.status, "engine");
  std::lock_guard lock(shared->mu);
  EXPECT_EQ(shared->engine[engines::sglang::keys().log_requests], Value{false});
  c.Stop();
}

TEST(KnobControllerTest, OnlyEnginesHoldingAConsoleValueAreAsked) {
  auto shared = std::make_shared<FakeKnobs::Shared>();
  shared->engine[engines::sglang::keys().tracing_level] = Value{std::int64_t{3}};
  auto controller = StartOn(shared, 30ms, 20ms);
  KnobController& c = *controller;
  c.Update(config::Settings{});
  std::this_thread::sleep_for(150ms);
  {
    std::lock_guard lock(shared->mu);
    EXPECT_EQ(shared->answers_asked, 0);
  }
  c.Update(With(engines::sglang::keys().tracing_level, Value{std::int64_t{1}}));
  ASSERT_TRUE(Eventually(*shared, [&] { return shared->answers_asked >= 2; }));
  c.Update(config::Settings{});  // restored: nothing of ours left on the engine
  ASSERT_TRUE(c.WaitIdle(2s));
  int asked = 0;
  {
    std::lock_guard lock(shared->mu);
    asked = shared->answers_asked;
  }
  std::this_thread::sleep_for(150ms);
  std::lock_guard lock(shared->mu);
  EXPECT_LE(shared->answers_asked, asked + 1);  // at most a check already under way
  c.Stop();
}

TEST(KnobControllerTest, VllmKnobsAreUnsupportedWithAReason) {
  std::vector<KnobTarget> targets;
  targets.push_back({"v", "http://127.0.0.1:1", engines::vllm::MakeKnobs()});
  KnobController c(std::move(targets));
  c.Start();
  c.Update(With(engines::vllm::keys().logging_level, Value{std::string("DEBUG")}));
  ASSERT_TRUE(c.WaitIdle(2s));
  for (Key k : {engines::vllm::keys().log_requests, engines::vllm::keys().log_iteration_details,
                engines::vllm::keys().log_trace_context, engines::vllm::keys().logging_level}) {
    auto st = StateOn(c, k);
    EXPECT_EQ(st.status, "unsupported") << config::Spec(k).console_key;
    EXPECT_FALSE(st.reason.empty());
    EXPECT_FALSE(engines::vllm::UnsupportedReason(k).empty());
  }
  EXPECT_TRUE(c.StateOf(engines::sglang::keys().tracing_level).empty());  // not a vLLM key
  EXPECT_TRUE(engines::vllm::UnsupportedReason(engines::vllm::keys().tracing_level)
                  .empty());  // applied by infertel
}

// SGLang's control surface as facts/sglang.md describes it.
class FakeSglang {
 public:
  explicit FakeSglang(bool only_old_path = false, bool report_trace_level = false) {
    std::string error;
    server_ = http::SimpleServer::Start(
        {"127.0.0.1", 0},
        [this, only_old_path, report_trace_level](const http::StringRequest& req) {
          std::lock_guard lock(mu_);
          std::string target(req.target());
          log_.push_back(std::string(req.method_string()) + " " + target +
                         (req.body().empty() ? "" : " " + req.body()));
          if ((target == "/server_info" && !only_old_path) || target == "/get_server_info") {
            std::string body = R"({"model_path":"m","stream_interval":4,"log_requests":)" +
                               std::string(log_requests_ ? "true" : "false") +
                               R"(,"log_requests_level":)" + std::to_string(log_requests_level_) +
                               R"(,"log_level":")" + log_level_ +
                               R"(","enable_trace":true,"version":"0.5.20","internal_states":[{}])";
            if (report_trace_level) body += R"(,"trace_level":)" + std::to_string(trace_level_);
            body += "}";
            return http::MakeResponse(200, body, "application/json");
          }
          if (target.rfind("/set_trace_level?level=", 0) == 0) {
            trace_level_ = std::stoi(target.substr(23));
            return http::MakeResponse(200, "\"success\"", "application/json");
          }
          if (target == "/configure_logging") {
            const std::string& b = req.body();
            if (b.find("\"log_requests\":true") != std::string::npos) log_requests_ = true;
            if (b.find("\"log_requests\":false") != std::string::npos) log_requests_ = false;
            if (auto p = b.find("\"log_requests_level\":"); p != std::string::npos)
              log_requests_level_ = b[p + 21] - '0';
            if (auto p = b.find("\"log_level\":\""); p != std::string::npos)
              log_level_ = b.substr(p + 13, b.find('"', p + 13) - p - 13);
            return http::MakeResponse(200, "", "application/json");
          }
          return http::MakeResponse(404, R"({"detail":"Not Found"})", "application/json");
        },
        &error);
    EXPECT_NE(server_, nullptr) << error;
  }
  http::Url url() const {
    return *http::ParseUrl("http://127.0.0.1:" + std::to_string(server_->port()));
  }
  std::vector<std::string> log() {
    std::lock_guard lock(mu_);
    return log_;
  }
  int trace_level() {
    std::lock_guard lock(mu_);
    return trace_level_;
  }
  std::string log_level() {
    std::lock_guard lock(mu_);
    return log_level_;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> log_;
  int trace_level_ = 2;
  bool log_requests_ = false;
  int log_requests_level_ = 2;
  std::string log_level_ = "info";
  std::unique_ptr<http::SimpleServer> server_;
};

TEST(SglangControlTest, ServerInfoAndItsDeprecatedAlias) {
  FakeSglang now;
  std::string error;
  auto info = engines::sglang::FetchServerInfo(now.url(), &error);
  ASSERT_TRUE(info) << error;
  EXPECT_EQ(info->stream_interval, 4);
  EXPECT_EQ(info->log_requests, false);
  EXPECT_EQ(info->log_requests_level, 2);
  EXPECT_EQ(info->log_level, "info");
  EXPECT_EQ(info->enable_trace, true);
  EXPECT_EQ(info->version, "0.5.20");
  EXPECT_FALSE(info->trace_level.has_value());

  FakeSglang old(/*only_old_path=*/true);
  info = engines::sglang::FetchServerInfo(old.url(), &error);
  ASSERT_TRUE(info) << error;
  EXPECT_EQ(old.log(), (std::vector<std::string>{"GET /server_info", "GET /get_server_info"}));

  auto bad = engines::sglang::ParseServerInfo("[1]", &error);
  EXPECT_FALSE(bad);
  auto partial = engines::sglang::ParseServerInfo(R"({"stream_interval":"x"})", &error);
  ASSERT_TRUE(partial);
  EXPECT_FALSE(partial->stream_interval.has_value());
}

TEST(SglangControlTest, TraceLevelAndLoggingRequests) {
  FakeSglang sg;
  std::string error;
  ASSERT_TRUE(engines::sglang::SetTraceLevel(sg.url(), 1, &error)) << error;
  engines::sglang::LoggingConfig c;
  c.log_requests = true;
  c.log_requests_level = 3;
  ASSERT_TRUE(engines::sglang::ConfigureLogging(sg.url(), c, &error)) << error;
  EXPECT_EQ(sg.log(),
            (std::vector<std::string>{
                "POST /set_trace_level?level=1",
                R"(POST /configure_logging {"log_requests":true,"log_requests_level":3})"}));
  EXPECT_FALSE(engines::sglang::SetTraceLevel(sg.url(), -1, &error));
  auto unreachable = *http::ParseUrl("http://127.0.0.1:1");
  EXPECT_FALSE(engines::sglang::SetTraceLevel(unreachable, 1, &error, 300ms));
  EXPECT_FALSE(error.empty());
}

TEST(SglangKnobsTest, AppliesAndRestoresOverHttp) {
  FakeSglang sg;
  std::vector<KnobTarget> targets;
  targets.push_back({"sg", sg.url().ToString(), engines::sglang::MakeKnobs(sg.url())});
  KnobController c(std::move(targets), 50ms);
  c.Start();
  config::Settings s;
  s.Mutable(engines::sglang::keys().tracing_level) = {Value{std::int64_t{1}}, Source::kConsole};
  s.Mutable(engines::sglang::keys().logging_level) = {Value{std::string("DEBUG")},
                                                      Source::kConsole};
  c.Update(s);
  ASSERT_TRUE(c.WaitIdle(5s));
  EXPECT_EQ(sg.trace_level(), 1);
  EXPECT_EQ(sg.log_level(), "DEBUG");
  auto tl = c.StateOf(engines::sglang::keys().tracing_level).at(0);
  EXPECT_EQ(tl.status, "applied");
  // This server does not report its level: SGLang's default is assumed, and said so.
  EXPECT_EQ(tl.original, Value{std::int64_t{3}});
  EXPECT_NE(tl.original_note.find("not reported"), std::string::npos);
  auto ll = c.StateOf(engines::sglang::keys().logging_level).at(0);
  EXPECT_EQ(ll.original, Value{std::string("INFO")});
  EXPECT_TRUE(ll.original_note.empty());

  c.Update(config::Settings{});
  ASSERT_TRUE(c.WaitIdle(5s));
  EXPECT_EQ(sg.trace_level(), 3);
  EXPECT_EQ(sg.log_level(), "INFO");
  c.Stop();
}

TEST(SglangKnobsTest, AnswersMeansServerInfoAnswers) {
  FakeSglang sg;
  std::string error;
  EXPECT_TRUE(engines::sglang::MakeKnobs(sg.url())->Answers(&error)) << error;
  EXPECT_EQ(sg.log(), (std::vector<std::string>{"GET /server_info"}));
  auto gone = engines::sglang::MakeKnobs(*http::ParseUrl("http://127.0.0.1:1"));
  EXPECT_FALSE(gone->Answers(&error));
  EXPECT_FALSE(error.empty());
}

TEST(SglangKnobsTest, ReportedTraceLevelIsTheOriginal) {
  FakeSglang sg(false, /*report_trace_level=*/true);
  auto knobs = engines::sglang::MakeKnobs(sg.url());
  std::string error;
  auto o = knobs->ReadOriginal(engines::sglang::keys().tracing_level, &error);
  ASSERT_TRUE(o) << error;
  EXPECT_EQ(o->value, Value{std::int64_t{2}});
  EXPECT_TRUE(o->note.empty());
}

}  // namespace
}  // namespace infertel::console
