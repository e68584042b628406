#pragma once
// The batch processor: the Sink every producer submits to. It fans each request out to one
// lane per exporter; a lane owns a bounded queue and one worker thread that batches, merges,
// exports and retries. A dead or slow backend therefore only fills (and drops from) its own
// lane's queue: it never slows the caller or the other exporters.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/stats.h"
#include "core/thread_name.h"
#include "pipeline/exporter.h"
#include "pipeline/held.h"
#include "pipeline/pacer.h"
#include "pipeline/signal.h"

namespace infertel::pipeline {

// Retries of kRetryable results: exponential backoff with jitter, bounded both in attempts
// and in elapsed time. A Retry-After given by the backend replaces the computed delay
// (capped by max_backoff).
struct RetryPolicy {
  int max_attempts = 5;  // total tries, the first included
  std::chrono::milliseconds initial_backoff{100};
  std::chrono::milliseconds max_backoff{5000};
  double multiplier = 2.0;
  std::chrono::milliseconds max_elapsed{30000};
};

struct BatchOptions {
  // Per exporter lane (OTEL_BSP_MAX_QUEUE_SIZE). Not the SDK's 2048: the agent relays a whole
  // engine's spans, and one vLLM export of 512 spans leaves normalization as 2,048 spans, which
  // would push every entry span queued behind it out of an SDK-sized queue.
  std::size_t max_queue_items = 16384;
  std::size_t max_queue_bytes = 64u * 1024u * 1024u;  // per exporter lane, Request::ByteSizeLong()
  std::size_t max_batch_items = 512;                  // per export (OTEL_BSP_MAX_EXPORT_BATCH_SIZE)
  std::chrono::milliseconds max_delay{200};           // OTEL_BSP_SCHEDULE_DELAY
  RetryPolicy retry;
  // How a lane whose exporter takes a pacer gives the core up (pipeline/pacer.h): in proportion
  // where the agent may use only one CPU (core/cpus.h), in turns elsewhere.
  PaceRule pacing = PaceRule::kTurns;
};

// Per-lane self-metrics. Registered in the StatsRegistry as
//   infertel_exporter_sent_items_total{exporter,signal}
//   infertel_exporter_dropped_items_total{exporter,signal,reason="queue_full"|"export_failed"|"rejected"}
//   infertel_exporter_failures_total{exporter,signal}   (failed export attempts)
//   infertel_exporter_failing{exporter,signal}          (gauge: 1 while the last attempt failed)
//   infertel_exporter_retries_total{exporter,signal}
//   infertel_exporter_queue_items{exporter,signal}      (gauge)
//   infertel_exporter_queue_bytes{exporter,signal}      (gauge)
// "rejected" counts items a backend refused in an OTLP partial success.
struct ExporterStats {
  std::atomic<std::uint64_t> sent{0};
  std::atomic<std::uint64_t> dropped_queue_full{0};
  std::atomic<std::uint64_t> dropped_export_failed{0};
  std::atomic<std::uint64_t> rejected{0};
  std::atomic<std::uint64_t> failures{0};
  std::atomic<std::uint64_t> retries{0};
  std::atomic<std::uint64_t> queue_items{0};
  std::atomic<std::uint64_t> queue_bytes{0};
  // Failed attempts since the last success: the lane is failing while this is not 0. A failing
  // lane takes no part in admission (Reserve): a dead backend must not make the agent refuse
  // what the other destinations would take; what it cannot hold is dropped there, counted.
  std::atomic<std::uint64_t> consecutive_failures{0};
  // The last failure's message, for /healthz.
  std::string LastError() const {
    std::lock_guard lock(error_mu);
    return last_error;
  }
  void SetLastError(std::string message) {
    std::lock_guard lock(error_mu);
    last_error = std::move(message);
  }

