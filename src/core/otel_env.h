#pragma once
// The OpenTelemetry SDK's standard environment variables that infertel reads for itself
// (core/resource.cc, export/factory.cc) or sets for an engine it launches
// (launch/engine_command.cc): one table, so the agent and the engine it starts name each one
// alike. Names per the OpenTelemetry specification ("SDK Environment Variables", "OTLP
// Exporter", "Batch Span Processor"). Each is a whole literal, so `.data()` is a C string for
// getenv.

#include <string_view>

namespace infertel::otel_env {

inline constexpr std::string_view kServiceName = "OTEL_SERVICE_NAME";
inline constexpr std::string_view kResourceAttributes = "OTEL_RESOURCE_ATTRIBUTES";
inline constexpr std::string_view kSpanEventCountLimit = "OTEL_SPAN_EVENT_COUNT_LIMIT";

// Span and attribute limits ("Span Limits", "Attribute Limits"): the receiver applies them to
// what it ingests (receiver/span_limits.h). A model-specific one wins over the general one.
inline constexpr std::string_view kAttributeCountLimit = "OTEL_ATTRIBUTE_COUNT_LIMIT";
inline constexpr std::string_view kAttributeValueLengthLimit = "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT";
inline constexpr std::string_view kSpanAttributeCountLimit = "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT";
inline constexpr std::string_view kSpanAttributeValueLengthLimit =
    "OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT";
inline constexpr std::string_view kSpanLinkCountLimit = "OTEL_SPAN_LINK_COUNT_LIMIT";
inline constexpr std::string_view kEventAttributeCountLimit = "OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT";
inline constexpr std::string_view kLinkAttributeCountLimit = "OTEL_LINK_ATTRIBUTE_COUNT_LIMIT";
// Log record limits ("LogRecord Limits"), applied by the receiver to received log records.
inline constexpr std::string_view kLogRecordAttributeCountLimit =
    "OTEL_LOGRECORD_ATTRIBUTE_COUNT_LIMIT";
inline constexpr std::string_view kLogRecordAttributeValueLengthLimit =
    "OTEL_LOGRECORD_ATTRIBUTE_VALUE_LENGTH_LIMIT";
inline constexpr std::string_view kMetricExportInterval = "OTEL_METRIC_EXPORT_INTERVAL";

// OTLP exporter options: the prefix, then an optional signal ("TRACES_", "LOGS_",
// "METRICS_"), then the option.
inline constexpr std::string_view kOtlpPrefix = "OTEL_EXPORTER_OTLP_";
inline constexpr std::string_view kOtlpEndpoint = "ENDPOINT";
inline constexpr std::string_view kOtlpProtocol = "PROTOCOL";
inline constexpr std::string_view kOtlpHeaders = "HEADERS";
inline constexpr std::string_view kOtlpTimeout = "TIMEOUT";
inline constexpr std::string_view kOtlpCompression = "COMPRESSION";
// The one spelled out whole: which protocol an engine's trace exporter speaks.
inline constexpr std::string_view kOtlpTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL";

inline constexpr std::string_view kBspScheduleDelay = "OTEL_BSP_SCHEDULE_DELAY";
inline constexpr std::string_view kBspMaxQueueSize = "OTEL_BSP_MAX_QUEUE_SIZE";
inline constexpr std::string_view kBspMaxExportBatchSize = "OTEL_BSP_MAX_EXPORT_BATCH_SIZE";

}  // namespace infertel::otel_env
