#include "pipeline/batch_processor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "core/semconv.h"

namespace infertel::pipeline {
namespace {

using namespace std::chrono_literals;

TracesRequest MakeRequest(int spans, const std::string& prefix,
                          const std::string& service = "svc") {
  TracesRequest req;
  auto* rs = req.add_resource_spans();
  AddAttr(rs->mutable_resource()->mutable_attributes(), semconv::kServiceName, service);
  auto* ss = rs->add_scope_spans();
  ss->mutable_scope()->set_name("infertel");
  for (int i = 0; i < spans; ++i) ss->add_spans()->set_name(prefix + std::to_string(i));
  return req;
}

std::vector<std::string> SpanNames(const TracesRequest& req) {
  std::vector<std::string> names;
  for (const auto& rs : req.resource_spans())
    for (const auto& ss : rs.scope_spans())
      for (const auto& s : ss.spans()) names.push_back(s.name());
  return names;
}

// State shared between a test and the exporter the processor owns.
struct FakeState {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<TracesRequest> batches;
  std::vector<std::chrono::steady_clock::time_point> times;
  std::deque<ExportResult> script;  // results to return, then Ok
  bool block = false;               // Export() waits while true
  int calls = 0;

  void Release() {
    std::lock_guard l(mu);
    block = false;
    cv.notify_all();
  }
  // Waits until `pred` holds (under the lock) or 3 s pass.
  template <typename Pred>
  bool WaitFor(Pred pred) {
    std::unique_lock l(mu);
    return cv.wait_for(l, 3s, [&] { return pred(); });
  }
  std::size_t TotalSpans() {
    std::size_t n = 0;
    for (const auto& b : batches) n += CountSpans(b);
    return n;
  }
};

class FakeExporter : public TraceExporter {
 public:
  FakeExporter(std::shared_ptr<FakeState> s, std::string name = "fake")
      : s_(std::move(s)), name_(std::move(name)) {}
  std::string_view Name() const noexcept override { return name_; }
  ExportResult Export(const TracesRequest& r) noexcept override {
    std::unique_lock l(s_->mu);
    ++s_->calls;
    s_->cv.notify_all();
    s_->cv.wait(l, [&] { return !s_->block; });
    ExportResult res;
    if (!s_->script.empty()) {
      res = s_->script.front();
      s_->script.pop_front();
    }
    if (res.ok()) {
      s_->batches.push_back(r);
      s_->times.push_back(std::chrono::steady_clock::now());
    }
    s_->cv.notify_all();
    return res;
  }

 private:
  std::shared_ptr<FakeState> s_;
  std::string name_;
};

std::vector<std::unique_ptr<TraceExporter>> One(std::shared_ptr<FakeState> s) {
  std::vector<std::unique_ptr<TraceExporter>> v;
  v.push_back(std::make_unique<FakeExporter>(std::move(s)));
  return v;
}

BatchOptions Options(std::size_t batch, std::chrono::milliseconds delay) {
  BatchOptions o;
  o.max_batch_items = batch;
  o.max_delay = delay;
  o.retry.initial_backoff = 1ms;
  o.retry.max_backoff = 5ms;
  return o;
}

TEST(BatchProcessorTest, ExportsFullBatchesBySizeAndMergesRequests) {
  auto s = std::make_shared<FakeState>();
  TraceBatchProcessor p(One(s), Options(10, 10s));
  for (int i = 0; i < 25; ++i) p.Submit(MakeRequest(1, "s" + std::to_string(i) + "-"));
  ASSERT_TRUE(s->WaitFor([&] { return s->batches.size() == 2; }));
  {
    std::lock_guard l(s->mu);
    // Same resource and scope: one ResourceSpans with one ScopeSpans of 10 spans, in order.
    ASSERT_EQ(s->batches[0].resource_spans_size(), 1);
    ASSERT_EQ(s->batches[0].resource_spans(0).scope_spans_size(), 1);
    EXPECT_EQ(CountSpans(s->batches[0]), 10u);
    EXPECT_EQ(SpanNames(s->batches[0]).front(), "s0-0");
    EXPECT_EQ(SpanNames(s->batches[1]).front(), "s10-0");
  }
  // The remaining 5 wait for the 10 s delay; a flush sends them now.
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(s->batches.size(), 2u);
  EXPECT_TRUE(p.Flush(2s));
  std::lock_guard l(s->mu);
  ASSERT_EQ(s->batches.size(), 3u);
  EXPECT_EQ(CountSpans(s->batches[2]), 5u);
  EXPECT_EQ(p.Stats(0).sent.load(), 25u);
}

TEST(BatchProcessorTest, KeepsDistinctResourcesApart) {
  auto s = std::make_shared<FakeState>();
  TraceBatchProcessor p(One(s), Options(100, 10s));
  p.Submit(MakeRequest(2, "a", "svc-a"));
  p.Submit(MakeRequest(3, "b", "svc-b"));
  p.Submit(MakeRequest(1, "c", "svc-a"));
  ASSERT_TRUE(p.Flush(2s));
  std::lock_guard l(s->mu);
  ASSERT_EQ(s->batches.size(), 1u);
  ASSERT_EQ(s->batches[0].resource_spans_size(), 2);
  EXPECT_EQ(s->batches[0].resource_spans(0).scope_spans(0).spans_size(), 3);
  EXPECT_EQ(s->batches[0].resource_spans(1).scope_spans(0).spans_size(), 3);
}

TEST(BatchProcessorTest, SplitsALargeRequestIntoBatches) {
  auto s = std::make_shared<FakeState>();
  TraceBatchProcessor p(One(s), Options(10, 10s));
  p.Submit(MakeRequest(25, "x"));
  ASSERT_TRUE(p.Flush(2s));
  std::lock_guard l(s->mu);
  ASSERT_EQ(s->batches.size(), 3u);
  EXPECT_EQ(CountSpans(s->batches[0]), 10u);
  EXPECT_EQ(CountSpans(s->batches[1]), 10u);
  EXPECT_EQ(CountSpans(s->batches[2]), 5u);
  EXPECT_EQ(SpanNames(s->batches[1]).front(), "x10");
  EXPECT_EQ(SpanNames(s->batches[2]).back(), "x24");
}

// An exporter that asks its lane for `want` items per export.
class BatchSizeExporter : public FakeExporter {
 public:
  BatchSizeExporter(std::shared_ptr<FakeState> s, std::size_t want)
      : FakeExporter(std::move(s), "sized"), want_(want) {}
  std::size_t BatchItems(std::size_t) const noexcept override { return want_; }