 private:
  mutable std::mutex error_mu;
  std::string last_error;  // guarded by error_mu
};

// Registers `stats` (kept alive by the registry's closures) under the names above.
void RegisterExporterStats(StatsRegistry& registry, std::string_view exporter,
                           std::string_view signal, std::shared_ptr<const ExporterStats> stats);

// Kept Memories a paced lane lets go of between two looks at its pacer (Memory::ReleaseKept).
inline constexpr std::size_t kFreedBetweenPauses = 32;

// Thread-safety: Submit() may be called from any thread at any time, including after
// Shutdown() (the request is then discarded). Flush() and Shutdown() may be called from any
// thread but not concurrently with the destructor. Submit() never blocks on I/O: it takes
// each lane's mutex for a push only.
template <typename Request>
class BatchProcessor final : public Sink<Request> {
  struct Lane;

 public:
  using ExporterPtr = std::unique_ptr<Exporter<Request>>;

  // Takes ownership of the exporters and starts one worker thread per exporter. `stats` may
  // be null; otherwise each lane registers its metrics there (the registry may outlive this).
  BatchProcessor(std::vector<ExporterPtr> exporters, BatchOptions options,
                 StatsRegistry* stats = nullptr)
      : options_(options) {
    if (options_.max_batch_items == 0) options_.max_batch_items = 1;
    for (auto& e : exporters) {
      auto lane = std::make_unique<Lane>();
      lane->exporter = std::move(e);
      lane->stats = std::make_shared<ExporterStats>();
      lane->batch_items =
          std::clamp(lane->exporter->BatchItems(options_.max_batch_items), options_.max_batch_items,
                     std::max(options_.max_batch_items, options_.max_queue_items / 4));
      lane->pacer = MakePacer(lane->stats->queue_items);
      // In proportion the lane paces its own work on each batch too (merging its parts,
      // freeing them): freeing a batch of 4,096 entry spans took 2.3–5 ms of one core.
      lane->paced =
          lane->exporter->UsePacer(lane->pacer) && options_.pacing == PaceRule::kInProportion;
      if (stats != nullptr)
        RegisterExporterStats(*stats, lane->exporter->Name(), SignalTraits<Request>::kName,
                              lane->stats);
      lanes_.push_back(std::move(lane));
    }
    for (auto& lane : lanes_) {
      Lane* l = lane.get();
      l->thread = std::thread([this, l] {
        // "traces:otlp_grpc": the signal and the exporter (cut at 15 bytes).
        NameThisThread(fmt::format("{}:{}", SignalTraits<Request>::kName, l->exporter->Name()));
        Run(*l);
      });
    }
  }

  ~BatchProcessor() override { Shutdown(std::chrono::milliseconds(2000)); }
  BatchProcessor(const BatchProcessor&) = delete;
  BatchProcessor& operator=(const BatchProcessor&) = delete;

  // Enqueues on every lane (a copy per extra lane), unadmitted: on overflow (items or bytes,
  // reserved room included) the lane drops its oldest unadmitted requests, or this one when
  // admitted ones are in front, counted as dropped{reason="queue_full"}. Admitted requests
  // (SubmitReserved) are never dropped to make room.
  void Submit(Request&& request) noexcept override {
    if (lanes_.empty()) return;
    SubmitHeld(Hold(std::move(request)));
  }

  // The same for a request on an arena (see pipeline/held.h): queued and exported without
  // copying, and freed with its arena after the export.
  void SubmitHeld(Held<Request>&& request) noexcept override {
    if (lanes_.empty()) return;
    SubmitPieces(std::move(request), Reservation{}, 0);
  }

