#pragma once
// The transport-independent half of the OTLP receiver: checks a decoded Export*ServiceRequest,
// removes the items OTLP calls invalid, hands the rest by move to the signal's sink, and counts
// everything in ReceiverStats. The gRPC and HTTP front ends only decode and answer.

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/stats.h"
#include "core/telemetry.h"
#include "http/connection_guard.h"
#include "http/framing.h"
#include "pipeline/exporter.h"
#include "receiver/span_limits.h"

namespace infertel::receiver {

enum class Transport { kGrpc = 0, kHttp = 1 };
enum class Signal { kTraces = 0, kLogs = 1, kMetrics = 2 };

std::string_view TransportName(Transport t);  // "grpc" | "http"
std::string_view SignalName(Signal s);        // "traces" | "logs" | "metrics"

// Counters for one transport and signal.
struct ReceiverCounters {
  std::atomic<std::uint64_t> requests{0};            // every request, malformed ones included
  std::atomic<std::uint64_t> items{0};               // spans/log records/metrics accepted
  std::atomic<std::uint64_t> refused_items{0};       // items removed as invalid
  std::atomic<std::uint64_t> malformed_requests{0};  // undecodable, too large, wrong type
  std::atomic<std::uint64_t> dropped_items{0};       // accepted, but no sink for the signal
  std::atomic<std::uint64_t> throttled_requests{0};  // answered "retry later": queue full
  std::atomic<std::uint64_t> throttled_items{0};     // items of those decoded before the refusal
  std::atomic<std::uint64_t> waited_requests{0};     // found the queue full, waited for room
};

// Why a received span's field was set right (NormalizeSpans); the `reason` label of
// infertel_receiver_normalized_total, named by NormalizeReasonName.
enum class NormalizeReason {
  kEndTime,         // end_time_unix_nano not below 2^63: set to the start
  kEndBeforeStart,  // end before start (or missing): set to the start
  kEventTime,       // an event's time not below 2^63: set to the span's start
  kSpanKind,        // kind outside the enum: SPAN_KIND_UNSPECIFIED
  kStatusCode,      // status code outside the enum: STATUS_CODE_UNSET
  kCount
};
inline constexpr int kNormalizeReasons = static_cast<int>(NormalizeReason::kCount);
std::string_view NormalizeReasonName(NormalizeReason r);
using NormalizeCounts = std::array<std::uint64_t, kNormalizeReasons>;

// What the span limits removed, by the `reason` label of infertel_receiver_limited_total.
inline constexpr int kLimitReasons = 12;
std::array<std::uint64_t, kLimitReasons> LimitReasonCounts(const LimitCounts& c);
std::string_view LimitReasonName(int reason);

// The receiver's self-metrics, registered as infertel_receiver_{requests,items,refused_items,
// malformed_requests,dropped_items,throttled_requests,waited_requests}_total{transport,signal},
// infertel_receiver_limited_total{reason} and infertel_receiver_normalized_total{reason}.
// Thread-safe (atomics).
struct ReceiverStats {
  std::array<std::array<ReceiverCounters, 3>, 2> cells;
  std::array<std::atomic<std::uint64_t>, kLimitReasons> limited{};
  std::array<std::atomic<std::uint64_t>, kNormalizeReasons> normalized{};
  // The OTLP/HTTP listener's refusals before a request reaches a signal:
  // infertel_receiver_http_refused_requests_total{reason} (framing, http/framing.h),
  // infertel_receiver_http_refused_connections_total{reason} and
  // infertel_receiver_http_open_connections (http/connection_guard.h).
  http::FramingStats http_framing;
  http::ConnectionStats http_connections;
  ReceiverCounters& at(Transport t, Signal s) {
    return cells[static_cast<int>(t)][static_cast<int>(s)];
  }
  const ReceiverCounters& at(Transport t, Signal s) const {
    return cells[static_cast<int>(t)][static_cast<int>(s)];
  }
  // `this` must outlive `registry`'s use of it.
  void Register(StatsRegistry* registry) const;
};

// Where accepted requests go. `traces` is required; a null `logs` or `metrics` sink means that
// signal is answered with success and its items are counted as dropped. Not owned.
struct ReceiverSinks {
  pipeline::TraceSink* traces = nullptr;
  pipeline::LogSink* logs = nullptr;
  pipeline::MetricSink* metrics = nullptr;
};

// The outcome of one decoded request.
struct IngestResult {
  std::int64_t accepted = 0;  // items passed on (or dropped for lack of a sink)
  std::int64_t rejected = 0;  // invalid items removed
  // Empty when nothing was rejected; otherwise how many and why the first one was refused.
  std::string error_message;
  // True when the pipeline had no room for the request (Sink::Offer): nothing of it was taken,
  // and the transport answers "retry later" (gRPC UNAVAILABLE with RetryInfo, HTTP 503 with
  // Retry-After), as it does when the sink was found saturated before decoding.
  bool refused = false;
  // True when the request held items and every one was invalid: the transport answers with
  // INVALID_ARGUMENT / 400 instead of a partial success.
  bool all_rejected() const { return !refused && rejected > 0 && accepted == 0; }
};

// Validity rules (OTLP trace.proto / logs.proto):
//  - span: trace_id 16 bytes not all zero, span_id 8 bytes not all zero, parent_span_id empty
//    or 8 bytes. An empty trace_id or span_id is invalid (OTLP/JSON senders that omit the
//    ids produce this).
//  - log record: trace_id empty or 16 bytes, span_id empty or 8 bytes.
//  - metric data point: its attributes within `limits` (MetricPointProblem: they name its
//    series, so a point past them is refused rather than trimmed into another series).
// Each function removes invalid items in place (and the scope/resource containers that become
// empty by it), keeping the order of the rest, and returns the number removed; `*first_error`
// gets the reason for the first one.
//  - span: start_time_unix_nano not below 2^63 (past the year 2262; as a signed nanosecond
//    count, which exporters and the store use, it reads as before 1970).
std::int64_t RemoveInvalid(TracesRequest* request, std::string* first_error);
std::int64_t RemoveInvalid(LogsRequest* request, std::string* first_error);
std::int64_t RemoveInvalid(MetricsRequest* request, std::string* first_error,
                           const SpanLimits& limits);

// Sets right, in place, what a valid span may still carry that would read wrong downstream
// (a duration or a date computed as a signed nanosecond count, an enum printed by name): see
// NormalizeReason. A span set right gets the attribute infertel.normalized naming the reasons,
// comma-separated. Adds to *counts; returns the number of spans set right.
std::int64_t NormalizeSpans(TracesRequest* request, NormalizeCounts* counts);

// Validates, forwards and counts. Thread-safe; never blocks (sinks never block); noexcept. A
// request is offered to its sink whole (Sink::Offer): taken, or refused for want of room.
class Ingestor {
 public:
  Ingestor(ReceiverSinks sinks, ReceiverStats* stats, SpanLimits limits = {})
      : sinks_(sinks), stats_(stats), limits_(limits) {}
  ReceiverStats* stats() const { return stats_; }

