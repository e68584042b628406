#pragma once
// The pipeline contract. A producer hands a request to a Sink by move and never waits; an
// Exporter sends one request and says whether a failure is worth retrying. Both are
// templates over the OTLP request type, so traces, logs and metrics share one machinery.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/telemetry.h"
#include "pipeline/held.h"
#include "pipeline/pacer.h"
#include "pipeline/room_bell.h"

namespace infertel::pipeline {

enum class ExportCode { kOk, kRetryable, kPermanent };

struct ExportResult {
  ExportCode code = ExportCode::kOk;
  std::string message;  // empty on success
  // How many items the backend rejected in a partial success (OTLP partial_success).
  std::int64_t rejected = 0;
  // For kRetryable: the delay the backend asked for (HTTP Retry-After, gRPC RetryInfo), in
  // milliseconds; 0 when it gave none and the processor's own backoff applies.
  std::int64_t retry_after_ms = 0;

  static ExportResult Ok() { return {}; }
  static ExportResult Retryable(std::string m) { return {ExportCode::kRetryable, std::move(m), 0}; }
  static ExportResult Permanent(std::string m) { return {ExportCode::kPermanent, std::move(m), 0}; }
  bool ok() const { return code == ExportCode::kOk; }
};

// Sends requests to one backend. Called from one exporter thread at a time; may block for
// at most its own timeout; never throws. The batch processor sized every item of the request
// (ByteSizeLong) after its last change, so an exporter may encode with pipeline::Encode.
template <typename Request>
class Exporter {
 public:
  virtual ~Exporter() = default;
  virtual std::string_view Name() const noexcept = 0;
  virtual ExportResult Export(const Request& request) noexcept = 0;
  // Flushes and releases resources; no Export() follows.
  virtual void Shutdown() noexcept {}
  // Called once by the lane before its first Export(), with a pacer watching the lane's queue.
  // An exporter whose Export() is long stretches of its own CPU (the store) calls it between
  // items and returns true: the lane then paces its own work on each batch too (merging its
  // parts, freeing them). One that mostly waits on the network ignores it and returns false.
  virtual bool UsePacer(Pacer /*pacer*/) noexcept { return false; }
  // Items per export for this exporter's lane, given the configured batch size
  // (OTEL_BSP_MAX_EXPORT_BATCH_SIZE). That size bounds a network request; an exporter whose
  // cost per item falls with the batch (the store: one SQLite transaction per export) may ask
  // for more. The lane grants at most a quarter of its queue, and never less than configured.
  // Only a full batch is larger: below it the schedule delay still cuts each export.
  virtual std::size_t BatchItems(std::size_t configured) const noexcept { return configured; }
};

// Room promised by a sink (Sink::Reserve) to a request about to be submitted with
// SubmitReserved: so many items and bytes, in the lanes whose bit is set in `lanes` (the sink's
// own bookkeeping). A reservation must end in exactly one SubmitReserved or Cancel.
struct Reservation {
  std::size_t items = 0;
  std::size_t bytes = 0;
  std::uint64_t lanes = 0;
};

// Accepts requests from any thread without blocking. Two ways in:
//  - Submit/SubmitHeld, for producers that cannot be told to retry (the gateway's entry spans,
//    content events, the agent's metrics): when full, the oldest such telemetry is shed, or
//    the new one, counted; never telemetry that was admitted.
//  - Offer, or Reserve then SubmitReserved, for senders that can be told to retry (the OTLP
//    receiver): all or nothing. What is taken is never shed to make room: it reaches every
//    destination, or is counted as lost there with a reason (export failed, shutdown, a
//    destination that is failing).
template <typename Request>
class Sink {
 public:
  virtual ~Sink() = default;
  virtual void Submit(Request&& request) noexcept = 0;
  // Reserves room for `items` items of about `bytes` bytes in every destination that is
  // keeping up; nullopt when one of them has no room (nothing reserved then). `divisible`: the
  // caller can ask again for less (the assembler's releases), so a request larger than the
  // room is never granted; otherwise (a received request) it is, once the room is half free,
  // so that it is not refused for ever. The default keeps nothing: room is what Saturated says.
  virtual std::optional<Reservation> Reserve(std::size_t items, std::size_t bytes,
                                             bool /*divisible*/ = false) noexcept {
    if (Saturated(items)) return std::nullopt;
    return Reservation{items, bytes, 0};
  }
  // Gives back a reservation that will not be used.
  virtual void Cancel(const Reservation& /*reservation*/) noexcept {}
  // Submits a request whose room was reserved (it may hold fewer items than reserved, or
  // somewhat more bytes: the reservation is given back whole and the request counted as it is).
  virtual void SubmitReserved(Held<Request>&& request, const Reservation& reservation) noexcept {
    Cancel(reservation);
    SubmitHeld(std::move(request));
  }
  // Takes the request if there is room for all of it now (Reserve + SubmitReserved); false, and
  // nothing of it taken, otherwise: the caller answers "retry later". `request` is consumed
  // either way.
  virtual bool Offer(Held<Request>&& request) noexcept {
    Held<Request> taken = std::move(request);
    auto r = Reserve(CountItems(*taken.request), taken.request->ByteSizeLong());
    if (!r) return false;
    SubmitReserved(std::move(taken), *r);
    return true;
  }
  // A request on an arena (pipeline/held.h). Stages that pass requests on override this to do
  // so without copying; the default hands on a heap copy.
  virtual void SubmitHeld(Held<Request>&& request) noexcept {
    Held<Request> taken = std::move(request);
    Submit(CopyOut(taken));
  }
  // True while a request submitted now would only push queued telemetry out: the OTLP
  // receiver then answers "retry later" before decoding, so an engine's exporter keeps its
  // spans and retries, instead of the agent doing the work of accepting what it will drop.
  // `coming`: items a stage in front of this sink holds and will submit (spans waiting in
  // the assembler).
  virtual bool Saturated(std::size_t /*coming*/ = 0) const noexcept { return false; }
  // Rung when Saturated() may have turned false (pipeline/room_bell.h); null when this sink
  // cannot say, and a waiter must look again on its own.
  virtual RoomBell* Room() noexcept { return nullptr; }
};

using TraceExporter = Exporter<TracesRequest>;
using LogExporter = Exporter<LogsRequest>;
using MetricExporter = Exporter<MetricsRequest>;
using TraceSink = Sink<TracesRequest>;
using LogSink = Sink<LogsRequest>;
using MetricSink = Sink<MetricsRequest>;

// Classifies transport outcomes once, for every exporter (style rule 6):
// gRPC UNAVAILABLE, RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED, ABORTED and HTTP 429/502/503/504
// (and connection failures) are retryable; everything else is permanent.
bool IsRetryableHttpStatus(int status);
bool IsRetryableGrpcCode(int code);

}  // namespace infertel::pipeline