 private:
  std::size_t want_;
};

// A lane whose exporter asks for larger batches (the store) gets them, while the other lanes
// of the same processor keep the configured size.
TEST(BatchProcessorTest, ALaneMayTakeLargerBatchesThanConfigured) {
  auto plain = std::make_shared<FakeState>(), sized = std::make_shared<FakeState>();
  std::vector<std::unique_ptr<TraceExporter>> v;
  v.push_back(std::make_unique<FakeExporter>(plain));
  v.push_back(std::make_unique<BatchSizeExporter>(sized, 40));
  TraceBatchProcessor p(std::move(v), Options(10, 10s));
  EXPECT_EQ(p.BatchItems(0), 10u);
  EXPECT_EQ(p.BatchItems(1), 40u);
  for (int i = 0; i < 80; ++i) p.Submit(MakeRequest(1, "s" + std::to_string(i) + "-"));
  ASSERT_TRUE(sized->WaitFor([&] { return sized->batches.size() == 2; }));
  ASSERT_TRUE(plain->WaitFor([&] { return plain->batches.size() == 8; }));
  {
    std::lock_guard l(sized->mu);
    EXPECT_EQ(CountSpans(sized->batches[0]), 40u);
    EXPECT_EQ(CountSpans(sized->batches[1]), 40u);
    EXPECT_EQ(SpanNames(sized->batches[1]).front(), "s40-0");
  }
  std::lock_guard l(plain->mu);
  for (const auto& b : plain->batches) EXPECT_EQ(CountSpans(b), 10u);
}

// What a lane grants: never less than configured, at most a quarter of the queue.
TEST(BatchProcessorTest, ALargerBatchIsBoundedByTheQueue) {
  std::vector<std::unique_ptr<TraceExporter>> v;
  v.push_back(std::make_unique<BatchSizeExporter>(std::make_shared<FakeState>(), 10000));
  v.push_back(std::make_unique<BatchSizeExporter>(std::make_shared<FakeState>(), 3));
  BatchOptions o = Options(10, 10s);
  o.max_queue_items = 200;
  TraceBatchProcessor p(std::move(v), o);
  EXPECT_EQ(p.BatchItems(0), 50u);
  EXPECT_EQ(p.BatchItems(1), 10u);
}

TEST(BatchProcessorTest, ExportsAfterTheDelayWellUnderASecond) {
  auto s = std::make_shared<FakeState>();
  TraceBatchProcessor p(One(s), Options(512, 50ms));
  const auto start = std::chrono::steady_clock::now();
  p.Submit(MakeRequest(1, "a"));
  p.Submit(MakeRequest(2, "b"));
  // "b" shares "a"'s export only if it is queued within the delay: wait for both, whatever
  // the scheduler did between the two calls, and time the first export.
  ASSERT_TRUE(s->WaitFor([&] { return s->TotalSpans() == 3; }));
  std::lock_guard l(s->mu);
  const auto latency = s->times[0] - start;
  EXPECT_GE(latency, 40ms);
  EXPECT_LT(latency, 500ms);
}

TEST(BatchProcessorTest, OverflowDropsTheOldestAndCountsThem) {
  auto s = std::make_shared<FakeState>();
  s->block = true;
  BatchOptions o = Options(1, 0ms);
  o.max_queue_items = 5;
  TraceBatchProcessor p(One(s), o);
  p.Submit(MakeRequest(1, "first"));
  ASSERT_TRUE(s->WaitFor([&] { return s->calls == 1; }));  // in flight, blocked
  for (int i = 0; i < 10; ++i) p.Submit(MakeRequest(1, "q" + std::to_string(i) + "-"));
  EXPECT_EQ(p.Stats(0).dropped_queue_full.load(), 5u);
  EXPECT_EQ(p.Stats(0).queue_items.load(), 5u);
  EXPECT_GT(p.Stats(0).queue_bytes.load(), 0u);
  s->Release();
  ASSERT_TRUE(p.Flush(2s));
  std::lock_guard l(s->mu);
  std::vector<std::string> names;
  for (const auto& b : s->batches)
    for (auto& n : SpanNames(b)) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"first0", "q5-0", "q6-0", "q7-0", "q8-0", "q9-0"}));
  EXPECT_EQ(p.Stats(0).queue_items.load(), 0u);
}

