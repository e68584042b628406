// Admission in the BatchProcessor (Sink::Offer, Reserve, SubmitReserved): what is admitted is
// never dropped to make room; what cannot be refused (Submit) only takes room nobody was
// promised; a failing lane takes no part in admission and counts what it drops.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "core/semconv.h"
#include "pipeline/batch_processor.h"

namespace infertel::pipeline {
namespace {

using namespace std::chrono_literals;

TracesRequest Spans(int n) {
  TracesRequest req;
  auto* ss = req.add_resource_spans()->add_scope_spans();
  for (int i = 0; i < n; ++i) ss->add_spans()->set_name("s");
  return req;
}

// An exporter that holds its first Export() until released, then counts what it exports; or
// one that always fails (a dead backend).
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  bool failing = false;
  int calls = 0;
  std::size_t exported = 0;
  void Open() {
    std::lock_guard l(mu);
    open = true;
    cv.notify_all();
  }
  bool WaitCalls(int n) {
    std::unique_lock l(mu);
    return cv.wait_for(l, 5s, [&] { return calls >= n; });
  }
};

class GateExporter : public TraceExporter {
 public:
  explicit GateExporter(std::shared_ptr<Gate> g, std::string name = "gate")
      : g_(std::move(g)), name_(std::move(name)) {}
  std::string_view Name() const noexcept override { return name_; }
  ExportResult Export(const TracesRequest& r) noexcept override {
    std::unique_lock l(g_->mu);
    ++g_->calls;
    g_->cv.notify_all();
    if (g_->failing) {
      l.unlock();
      std::this_thread::sleep_for(5ms);  // a connection attempt that fails
      return ExportResult::Retryable("connection refused");
    }
    g_->cv.wait(l, [&] { return g_->open; });
    g_->exported += CountSpans(r);
    return ExportResult::Ok();
  }

 private:
  std::shared_ptr<Gate> g_;
  std::string name_;
};

BatchOptions Small(std::size_t queue) {
  BatchOptions o;
  o.max_queue_items = queue;
  o.max_batch_items = 1;
  o.max_delay = 0ms;
  o.retry.initial_backoff = 1ms;
  o.retry.max_backoff = 2ms;
  o.retry.max_attempts = 2;
  return o;
}

// Opens the gate when a test ends, before the processor's destructor joins a held lane.
struct OpenAtEnd {
  Gate* g;
  ~OpenAtEnd() { g->Open(); }
};

std::vector<std::unique_ptr<TraceExporter>> Lanes(std::vector<std::shared_ptr<Gate>> gates) {
  std::vector<std::unique_ptr<TraceExporter>> v;
  for (std::size_t i = 0; i < gates.size(); ++i)
    v.push_back(std::make_unique<GateExporter>(gates[i], "lane" + std::to_string(i)));
  return v;
}

// Admitted up to three quarters of the queue, refused beyond, whole; unadmitted submissions
// then take only the last quarter and, when it is full, are dropped themselves (counted):
// nothing admitted is pushed out.
TEST(AdmissionTest, AdmittedItemsAreNeverPushedOutByUnadmittedOnes) {
  auto g = std::make_shared<Gate>();
  TraceBatchProcessor p(Lanes({g}), Small(8));
  OpenAtEnd open{g.get()};
  p.Submit(Spans(1));
  ASSERT_TRUE(g->WaitCalls(1));  // in flight, held: the queue is empty
  int admitted = 0;
  for (int i = 0; i < 10; ++i) admitted += p.Offer(Hold(Spans(1))) ? 1 : 0;
  EXPECT_EQ(admitted, 6);  // 3/4 of 8
  EXPECT_FALSE(p.Offer(Hold(Spans(2))));
  EXPECT_TRUE(p.Saturated());
  for (int i = 0; i < 5; ++i) p.Submit(Spans(1));  // 2 fit, 3 are shed
  EXPECT_EQ(p.Stats(0).dropped_queue_full.load(), 3u);
  EXPECT_EQ(p.Stats(0).queue_items.load(), 8u);
  g->Open();
  ASSERT_TRUE(p.Flush(3s));
  std::lock_guard l(g->mu);
  EXPECT_EQ(g->exported, 1u + 6u + 2u);
}

// Room reserved ahead (the assembler's spans about to leave) is not taken by unadmitted
// submissions meanwhile, and is given back whole when fewer items come.
TEST(AdmissionTest, ReservedRoomIsKeptUntilSubmittedOrCancelled) {
  auto g = std::make_shared<Gate>();
  TraceBatchProcessor p(Lanes({g}), Small(8));
  OpenAtEnd open{g.get()};
  p.Submit(Spans(1));
  ASSERT_TRUE(g->WaitCalls(1));
  auto r = p.Reserve(5, 0);
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(p.Reserve(2, 0).has_value());  // 5 + 2 > 6
  for (int i = 0; i < 4; ++i) p.Submit(Spans(1));
  EXPECT_EQ(p.Stats(0).dropped_queue_full.load(), 1u);  // 8 - 5 reserved = 3 fit
  p.SubmitReserved(Hold(Spans(4)), *r);                 // fewer than reserved
  EXPECT_EQ(p.Stats(0).queue_items.load(), 7u);
  EXPECT_EQ(p.Stats(0).dropped_queue_full.load(), 1u);
  g->Open();
  ASSERT_TRUE(p.Flush(3s));
  EXPECT_FALSE(p.Saturated());
  EXPECT_TRUE(p.Reserve(6, 0).has_value());  // the reservation of 5 was given back whole
}

// Many threads offering at once never overfill the queue: every admitted span is exported,
// and nothing is dropped (the race of a look at the queue followed by a submit is gone).
TEST(AdmissionTest, ConcurrentOffersAdmitExactlyWhatIsExported) {
  auto g = std::make_shared<Gate>();
  g->open = true;
  BatchOptions o = Small(64);
  o.max_batch_items = 8;
  TraceBatchProcessor p(Lanes({g}), o);
  std::atomic<std::size_t> admitted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 500; ++i)
        if (p.Offer(Hold(Spans(4)))) admitted.fetch_add(4);
    });
  for (auto& t : threads) t.join();
  ASSERT_TRUE(p.Flush(5s));
  std::lock_guard l(g->mu);
  EXPECT_GT(admitted.load(), 0u);
  EXPECT_EQ(g->exported, admitted.load());
  EXPECT_EQ(p.Stats(0).sent.load(), admitted.load());
  EXPECT_EQ(p.Stats(0).dropped_queue_full.load(), 0u);
}

