#include "receiver/ingest.h"

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/wire_format_lite.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <type_traits>

#include "core/semconv.h"
#include "core/static_key.h"
#include "otlp/json_util.h"
#include "otlp/partial_success.h"

namespace infertel::receiver {
namespace {

using google::protobuf::RepeatedPtrField;

bool AllZero(const std::string& bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](char c) { return c == 0; });
}

// Removes the elements for which `why` returns a non-empty reason, keeping order.
template <typename T, typename Why>
int RemoveIf(RepeatedPtrField<T>* field, Why why, std::string* first_error) {
  int keep = 0;
  for (int i = 0; i < field->size(); ++i) {
    std::string reason = why(field->Get(i));
    if (reason.empty()) {
      if (keep != i) field->SwapElements(keep, i);
      ++keep;
    } else if (first_error->empty()) {
      *first_error = std::move(reason);
    }
  }
  const int removed = field->size() - keep;
  if (removed > 0) field->DeleteSubrange(keep, removed);
  return removed;
}

std::string IdProblem(std::string_view what, const std::string& id, std::size_t want, bool optional,
                      bool zero_ok) {
  if (id.empty()) {
    if (optional) return {};
    return fmt::format("{} is empty (missing), want {} bytes", what, want);
  }
  if (id.size() != want) return fmt::format("{} has {} bytes, want {}", what, id.size(), want);
  if (!zero_ok && AllZero(id)) return fmt::format("{} is all zero", what);
  return {};
}

// Nanosecond times at or past 2^63 (the year 2262) read as before 1970 once signed.
constexpr std::uint64_t kMaxTime = std::uint64_t{std::numeric_limits<std::int64_t>::max()};

std::string SpanProblem(const Span& s) {
  std::string p = IdProblem("trace_id", s.trace_id(), 16, false, false);
  if (p.empty()) p = IdProblem("span_id", s.span_id(), 8, false, false);
  if (p.empty()) p = IdProblem("parent_span_id", s.parent_span_id(), 8, true, true);
  if (p.empty() && s.start_time_unix_nano() > kMaxTime)
    p = fmt::format("start_time_unix_nano {} is not below 2^63", s.start_time_unix_nano());
  if (p.empty()) return p;
  return fmt::format("span '{}': {}", s.name(), p);
}

std::string LogProblem(const otlp_logs::LogRecord& r) {
  std::string p = IdProblem("trace_id", r.trace_id(), 16, true, true);
  if (p.empty()) p = IdProblem("span_id", r.span_id(), 8, true, true);
  if (p.empty()) return p;
  return fmt::format("log record: {}", p);
}

std::string_view ItemNoun(Signal s) {
  switch (s) {
    case Signal::kTraces:
      return "spans";
    case Signal::kLogs:
      return "log records";
    case Signal::kMetrics:
      return "metrics";
  }
  return "items";
}

std::string_view RejectedField(Signal s) {
  switch (s) {
    case Signal::kTraces:
      return "rejectedSpans";
    case Signal::kLogs:
      return "rejectedLogRecords";
    case Signal::kMetrics:
      return "rejectedDataPoints";
  }
  return "rejected";
}

// NormalizeSpans on one span: the reasons it was set right for, as bits.
unsigned NormalizeSpan(Span* s) {
  auto bit = [](NormalizeReason r) { return 1u << static_cast<int>(r); };
  unsigned why = 0;
  const std::uint64_t start = s->start_time_unix_nano();
  if (start > kMaxTime) return 0;  // refused (RemoveInvalid)
  if (s->end_time_unix_nano() > kMaxTime) {
    s->set_end_time_unix_nano(start);
    why |= bit(NormalizeReason::kEndTime);
  } else if (s->end_time_unix_nano() < start) {
    s->set_end_time_unix_nano(start);
    why |= bit(NormalizeReason::kEndBeforeStart);
  }
  for (auto& ev : *s->mutable_events()) {
    if (ev.time_unix_nano() <= kMaxTime) continue;
    ev.set_time_unix_nano(start);
    why |= bit(NormalizeReason::kEventTime);
  }
  if (!Span::SpanKind_IsValid(s->kind())) {
    s->set_kind(Span::SPAN_KIND_UNSPECIFIED);
    why |= bit(NormalizeReason::kSpanKind);
  }
  if (s->has_status() && !otlp_trace::Status::StatusCode_IsValid(s->status().code())) {
    s->mutable_status()->set_code(otlp_trace::Status::STATUS_CODE_UNSET);
    why |= bit(NormalizeReason::kStatusCode);
  }
  return why;
}