// Regression: one request larger than the whole queue (thousands of engine spans released at
// once) used to push itself out whole; now only its oldest pieces go.
TEST(BatchProcessorTest, ARequestLargerThanTheQueueKeepsItsNewestPieces) {
  auto s = std::make_shared<FakeState>();
  s->block = true;
  BatchOptions o = Options(4, 0ms);
  o.max_queue_items = 8;
  TraceBatchProcessor p(One(s), o);
  p.Submit(MakeRequest(1, "first"));
  ASSERT_TRUE(s->WaitFor([&] { return s->calls == 1; }));  // in flight, blocked
  p.Submit(MakeRequest(20, "big"));
  EXPECT_EQ(p.Stats(0).dropped_queue_full.load(), 12u);
  EXPECT_EQ(p.Stats(0).queue_items.load(), 8u);
  s->Release();
  ASSERT_TRUE(p.Flush(2s));
  std::lock_guard l(s->mu);
  std::vector<std::string> names;
  for (const auto& b : s->batches)
    for (auto& n : SpanNames(b)) names.push_back(n);
  ASSERT_EQ(names.size(), 9u);
  EXPECT_EQ(names.front(), "first0");
  EXPECT_EQ(names[1], "big12");
  EXPECT_EQ(names.back(), "big19");
}

TEST(BatchProcessorTest, ByteLimitDropsTheOldest) {
  auto s = std::make_shared<FakeState>();
  s->block = true;
  BatchOptions o = Options(1, 0ms);
  const std::size_t one = MakeRequest(1, "q0-").ByteSizeLong();
  o.max_queue_bytes = one * 2 + one / 2;  // room for two
  TraceBatchProcessor p(One(s), o);
  p.Submit(MakeRequest(1, "z0-"));
  ASSERT_TRUE(s->WaitFor([&] { return s->calls == 1; }));
  for (int i = 0; i < 4; ++i) p.Submit(MakeRequest(1, "q" + std::to_string(i) + "-"));
  EXPECT_EQ(p.Stats(0).dropped_queue_full.load(), 2u);
  s->Release();
  ASSERT_TRUE(p.Flush(2s));
  std::lock_guard l(s->mu);
  ASSERT_EQ(s->batches.size(), 3u);
  EXPECT_EQ(SpanNames(s->batches[1]).front(), "q2-0");
  EXPECT_EQ(SpanNames(s->batches[2]).front(), "q3-0");
}

TEST(BatchProcessorTest, RetriesRetryableThenSucceeds) {
  auto s = std::make_shared<FakeState>();
  s->script = {ExportResult::Retryable("unavailable"), ExportResult::Retryable("unavailable")};
  TraceBatchProcessor p(One(s), Options(10, 0ms));
  p.Submit(MakeRequest(4, "r"));
  ASSERT_TRUE(s->WaitFor([&] { return s->batches.size() == 1; }));
  ASSERT_TRUE(p.Flush(2s));  // the stats are updated once Export() has returned
  EXPECT_EQ(s->calls, 3);
  EXPECT_EQ(p.Stats(0).retries.load(), 2u);
  EXPECT_EQ(p.Stats(0).failures.load(), 2u);
  EXPECT_EQ(p.Stats(0).sent.load(), 4u);
  EXPECT_EQ(p.Stats(0).dropped_export_failed.load(), 0u);
}

