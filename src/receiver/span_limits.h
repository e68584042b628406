#pragma once
// The OpenTelemetry SDK's span limits (specification "Span Limits" and "Attribute Limits"),
// applied by the receiver to what it ingests: an SDK bounds what its own application records,
// and the agent bounds what any sender gives it the same way, so that one span cannot carry a
// million attributes into the pipeline and the store.
//
// Items past a count limit are dropped (the first ones are kept, as an SDK keeps the first
// ones recorded) and added to the element's OTLP dropped_*_count, on top of what the sender
// had already dropped. A string longer than the value length limit is cut to that many
// characters. The limits are applied while decoding protobuf (receiver/trace_decoder.h), so
// that a dropped item never takes memory, and by ApplySpanLimits to requests decoded otherwise
// (OTLP/JSON, protobuf's own parser).

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/telemetry.h"

namespace infertel::receiver {

struct SpanLimits {
  // Per span: OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT, else OTEL_ATTRIBUTE_COUNT_LIMIT; the SDK's 128.
  std::uint32_t attribute_count = 128;
  std::uint32_t event_count = 128;            // OTEL_SPAN_EVENT_COUNT_LIMIT
  std::uint32_t link_count = 128;             // OTEL_SPAN_LINK_COUNT_LIMIT
  std::uint32_t event_attribute_count = 128;  // OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT, else general
  std::uint32_t link_attribute_count = 128;   // OTEL_LINK_ATTRIBUTE_COUNT_LIMIT, else general
  // A resource's attributes: OTEL_ATTRIBUTE_COUNT_LIMIT. The specification exempts the
  // resource an SDK makes itself; a received one is outside input like the rest.
  std::uint32_t resource_attribute_count = 128;
  // Characters of a string value, at any depth of an attribute's value:
  // OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT, else OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT. The SDK
  // sets none; 1 Mi characters keeps a whole prompt of 256k tokens (about 4 characters
  // each) when an engine records one as an attribute, and bounds the row a value makes.
  std::uint32_t attribute_value_length = 1u << 20;
  // Per log record (the specification's "LogRecord Limits"):
  // OTEL_LOGRECORD_ATTRIBUTE_COUNT_LIMIT, else OTEL_ATTRIBUTE_COUNT_LIMIT; and
  // OTEL_LOGRECORD_ATTRIBUTE_VALUE_LENGTH_LIMIT, else OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT.
  std::uint32_t log_attribute_count = 128;
  std::uint32_t log_attribute_value_length = 1u << 20;
  // Inside a value (an attribute's, a log record's body): the elements of one array or
  // key-value list, the first ones kept; and how deep arrays and key-value lists nest in one
  // another, a deeper one emptied. OpenTelemetry sets neither: each element costs about 50
  // bytes of memory for 2 to 4 bytes of protobuf, so 16 MiB of request could be 300 MB of
  // values. A GenAI message body nests about 6 deep (messages, tool calls, function).
  std::uint32_t value_element_count = 1024;
  std::uint32_t value_depth = 8;
  // A metric data point's attributes (OTEL_ATTRIBUTE_COUNT_LIMIT; OpenTelemetry leaves metrics
  // to views, but a received point is outside input). They name the point's series, so a
  // point past this or the value limits is refused whole (MetricPointProblem), not trimmed
  // into another series. An exemplar's filtered attributes are trimmed to it.
  std::uint32_t metric_attribute_count = 128;
};

// Reads the limits from the standard variables through `getenv` (returns null when unset). A
// model-specific variable wins over the general one, which wins over the default. A value
// that is not a whole number in [0, 2^32) is ignored with a line in *warnings.
SpanLimits SpanLimitsFromEnv(const std::function<const char*(const char*)>& getenv,
                             std::vector<std::string>* warnings);

// What the limits removed, by kind. value_length counts values cut, the others items dropped.
struct LimitCounts {
  std::uint64_t span_attributes = 0;
  std::uint64_t span_events = 0;
  std::uint64_t span_links = 0;
  std::uint64_t event_attributes = 0;
  std::uint64_t link_attributes = 0;
  std::uint64_t resource_attributes = 0;
  std::uint64_t value_length = 0;
  std::uint64_t log_attributes = 0;
  std::uint64_t value_elements = 0;       // elements of arrays and key-value lists dropped
  std::uint64_t value_depth = 0;          // arrays and key-value lists emptied for their depth
  std::uint64_t unknown_fields = 0;       // protobuf fields OTLP does not define, not kept
  std::uint64_t exemplar_attributes = 0;  // an exemplar's filtered attributes dropped
  LimitCounts& operator+=(const LimitCounts& o);
  std::uint64_t total() const;
};

// Applies `limits` to every resource, span, event and link of `request` in place; what it
// removes or cuts is added to *counts. Finds nothing to do in a request DecodeTraces decoded
// with the same limits. (Unknown fields are DropUnknownFields's.)
void ApplySpanLimits(TracesRequest* request, const SpanLimits& limits, LimitCounts* counts);

// The same for log records: their attributes (log_attribute_count, log_attribute_value_length),
// the elements and depth of their bodies' and attributes' values, and their resources'
// attributes. A body's strings are not cut: the specification limits attributes only, and the
// request's size bounds a body.
void ApplyLogLimits(LogsRequest* request, const SpanLimits& limits, LimitCounts* counts);

// Why a metric data point with these attributes is refused ("" when it is within `limits`):
// more than metric_attribute_count, or a value that the value limits (length, elements,
// depth) would change.
std::string MetricPointProblem(const google::protobuf::RepeatedPtrField<KeyValue>& attributes,
                               const SpanLimits& limits);

// Brings what a metrics request carries besides its points' attributes within `limits`: its
// resources' attributes (as spans' resources') and its exemplars' filtered attributes
// (exemplar_attributes, their values as a span's). Its points are MetricPointProblem's.
void ApplyMetricLimits(MetricsRequest* request, const SpanLimits& limits, LimitCounts* counts);

// Removes the fields that OTLP does not define (protobuf keeps them as unknown fields, and an
// exporter would send them on) from `message` and every message in it; returns how many. Walks
// by reflection: for requests protobuf's parser decoded, not for DecodeTraces's, which keeps
// none within limits.
std::uint64_t DropUnknownFields(google::protobuf::Message* message);

// The byte length of the first `max_chars` characters of the valid UTF-8 string `s` (all of
// it when it has no more).
std::size_t Utf8PrefixBytes(std::string_view s, std::size_t max_chars);

// `dropped` + `more`, at most UINT32_MAX (the OTLP fields are uint32).
std::uint32_t AddDropped(std::uint32_t dropped, std::uint64_t more);

}  // namespace infertel::receiver
