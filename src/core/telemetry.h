#pragma once
// The telemetry data model: OTLP protobuf messages held directly, as the OpenTelemetry
// Collector's pdata does, so spans received from an engine flow to export without copies.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "opentelemetry/proto/collector/logs/v1/logs_service.pb.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.pb.h"
#include "opentelemetry/proto/common/v1/common.pb.h"
#include "opentelemetry/proto/logs/v1/logs.pb.h"
#include "opentelemetry/proto/metrics/v1/metrics.pb.h"
#include "opentelemetry/proto/resource/v1/resource.pb.h"
#include "opentelemetry/proto/trace/v1/trace.pb.h"

namespace infertel {

namespace otlp_common = opentelemetry::proto::common::v1;
namespace otlp_resource = opentelemetry::proto::resource::v1;
namespace otlp_trace = opentelemetry::proto::trace::v1;
namespace otlp_logs = opentelemetry::proto::logs::v1;
namespace otlp_metrics = opentelemetry::proto::metrics::v1;
namespace otlp_collector_trace = opentelemetry::proto::collector::trace::v1;
namespace otlp_collector_logs = opentelemetry::proto::collector::logs::v1;
namespace otlp_collector_metrics = opentelemetry::proto::collector::metrics::v1;

using Span = otlp_trace::Span;
using KeyValue = otlp_common::KeyValue;
using AnyValue = otlp_common::AnyValue;
using Resource = otlp_resource::Resource;
using TracesRequest = otlp_collector_trace::ExportTraceServiceRequest;
using LogsRequest = otlp_collector_logs::ExportLogsServiceRequest;
using MetricsRequest = otlp_collector_metrics::ExportMetricsServiceRequest;

// Counts the spans of a request (over every resource and scope).
inline std::size_t CountSpans(const TracesRequest& req) {
  std::size_t n = 0;
  for (const auto& rs : req.resource_spans())
    for (const auto& ss : rs.scope_spans()) n += static_cast<std::size_t>(ss.spans_size());
  return n;
}
inline std::size_t CountItems(const TracesRequest& req) { return CountSpans(req); }
inline std::size_t CountItems(const LogsRequest& req) {
  std::size_t n = 0;
  for (const auto& rl : req.resource_logs())
    for (const auto& sl : rl.scope_logs()) n += static_cast<std::size_t>(sl.log_records_size());
  return n;
}
inline std::size_t CountItems(const MetricsRequest& req) {
  std::size_t n = 0;
  for (const auto& rm : req.resource_metrics())
    for (const auto& sm : rm.scope_metrics()) n += static_cast<std::size_t>(sm.metrics_size());
  return n;
}

// Attribute helpers: append one key/value to a repeated KeyValue field.
//
// Strings are handed to protobuf as a std::string it can take: given characters and a length,
// protobuf 3.21 makes a temporary std::string of them and then copies that, two allocations
// for any string longer than the 15 characters a std::string holds inline.
//
// The key is anything AddKey takes: text here, or a key of the model that the KeyValue points
// at instead of copying (core/static_key.h, found by argument-dependent lookup).
template <typename Repeated>
inline KeyValue* AddKey(Repeated* attrs, std::string_view key) {
  auto* kv = attrs->Add();
  kv->set_key(std::string(key));
  return kv;
}
template <typename Repeated, typename K>
inline void AddAttr(Repeated* attrs, const K& key, std::string_view value) {
  AddKey(attrs, key)->mutable_value()->set_string_value(std::string(value));
}
template <typename Repeated, typename K>
inline void AddAttr(Repeated* attrs, const K& key, const char* value) {
  AddAttr(attrs, key, std::string_view(value));
}
template <typename Repeated, typename K>
inline void AddAttr(Repeated* attrs, const K& key, std::int64_t value) {
  AddKey(attrs, key)->mutable_value()->set_int_value(value);
}
template <typename Repeated, typename K>
inline void AddAttr(Repeated* attrs, const K& key, int value) {
  AddAttr(attrs, key, static_cast<std::int64_t>(value));
}
template <typename Repeated, typename K>
inline void AddAttr(Repeated* attrs, const K& key, double value) {
  AddKey(attrs, key)->mutable_value()->set_double_value(value);
}
template <typename Repeated, typename K>
inline void AddAttr(Repeated* attrs, const K& key, bool value) {
  AddKey(attrs, key)->mutable_value()->set_bool_value(value);
}

// Finds an attribute by key; nullptr when absent.
template <typename Repeated>
inline const AnyValue* FindAttr(const Repeated& attrs, std::string_view key) {
  for (const auto& kv : attrs)
    if (kv.key() == key) return &kv.value();
  return nullptr;
}

}  // namespace infertel