// The infertel.normalized attribute: the reasons in `why`, comma-separated.
void MarkNormalized(Span* s, unsigned why) {
  std::string reasons;
  for (int r = 0; r < kNormalizeReasons; ++r) {
    if ((why & (1u << r)) == 0) continue;
    if (!reasons.empty()) reasons += ',';
    reasons += NormalizeReasonName(static_cast<NormalizeReason>(r));
  }
  AddAttr(s->mutable_attributes(), Key<semconv::kInfertelNormalized>(), std::string_view(reasons));
}

constexpr std::array<std::string_view, kLimitReasons> kLimitReasonNames = {
    "span_attributes", "span_events",         "span_links",     "event_attributes",
    "link_attributes", "resource_attributes", "value_length",   "log_attributes",
    "value_elements",  "value_depth",         "unknown_fields", "exemplar_attributes"};

}  // namespace

std::string_view NormalizeReasonName(NormalizeReason r) {
  switch (r) {
    case NormalizeReason::kEndTime:
      return "end_time";
    case NormalizeReason::kEndBeforeStart:
      return "end_before_start";
    case NormalizeReason::kEventTime:
      return "event_time";
    case NormalizeReason::kSpanKind:
      return "span_kind";
    case NormalizeReason::kStatusCode:
      return "status_code";
    case NormalizeReason::kCount:
      break;
  }
  return "unknown";
}

std::array<std::uint64_t, kLimitReasons> LimitReasonCounts(const LimitCounts& c) {
  return {c.span_attributes, c.span_events,         c.span_links,     c.event_attributes,
          c.link_attributes, c.resource_attributes, c.value_length,   c.log_attributes,
          c.value_elements,  c.value_depth,         c.unknown_fields, c.exemplar_attributes};
}

std::string_view LimitReasonName(int reason) { return kLimitReasonNames.at(reason); }

std::int64_t NormalizeSpans(TracesRequest* request, NormalizeCounts* counts) {
  std::int64_t spans = 0;
  for (auto& rs : *request->mutable_resource_spans()) {
    for (auto& ss : *rs.mutable_scope_spans()) {
      for (auto& s : *ss.mutable_spans()) {
        const unsigned why = NormalizeSpan(&s);
        if (why == 0) continue;
        ++spans;
        for (int r = 0; r < kNormalizeReasons; ++r)
          if (why & (1u << r)) ++(*counts)[r];
        MarkNormalized(&s, why);
      }
    }
  }
  return spans;
}

std::string_view TransportName(Transport t) { return t == Transport::kGrpc ? "grpc" : "http"; }

std::string_view SignalName(Signal s) {
  switch (s) {
    case Signal::kTraces:
      return "traces";
    case Signal::kLogs:
      return "logs";
    case Signal::kMetrics:
      return "metrics";
  }
  return "unknown";
}