TEST(BatchProcessorTest, BacksOffExponentially) {
  auto s = std::make_shared<FakeState>();
  s->script = {ExportResult::Retryable("a"), ExportResult::Retryable("b"),
               ExportResult::Retryable("c")};
  BatchOptions o = Options(10, 0ms);
  o.retry.initial_backoff = 40ms;
  o.retry.max_backoff = 1000ms;
  TraceBatchProcessor p(One(s), o);
  const auto start = std::chrono::steady_clock::now();
  p.Submit(MakeRequest(1, "r"));
  ASSERT_TRUE(s->WaitFor([&] { return s->batches.size() == 1; }));
  // Waits of at least 20 + 40 + 80 ms (jitter keeps 50..100% of 40, 80, 160 ms).
  EXPECT_GE(std::chrono::steady_clock::now() - start, 140ms);
}

TEST(BatchProcessorTest, DropsOnPermanentFailure) {
  auto s = std::make_shared<FakeState>();
  s->script = {ExportResult::Permanent("bad request")};
  TraceBatchProcessor p(One(s), Options(10, 0ms));
  p.Submit(MakeRequest(3, "p"));
  ASSERT_TRUE(s->WaitFor([&] { return s->calls == 1; }));
  ASSERT_TRUE(p.Flush(2s));
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(s->calls, 1);
  EXPECT_EQ(p.Stats(0).dropped_export_failed.load(), 3u);
  EXPECT_EQ(p.Stats(0).sent.load(), 0u);
  EXPECT_EQ(p.Stats(0).retries.load(), 0u);
}

TEST(BatchProcessorTest, GivesUpAfterMaxAttempts) {
  auto s = std::make_shared<FakeState>();
  for (int i = 0; i < 10; ++i) s->script.push_back(ExportResult::Retryable("down"));
  BatchOptions o = Options(10, 0ms);
  o.retry.max_attempts = 3;
  TraceBatchProcessor p(One(s), o);
  p.Submit(MakeRequest(2, "p"));
  ASSERT_TRUE(s->WaitFor([&] { return s->calls == 3; }));
  ASSERT_TRUE(p.Flush(2s));
  EXPECT_EQ(s->calls, 3);
  EXPECT_EQ(p.Stats(0).dropped_export_failed.load(), 2u);
  EXPECT_EQ(p.Stats(0).retries.load(), 2u);
}

TEST(BatchProcessorTest, CountsPartialSuccessRejections) {
  auto s = std::make_shared<FakeState>();
  auto partial = ExportResult::Ok();
  partial.rejected = 2;
  s->script = {partial};
  TraceBatchProcessor p(One(s), Options(10, 0ms));
  p.Submit(MakeRequest(5, "p"));
  ASSERT_TRUE(p.Flush(2s));
  EXPECT_EQ(p.Stats(0).sent.load(), 3u);
  EXPECT_EQ(p.Stats(0).rejected.load(), 2u);
  EXPECT_EQ(p.Stats(0).failures.load(), 0u);
}

TEST(BatchProcessorTest, BlockedExporterNeverBlocksSubmit) {
  auto s = std::make_shared<FakeState>();
  s->block = true;
  BatchOptions o = Options(8, 0ms);
  o.max_queue_items = 100;
  TraceBatchProcessor p(One(s), o);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 20000; ++i) p.Submit(MakeRequest(1, "b"));
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, 1s);
  EXPECT_LE(p.Stats(0).queue_items.load(), 100u);
  EXPECT_GE(p.Stats(0).dropped_queue_full.load(), 20000u - 100u - 8u);
  s->Release();
}

// Records whether its pacer let it pause in each export, after a stretch of work longer than
// the pacer's interval.
class PacedExporter : public TraceExporter {
 public:
  explicit PacedExporter(std::shared_ptr<FakeState> s) : s_(std::move(s)) {}
  std::string_view Name() const noexcept override { return "paced"; }
  bool UsePacer(Pacer pacer) noexcept override {
    pacer_ = pacer;
    return true;
  }
  std::size_t BatchItems(std::size_t configured) const noexcept override {
    return batch_items != 0 ? batch_items : configured;
  }
  std::size_t batch_items = 0;  // 0: the configured size
  ExportResult Export(const TracesRequest& r) noexcept override {
    {
      std::unique_lock l(s_->mu);
      ++s_->calls;
      s_->cv.notify_all();
      s_->cv.wait(l, [&] { return !s_->block; });
    }
    pacer_.Start();
    std::this_thread::sleep_for(std::max<std::chrono::nanoseconds>(kShortSlice, kPacerStretch) * 2);
    const std::uint64_t before = pacer_.pauses();
    pacer_.Between();
    std::lock_guard l(s_->mu);
    paused.push_back(pacer_.pauses() - before);
    s_->batches.push_back(r);
    s_->cv.notify_all();
    return {};
  }
  std::vector<std::uint64_t> paused;  // per export, guarded by s_->mu