  // Admission (see Sink): reserves `items` and `bytes` in every lane that is not failing, up to
  // three quarters of its bound (items and bytes, queued and reserved): the last quarter stays
  // for what cannot be refused (entry spans, content events). A request larger than that is
  // admitted while the lane is at most half way to it (unless `divisible`: Sink::Reserve).
  // All or nothing. A failing lane (its last export attempt failed) is left out: it receives
  // the request unadmitted, and drops it, counted, if it has no room.
  std::optional<Reservation> Reserve(std::size_t items, std::size_t bytes,
                                     bool divisible = false) noexcept override {
    Reservation r{items, bytes, 0};
    for (std::size_t i = 0; i < lanes_.size(); ++i) {
      Lane& lane = *lanes_[i];
      if (lane.stats->consecutive_failures.load(std::memory_order_relaxed) > 0) continue;
      std::lock_guard lock(lane.mu);
      if (lane.stopping) continue;
      if (!HasRoom(lane, items, bytes, divisible)) {
        Cancel(r);
        return std::nullopt;
      }
      lane.r_items += items;
      lane.r_bytes += bytes;
      PublishDepth(lane);
      r.lanes |= std::uint64_t{1} << i;
    }
    return r;
  }

  void Cancel(const Reservation& r) noexcept override {
    for (std::size_t i = 0; i < lanes_.size(); ++i) {
      if ((r.lanes & (std::uint64_t{1} << i)) == 0) continue;
      Lane& lane = *lanes_[i];
      std::lock_guard lock(lane.mu);
      lane.r_items -= r.items;
      lane.r_bytes -= r.bytes;
      PublishDepth(lane);
    }
  }

  void SubmitReserved(Held<Request>&& request, const Reservation& r) noexcept override {
    if (lanes_.empty()) return;
    SubmitPieces(std::move(request), r, 0);
  }

  bool Offer(Held<Request>&& request) noexcept override {
    Held<Request> taken = std::move(request);
    const std::size_t items = CountItems(*taken.request);
    const std::size_t bytes = taken.request->ByteSizeLong();  // kept sizes: SubmitOne reuses them
    auto r = Reserve(items, bytes);
    if (!r) return false;
    SubmitPieces(std::move(taken), *r, items <= options_.max_batch_items ? bytes : 0);
    return true;
  }

  // Saturated when a lane that is not failing is three-quarters full (items, queued, reserved
  // and `coming`, or bytes): Reserve would then refuse. `coming` are items the stage in front
  // holds and is about to submit. A failing lane (a dead backend) fills only itself and does
  // not make the others refuse. A hint, read without locks: Reserve decides.
  bool Saturated(std::size_t coming = 0) const noexcept override {
    for (const auto& lane : lanes_) {
      if (lane->stats->consecutive_failures.load(std::memory_order_relaxed) > 0) continue;
      const std::uint64_t items = lane->stats->queue_items.load(std::memory_order_relaxed) +
                                  lane->reserved_items.load(std::memory_order_relaxed) + coming;
      const std::uint64_t bytes = lane->stats->queue_bytes.load(std::memory_order_relaxed) +
                                  lane->reserved_bytes.load(std::memory_order_relaxed);
      if (items * 4 >= options_.max_queue_items * 3 || bytes * 4 >= options_.max_queue_bytes * 3)
        return true;
    }
    return false;
  }

  // Rung each time a lane takes a batch out of its queue: the only moment Saturated() can turn
  // false, since `coming` items only move into the queue.
  RoomBell* Room() noexcept override { return &room_; }

 private:
  // Room for an admitted request of `items` and `bytes` within three quarters of the bounds
  // (see Reserve). With lane.mu held.
  bool HasRoom(const Lane& lane, std::size_t items, std::size_t bytes, bool divisible) const {
    const std::size_t limit_items = options_.max_queue_items * 3 / 4;
    const std::size_t limit_bytes = options_.max_queue_bytes * 3 / 4;
    const std::size_t want_items =
        divisible ? items : std::min(items, std::max<std::size_t>(limit_items / 2, 1));
    const std::size_t want_bytes = divisible ? bytes : std::min(bytes, limit_bytes / 2);
    return lane.q_items + lane.r_items + want_items <= limit_items &&
           lane.q_bytes + lane.r_bytes + want_bytes <= limit_bytes;
  }

