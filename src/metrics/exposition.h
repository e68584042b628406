#pragma once
// The two ways the agent's metric series leave it: the Prometheus text exposition (admin
// /metrics) and an OTLP ExportMetricsServiceRequest (cumulative temporality).

#include <cstdint>
#include <span>
#include <string>

#include "core/metric_families.h"
#include "core/telemetry.h"

namespace infertel::metrics {

// Prometheus text format 0.0.4: `# HELP`/`# TYPE` per family present, counters under
// PrometheusName() (`_total`), label values escaped. Points must be grouped by family (as
// MetricStore::Snapshot returns them).
std::string RenderPrometheus(std::span<const MetricPoint> points);

// One ResourceMetrics (the agent's resource, scope "infertel") with a metric per family
// present, under the exact spec name and unit: counters as monotonic cumulative Sums
// starting at `start_unix_nano`, gauges as Gauges; every data point at `now_unix_nano`.
MetricsRequest BuildOtlpMetrics(std::span<const MetricPoint> points, const Resource& resource,
                                std::uint64_t start_unix_nano, std::uint64_t now_unix_nano,
                                std::string_view scope_version);

}  // namespace infertel::metrics