 private:
  std::shared_ptr<FakeState> s_;
  Pacer pacer_;
};

// The pauses each export of a paced lane was allowed, with three batches of 4 queued behind
// the first.
std::vector<std::uint64_t> PausesWithThreeBatchesBehind(const BatchOptions& options) {
  auto s = std::make_shared<FakeState>();
  s->block = true;
  std::vector<std::unique_ptr<TraceExporter>> v;
  auto owned = std::make_unique<PacedExporter>(s);
  PacedExporter* exporter = owned.get();
  v.push_back(std::move(owned));
  TraceBatchProcessor p(std::move(v), options);
  p.Submit(MakeRequest(4, "first"));
  EXPECT_TRUE(s->WaitFor([&] { return s->calls == 1; }));
  for (int i = 0; i < 3; ++i) p.Submit(MakeRequest(4, "behind"));
  s->Release();
  EXPECT_TRUE(s->WaitFor([&] { return s->batches.size() == 4; }));
  std::lock_guard l(s->mu);
  return exporter->paused;
}

// The lane lets its exporter pause only while less than one batch waits behind the export in
// progress: with three batches queued behind the first, only the last export may pause.
TEST(BatchProcessorTest, TheExporterMayPauseOnlyWhileNoBatchWaits) {
  EXPECT_EQ(PausesWithThreeBatchesBehind(Options(4, 0ms)),
            (std::vector<std::uint64_t>{0, 0, 0, 1}));
}

// A lane that takes larger batches stops pausing, as any lane, once one configured batch
// waits: pausing until a whole large batch waited cost the store about a tenth of its CPU at
// saturation. The first export must be a whole lane batch, so the lane takes it by size: the
// request arrives cut into configured batches, and with no schedule delay the lane may take
// the first piece alone before the second is queued (the delay cuts exports by design).
TEST(BatchProcessorTest, ALaneWithLargerBatchesStopsPausingOnceAConfiguredBatchWaits) {
  auto s = std::make_shared<FakeState>();
  s->block = true;
  std::vector<std::unique_ptr<TraceExporter>> v;
  auto owned = std::make_unique<PacedExporter>(s);
  PacedExporter* exporter = owned.get();
  exporter->batch_items = 8;
  v.push_back(std::move(owned));
  TraceBatchProcessor p(std::move(v), Options(4, 10s));
  ASSERT_EQ(p.BatchItems(0), 8u);
  p.Submit(MakeRequest(8, "first"));  // two pieces of 4: taken once both are queued
  ASSERT_TRUE(s->WaitFor([&] { return s->calls == 1; }));
  p.Submit(MakeRequest(4, "behind"));
  s->Release();
  ASSERT_TRUE(p.Flush(2s));  // "behind" is less than a lane batch: it would wait for the delay
  std::lock_guard l(s->mu);
  ASSERT_EQ(s->batches.size(), 2u);
  EXPECT_EQ(CountSpans(s->batches[0]), 8u);
  EXPECT_EQ(exporter->paused, (std::vector<std::uint64_t>{0, 1}));
}

// In proportion (an agent allowed one CPU), the lane lets its exporter pause only while its
// queue holds less than a quarter of its bound: against a bound of 32 the exports see 12, 8, 4
// and none waiting, and the last two pause (in turns only the last would).
TEST(BatchProcessorTest, InProportionTheExporterMayPauseWhileItsQueueIsBelowAQuarter) {
  BatchOptions o = Options(4, 0ms);
  o.max_queue_items = 32;
  o.pacing = PaceRule::kInProportion;
  EXPECT_EQ(PausesWithThreeBatchesBehind(o), (std::vector<std::uint64_t>{0, 0, 1, 1}));
}