// A lane whose backend fails takes no part in admission: the live lane decides, and the
// failing lane drops what it cannot hold, counted there, and is reported failing.
TEST(AdmissionTest, AFailingLaneDoesNotRefuseButCountsItsDrops) {
  auto dead = std::make_shared<Gate>();
  dead->failing = true;
  auto live = std::make_shared<Gate>();
  live->open = true;
  TraceBatchProcessor p(Lanes({dead, live}), Small(8));
  p.Submit(Spans(1));
  ASSERT_TRUE(dead->WaitCalls(1));
  for (int i = 0; i < 100 && p.Stats(0).consecutive_failures.load() == 0; ++i)
    std::this_thread::sleep_for(1ms);
  ASSERT_GT(p.Stats(0).consecutive_failures.load(), 0u);
  std::size_t admitted = 1;
  for (int i = 0; i < 200; ++i) {
    if (p.Offer(Hold(Spans(1)))) ++admitted;
    // The live lane drains before the next offer: only the dead lane could refuse.
    for (int k = 0; k < 2000 && p.Stats(1).queue_items.load() > 0; ++k)
      std::this_thread::sleep_for(100us);
  }
  p.Flush(5s);
  EXPECT_EQ(admitted, 201u);  // the dead lane refused nothing
  {
    std::lock_guard l(live->mu);
    EXPECT_EQ(live->exported, admitted);
  }
  // Every item reached the dead lane and is accounted for there: dropped for room, or failed.
  const ExporterStats& d = p.Stats(0);
  auto lost = [&] { return d.dropped_queue_full.load() + d.dropped_export_failed.load(); };
  for (int i = 0; i < 400 && lost() < admitted; ++i) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(lost(), admitted);
  EXPECT_GT(d.dropped_queue_full.load(), 0u);
  EXPECT_FALSE(p.Saturated());
}

}  // namespace
}  // namespace infertel::pipeline