  // The limits a front end decodes requests within (DecodeProtobuf, otlp_json::Decode).
  const SpanLimits& span_limits() const { return limits_; }

  // A request decoded onto an arena (pipeline/held.h): passed on without copying. Trace
  // requests are brought within span_limits() (nothing to do when decoded within them) and
  // normalized (NormalizeSpans), log requests within them too (ApplyLogLimits); `decoded` is
  // what the decoder's limits dropped, counted here.
  IngestResult Accept(Transport transport, pipeline::Held<TracesRequest>&& request,
                      const LimitCounts& decoded = {}) noexcept;
  IngestResult Accept(Transport transport, pipeline::Held<LogsRequest>&& request,
                      const LimitCounts& decoded = {}) noexcept;
  IngestResult Accept(Transport transport, pipeline::Held<MetricsRequest>&& request,
                      const LimitCounts& decoded = {}) noexcept;
  // Counts one request that was refused before decoding (undecodable, too large, bad type).
  void CountMalformed(Transport transport, Signal signal) noexcept;
  // True, and the request counted as throttled, when the signal's sink is saturated (its
  // export queues are nearly full). Asked before decoding: the front end then answers gRPC
  // UNAVAILABLE / HTTP 503 with Retry-After, retryable in the OTLP specification, so the sender
  // keeps the data instead of the agent accepting it only to drop older queued data for it.
  bool Throttle(Transport transport, Signal signal) noexcept;
  // Whether the signal's sink is saturated now, counting nothing: the front ends ask it while a
  // request waits for room (OtlpReceiverOptions::saturated_wait) before Throttle decides.
  bool Saturated(Signal signal) const noexcept;
  // The signal's sink's RoomBell (rung when Saturated may have turned false); null when it has
  // none or there is no sink.
  pipeline::RoomBell* Room(Signal signal) const noexcept;
  // Counts one request that found its sink saturated and waits for room (it is then either
  // taken or throttled, and counted as such as well).
  void CountWaiting(Transport transport, Signal signal) noexcept;

 private:
  template <typename Request>
  IngestResult AcceptImpl(Transport transport, Signal signal, pipeline::Sink<Request>* sink,
                          pipeline::Held<Request>&& request) noexcept;

  // Applies the span limits and normalization, counts them, and logs at most once a minute.
  void Sanitize(TracesRequest* request, const LimitCounts& decoded) noexcept;
  // Counts what the limits removed and what was set right; logs at most once a minute.
  void CountSanitized(const LimitCounts& limited, const NormalizeCounts& normalized) noexcept;

  ReceiverSinks sinks_;
  ReceiverStats* stats_;
  SpanLimits limits_;
  std::atomic<std::int64_t> last_log_ns_{0};
};

// Response bodies. The compiled OTLP protos predate partial_success, so the protobuf form is
// written from the wire format (empty when nothing was rejected).
std::string ResponseProto(const IngestResult& result);
// OTLP/JSON: `{}`, or `{"partialSuccess":{"rejectedSpans":"N","errorMessage":".."}}` with the
// signal's rejected-count name (rejectedSpans, rejectedLogRecords, rejectedDataPoints).
std::string ResponseJson(Signal signal, const IngestResult& result);
// google.rpc.Status {code, message} for OTLP/HTTP error bodies: hand-encoded protobuf (the
// message is not compiled here) and its JSON form.
std::string StatusProto(int code, std::string_view message);
std::string StatusJson(int code, std::string_view message);

}  // namespace infertel::receiver