// Saturated (the receiver then answers "retry later") from three quarters of the queue bound
// on, and again not once the queue drains.
TEST(BatchProcessorTest, SaturatedFromThreeQuartersOfTheQueue) {
  auto s = std::make_shared<FakeState>();
  s->block = true;
  BatchOptions o = Options(1, 0ms);
  o.max_queue_items = 8;
  TraceBatchProcessor p(One(s), o);
  p.Submit(MakeRequest(1, "first"));
  ASSERT_TRUE(s->WaitFor([&] { return s->calls == 1; }));  // in flight: the queue is empty
  for (int i = 0; i < 5; ++i) p.Submit(MakeRequest(1, "q"));
  EXPECT_FALSE(p.Saturated());  // 5 of 8
  EXPECT_TRUE(p.Saturated(1));  // and 1 coming from the stage in front
  p.Submit(MakeRequest(1, "q"));
  EXPECT_TRUE(p.Saturated());  // 6 of 8
  EXPECT_EQ(p.Stats(0).dropped_queue_full.load(), 0u);
  s->Release();
  ASSERT_TRUE(p.Flush(2s));
  EXPECT_FALSE(p.Saturated());
  EXPECT_FALSE(p.Saturated(5));
  EXPECT_TRUE(p.Saturated(6));
}

// The lane rings the processor's bell each time it takes a batch out of its queue, and only
// while something counts itself as waiting; each ring finds the queue already shorter.
TEST(BatchProcessorTest, TakingABatchRingsTheBellWhileSomethingWaits) {
  auto s = std::make_shared<FakeState>();
  s->block = true;
  BatchOptions o = Options(1, 0ms);
  o.max_queue_items = 8;
  TraceBatchProcessor p(One(s), o);
  ASSERT_NE(p.Room(), nullptr);
  std::mutex mu;
  std::vector<bool> saturated_at_ring;
  const std::size_t handle = p.Room()->Listen([&] {
    std::lock_guard l(mu);
    saturated_at_ring.push_back(p.Saturated());
  });
  auto rings = [&] {
    std::lock_guard l(mu);
    return saturated_at_ring.size();
  };
  p.Submit(MakeRequest(1, "first"));
  ASSERT_TRUE(s->WaitFor([&] { return s->calls == 1; }));
  EXPECT_EQ(rings(), 0u);  // a batch was taken, but nothing waits
  for (int i = 0; i < 6; ++i) p.Submit(MakeRequest(1, "q"));
  ASSERT_TRUE(p.Saturated());
  p.Room()->BeginWait();
  s->Release();
  ASSERT_TRUE(p.Flush(2s));
  EXPECT_EQ(rings(), 6u);  // one per batch of one
  {
    std::lock_guard l(mu);
    EXPECT_FALSE(saturated_at_ring.front());  // 5 of 8 queued at the first ring
  }
  p.Room()->EndWait();
  p.Submit(MakeRequest(1, "after"));
  ASSERT_TRUE(p.Flush(2s));
  EXPECT_EQ(rings(), 6u);
  p.Room()->Unlisten(handle);
}

TEST(BatchProcessorTest, SaturatedByBytesToo) {
  auto s = std::make_shared<FakeState>();
  s->block = true;
  BatchOptions o = Options(1, 0ms);
  const std::size_t one = MakeRequest(1, "q").ByteSizeLong();
  o.max_queue_bytes = one * 4;
  TraceBatchProcessor p(One(s), o);
  p.Submit(MakeRequest(1, "first"));
  ASSERT_TRUE(s->WaitFor([&] { return s->calls == 1; }));
  p.Submit(MakeRequest(1, "q"));
  p.Submit(MakeRequest(1, "q"));
  EXPECT_FALSE(p.Saturated());  // 2 of 4 requests' bytes
  p.Submit(MakeRequest(1, "q"));
  EXPECT_TRUE(p.Saturated());  // 3 of 4
  s->Release();
}

// One dead backend (its exports fail) does not make the agent refuse what the other backends
// would take.
TEST(BatchProcessorTest, ADeadLaneAloneDoesNotSaturate) {
  auto dead = std::make_shared<FakeState>();
  dead->script.assign(1000, ExportResult::Retryable("connection refused"));
  auto live = std::make_shared<FakeState>();
  std::vector<std::unique_ptr<TraceExporter>> ex;
  ex.push_back(std::make_unique<FakeExporter>(dead, "dead"));
  ex.push_back(std::make_unique<FakeExporter>(live, "live"));
  BatchOptions o = Options(1, 0ms);
  o.max_queue_items = 8;
  TraceBatchProcessor p(std::move(ex), o);
  struct ReleaseAtEnd {  // before the processor's destructor joins the blocked lane
    FakeState* s;
    ~ReleaseAtEnd() { s->Release(); }
  } release{dead.get()};
  p.Submit(MakeRequest(1, "d"));  // the dead lane's first attempt fails
  ASSERT_TRUE(live->WaitFor([&] { return live->TotalSpans() == 1; }));
  for (int i = 0; i < 2000 && p.Stats(0).consecutive_failures.load() == 0; ++i)
    std::this_thread::sleep_for(1ms);
  for (std::size_t i = 2; i <= 20; ++i) {
    p.Submit(MakeRequest(1, "d"));
    ASSERT_TRUE(live->WaitFor([&] { return live->TotalSpans() == i; }));
  }
  EXPECT_GT(p.Stats(0).consecutive_failures.load(), 0u);  // the dead lane is failing
  EXPECT_FALSE(p.Saturated());
}