void ReceiverStats::Register(StatsRegistry* r) const {
  using T = StatsRegistry::Type;
  for (Transport t : {Transport::kGrpc, Transport::kHttp}) {
    for (Signal s : {Signal::kTraces, Signal::kLogs, Signal::kMetrics}) {
      const ReceiverCounters& c = at(t, s);
      const std::string labels =
          fmt::format(R"(transport="{}",signal="{}")", TransportName(t), SignalName(s));
      r->Add("infertel_receiver_requests", "OTLP export requests received", T::kCounter, labels,
             &c.requests);
      r->Add("infertel_receiver_items", "Spans, log records or metrics accepted", T::kCounter,
             labels, &c.items);
      r->Add("infertel_receiver_refused_items", "Items refused as invalid (reported back)",
             T::kCounter, labels, &c.refused_items);
      r->Add("infertel_receiver_malformed_requests",
             "Requests refused whole: undecodable, too large or of an unsupported type",
             T::kCounter, labels, &c.malformed_requests);
      r->Add("infertel_receiver_dropped_items", "Accepted items with no pipeline for the signal",
             T::kCounter, labels, &c.dropped_items);
      r->Add("infertel_receiver_throttled_requests",
             "Requests answered 'retry later' because the export queues were full", T::kCounter,
             labels, &c.throttled_requests);
      r->Add("infertel_receiver_throttled_items",
             "Items of requests answered 'retry later' after decoding (no room for all of them)",
             T::kCounter, labels, &c.throttled_items);
      r->Add("infertel_receiver_waited_requests",
             "Requests that found the export queues full and waited for room (then taken, or "
             "answered 'retry later')",
             T::kCounter, labels, &c.waited_requests);
    }
  }
  for (int i = 0; i < kLimitReasons; ++i)
    r->Add("infertel_receiver_limited",
           "Items of received spans and log records dropped by the limits (attributes, events, "
           "links, elements of array and key-value list values, values nested too deep, fields "
           "OTLP does not define), or string values cut to the value length limit (value_length)",
           T::kCounter, fmt::format(R"(reason="{}")", LimitReasonName(i)), &limited[i]);
  for (int i = 0; i < kNormalizeReasons; ++i)
    r->Add("infertel_receiver_normalized",
           "Received spans whose times, kind or status were set right, by reason", T::kCounter,
           fmt::format(R"(reason="{}")", NormalizeReasonName(static_cast<NormalizeReason>(i))),
           &normalized[i]);
  http_framing.Register(r, "infertel_receiver_http_refused_requests",
                        "OTLP/HTTP requests refused for their framing (RFC 9112), by reason");
  http_connections.Register(r, "infertel_receiver_http_refused_connections",
                            "infertel_receiver_http_open_connections");
}

std::int64_t RemoveInvalid(TracesRequest* request, std::string* first_error) {
  std::int64_t removed = 0;
  auto* resources = request->mutable_resource_spans();
  for (auto& rs : *resources) {
    auto* scopes = rs.mutable_scope_spans();
    int here = 0;
    for (auto& ss : *scopes) here += RemoveIf(ss.mutable_spans(), SpanProblem, first_error);
    removed += here;
    if (here > 0) {
      std::string unused;
      RemoveIf(
          scopes,
          [](const otlp_trace::ScopeSpans& ss) { return ss.spans_size() == 0 ? "empty" : ""; },
          &unused);
    }
  }
  if (removed > 0) {
    std::string unused;
    RemoveIf(
        resources,
        [](const otlp_trace::ResourceSpans& rs) { return rs.scope_spans_size() == 0 ? "e" : ""; },
        &unused);
  }
  return removed;
}

std::int64_t RemoveInvalid(LogsRequest* request, std::string* first_error) {
  std::int64_t removed = 0;
  auto* resources = request->mutable_resource_logs();
  for (auto& rl : *resources) {
    auto* scopes = rl.mutable_scope_logs();
    int here = 0;
    for (auto& sl : *scopes) here += RemoveIf(sl.mutable_log_records(), LogProblem, first_error);
    removed += here;
    if (here > 0) {
      std::string unused;
      RemoveIf(
          scopes,
          [](const otlp_logs::ScopeLogs& sl) { return sl.log_records_size() == 0 ? "e" : ""; },
          &unused);
    }
  }
  if (removed > 0) {
    std::string unused;
    RemoveIf(
        resources,
        [](const otlp_logs::ResourceLogs& rl) { return rl.scope_logs_size() == 0 ? "e" : ""; },
        &unused);
  }
  return removed;
}

int CountPoints(const otlp_metrics::Metric& m) {
  if (m.has_gauge()) return m.gauge().data_points_size();
  if (m.has_sum()) return m.sum().data_points_size();
  if (m.has_histogram()) return m.histogram().data_points_size();
  if (m.has_exponential_histogram()) return m.exponential_histogram().data_points_size();
  if (m.has_summary()) return m.summary().data_points_size();
  return 0;
}

// A metric's data points past the limits (MetricPointProblem), whatever the metric's type.
int RemovePointsPastLimits(otlp_metrics::Metric* m, const SpanLimits& limits,
                           std::string* first_error) {
  const auto why = [&limits](const auto& point) {
    return MetricPointProblem(point.attributes(), limits);
  };
  if (m->has_gauge()) return RemoveIf(m->mutable_gauge()->mutable_data_points(), why, first_error);
  if (m->has_sum()) return RemoveIf(m->mutable_sum()->mutable_data_points(), why, first_error);
  if (m->has_histogram())
    return RemoveIf(m->mutable_histogram()->mutable_data_points(), why, first_error);
  if (m->has_exponential_histogram())
    return RemoveIf(m->mutable_exponential_histogram()->mutable_data_points(), why, first_error);
  if (m->has_summary())
    return RemoveIf(m->mutable_summary()->mutable_data_points(), why, first_error);
  return 0;
}