  // A request larger than one batch is cut into batch-sized pieces first, so that the queue's
  // bound works piece by piece: one large unadmitted request must not push itself out of the
  // queue whole. The reservation `r` (empty: unadmitted) is given back with the last piece.
  // `bytes`: the request's size when already computed, else 0.
  void SubmitPieces(Held<Request>&& request, const Reservation& r, std::size_t bytes) noexcept {
    while (CountItems(*request.request) > options_.max_batch_items) {
      std::size_t moved = 0;
      SubmitOne(TakeItems(&request, options_.max_batch_items, &moved), r.lanes, Reservation{}, 0);
    }
    SubmitOne(std::move(request), r.lanes, r, bytes);
  }

  // Queues `request` on every lane: admitted on the lanes in `admitted` (never dropped for room;
  // `release` is given back there), unadmitted elsewhere (see Submit).
  void SubmitOne(Held<Request>&& request, std::uint64_t admitted, const Reservation& release,
                 std::size_t known_bytes) noexcept {
    const std::size_t items = CountItems(*request.request);
    const std::size_t bytes = known_bytes != 0 ? known_bytes : request.request->ByteSizeLong();
    for (std::size_t i = 0; i < lanes_.size(); ++i) {
      Lane& lane = *lanes_[i];
      const bool is_admitted = (admitted & (std::uint64_t{1} << i)) != 0;
      if (items == 0) {
        if (is_admitted && release.items != 0)
          Cancel(Reservation{release.items, release.bytes, std::uint64_t{1} << i});
        continue;
      }
      Entry entry;
      // Each lane its own items: a lane's encoder relies on sizes no other thread changes.
      if (i + 1 == lanes_.size())
        entry.request = std::move(request);
      else
        entry.request = Hold(CopyOut(request));
      entry.items = items;
      entry.bytes = bytes;
      entry.admitted = is_admitted;
      entry.enqueued = Clock::now();
      bool wake = false;
      {
        std::lock_guard lock(lane.mu);
        if (is_admitted) {
          lane.r_items -= release.items;
          lane.r_bytes -= release.bytes;
        }
        if (lane.stopping) {
          lane.stats->dropped_queue_full.fetch_add(items, std::memory_order_relaxed);
          PublishDepth(lane);
          continue;
        }
        if (!is_admitted && !MakeRoom(lane, items, bytes)) {
          lane.stats->dropped_queue_full.fetch_add(items, std::memory_order_relaxed);
          PublishDepth(lane);
          continue;
        }
        lane.queue.push_back(std::move(entry));
        lane.q_items += items;
        lane.q_bytes += bytes;
        PublishDepth(lane);
        wake = lane.q_items >= lane.batch_items || lane.queue.size() == 1;
      }
      if (wake) lane.cv.notify_all();
    }
  }

  // Room for an unadmitted request within the whole bound, reserved room counted: the oldest
  // unadmitted requests at the front of the queue go (counted) while there is none; false, and
  // nothing more dropped, when an admitted one is in front or this one is larger than the
  // bound. With lane.mu held.
  bool MakeRoom(Lane& lane, std::size_t items, std::size_t bytes) {
    auto fits = [&] {
      return lane.q_items + lane.r_items + items <= options_.max_queue_items &&
             lane.q_bytes + lane.r_bytes + bytes <= options_.max_queue_bytes;
    };
    if (items > options_.max_queue_items || bytes > options_.max_queue_bytes) return false;
    while (!fits() && !lane.queue.empty() && !lane.queue.front().admitted) {
      const Entry& old = lane.queue.front();
      lane.q_items -= old.items;
      lane.q_bytes -= old.bytes;
      lane.stats->dropped_queue_full.fetch_add(old.items, std::memory_order_relaxed);
      lane.queue.pop_front();
    }
    return fits();
  }

 public:
  // Exports everything queued now, ignoring the schedule delay, and waits until every lane's
  // queue is empty and no export is in flight, or until `timeout`. Returns true when drained.
  bool Flush(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    for (auto& lane : lanes_) {
      std::lock_guard lock(lane->mu);
      ++lane->flush_requests;
    }
    for (auto& lane : lanes_) lane->cv.notify_all();
    bool all = true;
    for (auto& lane : lanes_) {
      std::unique_lock lock(lane->mu);
      if (!lane->idle_cv.wait_until(lock, deadline, [&] {
            return (lane->queue.empty() && !lane->in_flight) || lane->exited;
          }))
        all = false;
      if (lane->flush_requests > 0) --lane->flush_requests;
    }
    return all;
  }