TEST(BatchProcessorTest, FanOutIsolatesADeadBackend) {
  auto dead = std::make_shared<FakeState>();
  dead->block = true;
  auto live = std::make_shared<FakeState>();
  std::vector<std::unique_ptr<TraceExporter>> ex;
  ex.push_back(std::make_unique<FakeExporter>(dead, "dead"));
  ex.push_back(std::make_unique<FakeExporter>(live, "live"));
  TraceBatchProcessor p(std::move(ex), Options(5, 10ms));
  for (int i = 0; i < 20; ++i) p.Submit(MakeRequest(1, "f" + std::to_string(i) + "-"));
  ASSERT_TRUE(live->WaitFor([&] { return live->TotalSpans() == 20; }));
  EXPECT_EQ(dead->batches.size(), 0u);
  for (int i = 0; i < 100 && p.Stats(1).sent.load() < 20u; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(p.Stats(1).sent.load(), 20u);
  dead->Release();
  ASSERT_TRUE(p.Flush(2s));
  std::lock_guard l(dead->mu);
  EXPECT_EQ(dead->TotalSpans(), 20u);  // each lane gets its own copy
}

TEST(BatchProcessorTest, ShutdownDrainsTheQueue) {
  auto s = std::make_shared<FakeState>();
  {
    TraceBatchProcessor p(One(s), Options(100, 10s));
    p.Submit(MakeRequest(7, "d"));
    p.Shutdown(2s);
    p.Submit(MakeRequest(1, "late"));  // discarded, never exported
  }
  std::lock_guard l(s->mu);
  EXPECT_EQ(s->TotalSpans(), 7u);
}

TEST(BatchProcessorTest, RegistersSelfMetrics) {
  auto s = std::make_shared<FakeState>();
  StatsRegistry reg;
  {
    TraceBatchProcessor p(One(s), Options(10, 0ms), &reg);
    p.Submit(MakeRequest(3, "m"));
    ASSERT_TRUE(p.Flush(2s));
  }
  const std::string text = reg.Render();
  EXPECT_NE(text.find("infertel_exporter_sent_items_total{exporter=\"fake\",signal=\"traces\"} 3"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("infertel_exporter_dropped_items_total{exporter=\"fake\",signal=\"traces\","
                      "reason=\"queue_full\"} 0"),
            std::string::npos);
  EXPECT_NE(text.find("# TYPE infertel_exporter_queue_items gauge"), std::string::npos);
  EXPECT_NE(text.find("infertel_exporter_queue_bytes{exporter=\"fake\",signal=\"traces\"} 0"),
            std::string::npos);
  EXPECT_NE(text.find("infertel_exporter_retries_total"), std::string::npos);
  EXPECT_NE(text.find("infertel_exporter_failures_total"), std::string::npos);
}

class CountingLogExporter : public LogExporter {
 public:
  explicit CountingLogExporter(std::atomic<int>* n) : n_(n) {}
  std::string_view Name() const noexcept override { return "logs"; }
  ExportResult Export(const LogsRequest& r) noexcept override {
    *n_ += static_cast<int>(CountItems(r));
    return ExportResult::Ok();
  }

 private:
  std::atomic<int>* n_;
};

TEST(BatchProcessorTest, WorksForLogs) {
  std::atomic<int> n{0};
  std::vector<std::unique_ptr<LogExporter>> ex;
  ex.push_back(std::make_unique<CountingLogExporter>(&n));
  LogBatchProcessor p(std::move(ex), Options(10, 0ms));
  LogsRequest req;
  auto* sl = req.add_resource_logs()->add_scope_logs();
  for (int i = 0; i < 4; ++i) sl->add_log_records()->set_severity_text("INFO");
  p.Submit(std::move(req));
  ASSERT_TRUE(p.Flush(2s));
  EXPECT_EQ(n.load(), 4);
}

// A held request (pipeline/held.h) reaches the first lane's exporter as the very spans it was
// received as, split and merged by pointer; a second lane gets its own copies; and the
// received arena is released once the last batch holding its spans was exported.
TEST(BatchProcessorTest, HeldRequestsAreExportedWithoutCopies) {
  struct PointerState {
    std::mutex mu;
    std::vector<const Span*> seen;
    std::size_t spans = 0;
  };
  class PointerExporter : public TraceExporter {
   public:
    PointerExporter(std::shared_ptr<PointerState> s, std::string name)
        : s_(std::move(s)), name_(std::move(name)) {}
    std::string_view Name() const noexcept override { return name_; }
    ExportResult Export(const TracesRequest& r) noexcept override {
      std::lock_guard l(s_->mu);
      for (const auto& rs : r.resource_spans())
        for (const auto& ss : rs.scope_spans())
          for (const auto& sp : ss.spans()) s_->seen.push_back(&sp);
      s_->spans += CountSpans(r);
      return ExportResult::Ok();
    }

   private:
    std::shared_ptr<PointerState> s_;
    std::string name_;
  };
  auto first = std::make_shared<PointerState>(), second = std::make_shared<PointerState>();
  std::vector<std::unique_ptr<TraceExporter>> lanes;
  lanes.push_back(std::make_unique<PointerExporter>(second, "second"));
  lanes.push_back(std::make_unique<PointerExporter>(first, "first"));  // the last lane: no copy
  TraceBatchProcessor p(std::move(lanes), Options(4, 10s));

  auto held = Held<TracesRequest>::Make();
  ASSERT_TRUE(held.request->ParseFromString(MakeRequest(10, "h").SerializeAsString()));
  std::vector<const Span*> received;
  for (const auto& sp : held.request->resource_spans(0).scope_spans(0).spans())
    received.push_back(&sp);
  std::weak_ptr<Memory> memory = held.memory;
  p.SubmitHeld(std::move(held));  // cut into 4 + 4 + 2
  ASSERT_TRUE(p.Flush(2s));
  {
    std::scoped_lock l(first->mu, second->mu);
    EXPECT_EQ(first->seen, received);
    EXPECT_EQ(second->spans, 10u);
    for (const Span* sp : second->seen)
      EXPECT_EQ(std::find(received.begin(), received.end(), sp), received.end());
  }
  EXPECT_TRUE(memory.expired());
  EXPECT_EQ(p.Stats(1).sent.load(), 10u);
}

TEST(SignalTest, TakeItemsMovesAPrefixAndKeepsTheRest) {
  TracesRequest two = MakeRequest(3, "a");
  *two.add_resource_spans() = MakeRequest(2, "b", "other").resource_spans(0);
  Held<TracesRequest> src = Hold(std::move(two));
  std::size_t moved = 0;
  Held<TracesRequest> dst = TakeItems(&src, 4, &moved);
  EXPECT_EQ(moved, 4u);
  EXPECT_EQ(SpanNames(*dst.request), (std::vector<std::string>{"a0", "a1", "a2", "b0"}));
  EXPECT_EQ(SpanNames(*src.request), (std::vector<std::string>{"b1"}));
  ASSERT_EQ(src.request->resource_spans_size(), 1);
  EXPECT_EQ(src.request->resource_spans(0).resource().attributes(0).value().string_value(),
            "other");
  ASSERT_EQ(dst.request->resource_spans_size(), 2);
  EXPECT_EQ(dst.request->resource_spans(1).resource().attributes(0).value().string_value(),
            "other");
}

// Equal resource and scope blocks fold into one, in order; a different schema URL or scope
// stays apart.
TEST(SignalTest, MergerFoldsEqualBlocksAndKeepsOthersApart) {
  std::vector<Held<TracesRequest>> parts;
  parts.push_back(Hold(MakeRequest(1, "a")));
  parts.push_back(Hold(MakeRequest(2, "b")));
  TracesRequest other_url = MakeRequest(1, "c");
  other_url.mutable_resource_spans(0)->set_schema_url("https://opentelemetry.io/schemas/1.26.0");
  parts.push_back(Hold(std::move(other_url)));
  TracesRequest other_scope = MakeRequest(1, "d");
  other_scope.mutable_resource_spans(0)->mutable_scope_spans(0)->mutable_scope()->set_name("x");
  parts.push_back(Hold(std::move(other_scope)));
  parts.push_back(Hold(MakeRequest(1, "e")));
  HeldMerger<TracesRequest> m;
  for (const auto& p : parts) m.Add(p);
  Held<TracesRequest> batch = std::move(m).Finish();
  const TracesRequest& dst = *batch.request;
  ASSERT_EQ(dst.resource_spans_size(), 2);
  ASSERT_EQ(dst.resource_spans(0).scope_spans_size(), 2);
  EXPECT_EQ(SpanNames(dst), (std::vector<std::string>{"a0", "b0", "b1", "e0", "d0", "c0"}));
  EXPECT_EQ(dst.resource_spans(1).schema_url(), "https://opentelemetry.io/schemas/1.26.0");
  EXPECT_EQ(dst.resource_spans(0).scope_spans(1).scope().name(), "x");
}

}  // namespace
}  // namespace infertel::pipeline