std::int64_t RemoveInvalid(MetricsRequest* request, std::string* first_error,
                           const SpanLimits& limits) {
  std::int64_t removed = 0;
  for (auto& rm : *request->mutable_resource_metrics()) {
    for (auto& sm : *rm.mutable_scope_metrics()) {
      int here = 0;
      for (auto& m : *sm.mutable_metrics()) here += RemovePointsPastLimits(&m, limits, first_error);
      removed += here;
      if (here == 0) continue;
      std::string unused;  // the metrics left without a point go too
      RemoveIf(
          sm.mutable_metrics(),
          [](const otlp_metrics::Metric& m) { return CountPoints(m) == 0 ? "empty" : ""; },
          &unused);
    }
  }
  return removed;
}

template <typename Request>
IngestResult Ingestor::AcceptImpl(Transport transport, Signal signal, pipeline::Sink<Request>* sink,
                                  pipeline::Held<Request>&& request) noexcept {
  ReceiverCounters& c = stats_->at(transport, signal);
  c.requests.fetch_add(1, std::memory_order_relaxed);
  IngestResult result;
  std::string first_error;
  if constexpr (std::is_same_v<Request, MetricsRequest>)
    result.rejected = RemoveInvalid(request.request, &first_error, limits_);
  else
    result.rejected = RemoveInvalid(request.request, &first_error);
  result.accepted = static_cast<std::int64_t>(CountItems(*request.request));
  if (result.rejected > 0) {
    c.refused_items.fetch_add(static_cast<std::uint64_t>(result.rejected),
                              std::memory_order_relaxed);
    result.error_message =
        fmt::format("{} of {} {} refused; first: {}", result.rejected,
                    result.rejected + result.accepted, ItemNoun(signal), first_error);
  }
  if (result.accepted == 0) return result;
  if (sink == nullptr) {
    c.items.fetch_add(static_cast<std::uint64_t>(result.accepted), std::memory_order_relaxed);
    c.dropped_items.fetch_add(static_cast<std::uint64_t>(result.accepted),
                              std::memory_order_relaxed);
    return result;
  }
  if (!sink->Offer(std::move(request))) {
    c.throttled_requests.fetch_add(1, std::memory_order_relaxed);
    c.throttled_items.fetch_add(static_cast<std::uint64_t>(result.accepted),
                                std::memory_order_relaxed);
    result.refused = true;
    result.accepted = 0;
    return result;
  }
  c.items.fetch_add(static_cast<std::uint64_t>(result.accepted), std::memory_order_relaxed);
  return result;
}

IngestResult Ingestor::Accept(Transport transport, pipeline::Held<TracesRequest>&& request,
                              const LimitCounts& decoded) noexcept {
  Sanitize(request.request, decoded);
  return AcceptImpl(transport, Signal::kTraces, sinks_.traces, std::move(request));
}

void Ingestor::Sanitize(TracesRequest* request, const LimitCounts& decoded) noexcept {
  LimitCounts limited = decoded;
  ApplySpanLimits(request, limits_, &limited);
  NormalizeCounts normalized{};
  NormalizeSpans(request, &normalized);
  CountSanitized(limited, normalized);
}

