#pragma once
// The debug exporter: writes telemetry to a stream (stdout by default), one line per span,
// log record or metric data point, or with `json` the whole request as one OTLP/JSON line.
// Lines are written with one fwrite per export, so lines of concurrent exporters don't mix.

#include <cstdio>
#include <memory>

#include "pipeline/exporter.h"

namespace infertel::exporting {

struct DebugOptions {
  std::FILE* out = stdout;  // not owned
  bool json = false;
};

// Line formats:
//   span trace=<hex> span=<hex> parent=<hex|-> name="<name>" kind=<n> dur_ms=<x.xxx>
//        status=<n> service=<name> attrs=<json object>
//   log time=<ns> severity=<n> trace=<hex|-> span=<hex|-> body=<json> attrs=<json object>
//   metric name=<name> type=<gauge|sum|histogram|...> labels=<json> value=<v> time=<ns>
std::unique_ptr<pipeline::TraceExporter> MakeDebugTraceExporter(const DebugOptions& options = {});
std::unique_ptr<pipeline::LogExporter> MakeDebugLogExporter(const DebugOptions& options = {});
std::unique_ptr<pipeline::MetricExporter> MakeDebugMetricExporter(const DebugOptions& options = {});

// The text the exporter writes for one request (for tests and the demo).
std::string FormatDebug(const TracesRequest& request);
std::string FormatDebug(const LogsRequest& request);
std::string FormatDebug(const MetricsRequest& request);

}  // namespace infertel::exporting