  // Stops accepting, drains what is queued until `timeout` (retries stop at the deadline),
  // drops the rest (counted as export_failed), joins the workers and shuts the exporters
  // down. Idempotent.
  void Shutdown(std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
    const auto deadline = Clock::now() + timeout;
    for (auto& lane : lanes_) {
      std::lock_guard lock(lane->mu);
      if (lane->stopping) continue;
      lane->stopping = true;
      lane->deadline = deadline;
    }
    for (auto& lane : lanes_) {
      lane->cv.notify_all();
      if (lane->thread.joinable()) {
        lane->thread.join();
        lane->exporter->Shutdown();
      }
    }
  }

  // The stats of lane `i` (in exporter order), for tests and the admin endpoint.
  const ExporterStats& Stats(std::size_t i) const { return *lanes_.at(i)->stats; }
  // Items per export on lane `i` (Exporter::BatchItems, as granted).
  std::size_t BatchItems(std::size_t i) const { return lanes_.at(i)->batch_items; }
  std::size_t LaneCount() const { return lanes_.size(); }
  // The name of lane `i`'s exporter (as in the metrics' `exporter` label).
  std::string_view ExporterName(std::size_t i) const { return lanes_.at(i)->exporter->Name(); }

 private:
  using Clock = std::chrono::steady_clock;

  // A lane's pacer, watching its queue (pipeline/pacer.h). In turns, pauses are allowed while
  // less than one configured batch waits behind the export in progress: the configured size,
  // not the lane's larger one, so that a lane taking 4,096 at a time still stops pausing once
  // 512 wait (measured with the store at saturation: about 10 % less agent CPU per request than
  // pausing until 4,096 wait; docs/performance-history.md). In proportion, against the queue's
  // bound.
  Pacer MakePacer(const std::atomic<std::uint64_t>& queued) const {
    if (options_.pacing == PaceRule::kInProportion)
      return Pacer::InProportion(&queued, options_.max_queue_items);
    return Pacer(&queued, options_.max_batch_items);
  }

  struct Entry {
    Held<Request> request;
    std::size_t items = 0;
    std::size_t bytes = 0;
    bool admitted = false;  // reserved before it came (SubmitReserved): never dropped for room
    Clock::time_point enqueued;
  };

  struct Lane {
    std::shared_ptr<ExporterStats> stats;  // before the exporter, whose pacer reads it
    ExporterPtr exporter;
    std::size_t batch_items = 0;  // items per export, fixed at construction
    std::thread thread;
    std::mutex mu;                    // guards everything below
    std::condition_variable cv;       // work arrived, flush or stop
    std::condition_variable idle_cv;  // queue drained
    std::deque<Entry> queue;
    std::size_t q_items = 0, q_bytes = 0;
    std::size_t r_items = 0, r_bytes = 0;  // reserved (Reserve), not yet queued
    // r_items and r_bytes for Saturated(), which reads without the lock.
    std::atomic<std::uint64_t> reserved_items{0}, reserved_bytes{0};
    bool in_flight = false;
    Pacer pacer;         // the lane thread's own copy, for merging and freeing
    bool paced = false;  // the lane paces its own work (see the constructor)
    bool stopping = false;
    bool exited = false;
    int flush_requests = 0;
    Clock::time_point deadline{};
    // The worker's own (LogDrop): when it last logged a drop, and items dropped since.
    Clock::time_point last_drop_log{};
    std::uint64_t unlogged_drops = 0;
  };