void Ingestor::CountSanitized(const LimitCounts& limited,
                              const NormalizeCounts& normalized) noexcept {
  const auto by_reason = LimitReasonCounts(limited);
  std::uint64_t limited_total = 0, normalized_total = 0;
  for (int i = 0; i < kLimitReasons; ++i) {
    if (by_reason[i] == 0) continue;
    stats_->limited[i].fetch_add(by_reason[i], std::memory_order_relaxed);
    limited_total += by_reason[i];
  }
  for (int i = 0; i < kNormalizeReasons; ++i) {
    if (normalized[i] == 0) continue;
    stats_->normalized[i].fetch_add(normalized[i], std::memory_order_relaxed);
    normalized_total += normalized[i];
  }
  if (limited_total == 0 && normalized_total == 0) return;
  const std::int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::steady_clock::now().time_since_epoch())
                               .count();
  std::int64_t last = last_log_ns_.load(std::memory_order_relaxed);
  if (last != 0 && now - last < std::chrono::nanoseconds(std::chrono::minutes(1)).count()) return;
  if (!last_log_ns_.compare_exchange_strong(last, now, std::memory_order_relaxed)) return;
  spdlog::warn(
      "receiver: a request had {} items dropped or cut by the span and log record limits and {} "
      "span fields set right (logged at most once a minute; see infertel_receiver_limited_total "
      "and infertel_receiver_normalized_total)",
      limited_total, normalized_total);
}
IngestResult Ingestor::Accept(Transport transport, pipeline::Held<LogsRequest>&& request,
                              const LimitCounts& decoded) noexcept {
  LimitCounts limited = decoded;
  ApplyLogLimits(request.request, limits_, &limited);
  CountSanitized(limited, NormalizeCounts{});
  return AcceptImpl(transport, Signal::kLogs, sinks_.logs, std::move(request));
}
IngestResult Ingestor::Accept(Transport transport, pipeline::Held<MetricsRequest>&& request,
                              const LimitCounts& decoded) noexcept {
  LimitCounts limited = decoded;
  ApplyMetricLimits(request.request, limits_, &limited);
  CountSanitized(limited, NormalizeCounts{});
  return AcceptImpl(transport, Signal::kMetrics, sinks_.metrics, std::move(request));
}

bool Ingestor::Saturated(Signal signal) const noexcept {
  switch (signal) {
    case Signal::kTraces:
      return sinks_.traces != nullptr && sinks_.traces->Saturated();
    case Signal::kLogs:
      return sinks_.logs != nullptr && sinks_.logs->Saturated();
    case Signal::kMetrics:
      return sinks_.metrics != nullptr && sinks_.metrics->Saturated();
  }
  return false;
}

pipeline::RoomBell* Ingestor::Room(Signal signal) const noexcept {
  switch (signal) {
    case Signal::kTraces:
      return sinks_.traces != nullptr ? sinks_.traces->Room() : nullptr;
    case Signal::kLogs:
      return sinks_.logs != nullptr ? sinks_.logs->Room() : nullptr;
    case Signal::kMetrics:
      return sinks_.metrics != nullptr ? sinks_.metrics->Room() : nullptr;
  }
  return nullptr;
}

bool Ingestor::Throttle(Transport transport, Signal signal) noexcept {
  if (!Saturated(signal)) return false;
  ReceiverCounters& c = stats_->at(transport, signal);
  c.requests.fetch_add(1, std::memory_order_relaxed);
  c.throttled_requests.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void Ingestor::CountWaiting(Transport transport, Signal signal) noexcept {
  stats_->at(transport, signal).waited_requests.fetch_add(1, std::memory_order_relaxed);
}

void Ingestor::CountMalformed(Transport transport, Signal signal) noexcept {
  ReceiverCounters& c = stats_->at(transport, signal);
  c.requests.fetch_add(1, std::memory_order_relaxed);
  c.malformed_requests.fetch_add(1, std::memory_order_relaxed);
}

std::string ResponseProto(const IngestResult& result) {
  if (result.rejected == 0) return {};
  return otlp::EncodePartialSuccessProto({result.rejected, result.error_message});
}

std::string ResponseJson(Signal signal, const IngestResult& result) {
  if (result.rejected == 0) return "{}";
  std::string out = fmt::format(R"({{"partialSuccess":{{"{}":"{}","errorMessage":)",
                                RejectedField(signal), result.rejected);
  otlp_json::AppendString(&out, result.error_message);
  out += "}}";
  return out;
}

std::string StatusProto(int code, std::string_view message) {
  using google::protobuf::internal::WireFormatLite;
  std::string out;
  google::protobuf::io::StringOutputStream zs(&out);
  {
    google::protobuf::io::CodedOutputStream cos(&zs);
    if (code != 0) WireFormatLite::WriteInt32(1, code, &cos);
    if (!message.empty()) WireFormatLite::WriteString(2, std::string(message), &cos);
  }
  return out;
}

std::string StatusJson(int code, std::string_view message) {
  std::string out = fmt::format(R"({{"code":{},"message":)", code);
  otlp_json::AppendString(&out, message);
  out += "}";
  return out;
}

}  // namespace infertel::receiver