  // At most one line every 10 s: a destination that fails at once (a store on a full disk)
  // fails every batch, and a line each would flood the log. The counter has every item.
  static void LogDrop(Lane& lane, std::size_t items, int attempts, const std::string& message) {
    const auto now = Clock::now();
    if (lane.last_drop_log != Clock::time_point{} &&
        now - lane.last_drop_log < std::chrono::seconds(10)) {
      lane.unlogged_drops += items;
      return;
    }
    spdlog::warn(
        "exporter {} ({}): dropping {} items after {} attempt(s){}: {}", lane.exporter->Name(),
        SignalTraits<Request>::kName, items, attempts,
        lane.unlogged_drops > 0
            ? fmt::format(" ({} more dropped since the last such line)", lane.unlogged_drops)
            : std::string(),
        message);
    lane.last_drop_log = now;
    lane.unlogged_drops = 0;
  }

  static void PublishDepth(Lane& lane) {
    lane.stats->queue_items.store(lane.q_items, std::memory_order_relaxed);
    lane.stats->queue_bytes.store(lane.q_bytes, std::memory_order_relaxed);
    lane.reserved_items.store(lane.r_items, std::memory_order_relaxed);
    lane.reserved_bytes.store(lane.r_bytes, std::memory_order_relaxed);
  }

  // Takes up to the lane's batch_items from the front of the queue, splitting the last
  // request when it holds more. Called with lane.mu held; the requests are only moved here
  // and merged by the caller after unlocking, so that Submit never waits for a merge.
  std::size_t TakeBatch(Lane& lane, std::vector<Held<Request>>* parts) {
    std::size_t taken = 0;
    while (!lane.queue.empty() && taken < lane.batch_items) {
      Entry& front = lane.queue.front();
      const std::size_t room = lane.batch_items - taken;
      if (front.items <= room) {
        taken += front.items;
        lane.q_items -= front.items;
        lane.q_bytes -= front.bytes;
        parts->push_back(std::move(front.request));
        lane.queue.pop_front();
      } else {
        // The remainder's size is estimated in proportion to its items: the byte bound is a
        // memory bound, and sizing the remainder exactly would walk it under the lock.
        std::size_t moved = 0;
        parts->push_back(TakeItems(&front.request, room, &moved));
        const std::size_t new_bytes = front.bytes * (front.items - moved) / front.items;
        lane.q_bytes -= front.bytes - new_bytes;
        front.bytes = new_bytes;
        front.items -= moved;
        lane.q_items -= moved;
        taken += moved;
      }
    }
    PublishDepth(lane);
    return taken;
  }

  void Run(Lane& lane) {
    std::minstd_rand rng(std::random_device{}());
    std::unique_lock lock(lane.mu);
    for (;;) {
      // Wait until a full batch, the oldest item's delay, a flush, or stop.
      for (;;) {
        if (lane.stopping || lane.flush_requests > 0) break;
        if (lane.q_items >= lane.batch_items) break;
        if (lane.queue.empty()) {
          lane.cv.wait(lock);
          continue;
        }
        auto due = lane.queue.front().enqueued + options_.max_delay;
        if (Clock::now() >= due) break;
        lane.cv.wait_until(lock, due);
      }
      if (lane.queue.empty()) {
        lane.idle_cv.notify_all();
        if (lane.stopping) break;
        if (lane.flush_requests > 0) lane.cv.wait(lock);  // until Flush() collects it
        continue;
      }
      if (lane.stopping && Clock::now() >= lane.deadline) break;
      std::vector<Held<Request>> parts;
      const std::size_t items = TakeBatch(lane, &parts);
      lane.in_flight = true;
      lock.unlock();
      room_.Ring();
      Held<Request> batch;
      if (lane.paced) lane.pacer.Start();
      {
        HeldMerger<Request> merger;
        for (const auto& p : parts) {
          merger.Add(p);
          if (lane.paced) lane.pacer.Between();
        }
        batch = std::move(merger).Finish();
      }
      parts.clear();
      ExportWithRetry(lane, *batch.request, items, rng);
      // The parts' arenas go here, on this lane's thread; a paced lane frees them in steps.
      if (lane.paced) {
        lane.pacer.Start();
        while (batch.memory->ReleaseKept(kFreedBetweenPauses) > 0) lane.pacer.Between();
      }
      batch = {};
      lock.lock();
      lane.in_flight = false;
      if (lane.queue.empty()) lane.idle_cv.notify_all();
    }
    // Whatever is left after the shutdown deadline is lost.
    for (const auto& e : lane.queue)
      lane.stats->dropped_export_failed.fetch_add(e.items, std::memory_order_relaxed);
    lane.queue.clear();
    lane.q_items = lane.q_bytes = 0;
    PublishDepth(lane);
    lane.exited = true;
    lane.idle_cv.notify_all();
  }

  void ExportWithRetry(Lane& lane, const Request& batch, std::size_t items, std::minstd_rand& rng) {
    const auto start = Clock::now();
    const RetryPolicy& rp = options_.retry;
    double backoff_ms = static_cast<double>(rp.initial_backoff.count());
    for (int attempt = 1;; ++attempt) {
      ExportResult r = lane.exporter->Export(batch);
      if (r.ok()) {
        lane.stats->consecutive_failures.store(0, std::memory_order_relaxed);
        const auto rejected = static_cast<std::uint64_t>(std::max<std::int64_t>(r.rejected, 0));
        const auto accepted = items > rejected ? items - rejected : 0;
        lane.stats->sent.fetch_add(accepted, std::memory_order_relaxed);
        lane.stats->rejected.fetch_add(items - accepted, std::memory_order_relaxed);
        if (rejected > 0)
          spdlog::warn("exporter {} ({}): backend rejected {} items: {}", lane.exporter->Name(),
                       SignalTraits<Request>::kName, rejected, r.message);
        return;
      }
      lane.stats->failures.fetch_add(1, std::memory_order_relaxed);
      if (lane.stats->consecutive_failures.fetch_add(1, std::memory_order_relaxed) == 0)
        spdlog::warn("exporter {} ({}): failing: {}", lane.exporter->Name(),
                     SignalTraits<Request>::kName, r.message);
      lane.stats->SetLastError(r.message);
      bool give_up = r.code == ExportCode::kPermanent || attempt >= rp.max_attempts;
      // Jitter in [50%, 100%] of the backoff, so lanes retrying together spread out.
      std::uniform_real_distribution<double> jitter(0.5, 1.0);
      double wait_ms =
          std::min(backoff_ms, static_cast<double>(rp.max_backoff.count())) * jitter(rng);
      if (r.retry_after_ms > 0)
        wait_ms = std::min<double>(static_cast<double>(r.retry_after_ms),
                                   static_cast<double>(rp.max_backoff.count()));
      const auto wake =
          Clock::now() + std::chrono::microseconds(static_cast<std::int64_t>(wait_ms * 1000));
      if (!give_up && wake - start > rp.max_elapsed) give_up = true;
      if (!give_up) {
        std::unique_lock lock(lane.mu);
        if (lane.stopping && wake > lane.deadline) give_up = true;
      }
      if (give_up) {
        lane.stats->dropped_export_failed.fetch_add(items, std::memory_order_relaxed);
        LogDrop(lane, items, attempt, r.message);
        return;
      }
      lane.stats->retries.fetch_add(1, std::memory_order_relaxed);
      {
        std::unique_lock lock(lane.mu);
        // A shutdown wakes the wait; the deadline check above then decides.
        lane.cv.wait_until(lock, wake,
                           [&] { return lane.stopping && Clock::now() >= lane.deadline; });
      }
      backoff_ms *= rp.multiplier;
    }
  }

  BatchOptions options_;
  RoomBell room_;  // before the lanes: their threads ring it until they are joined
  std::vector<std::unique_ptr<Lane>> lanes_;
};

using TraceBatchProcessor = BatchProcessor<TracesRequest>;
using LogBatchProcessor = BatchProcessor<LogsRequest>;
using MetricBatchProcessor = BatchProcessor<MetricsRequest>;

}  // namespace infertel::pipeline
