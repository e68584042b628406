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

// The media type of each exposition, and which one a scraper's Accept header asks for:
// OpenMetrics when it names application/openmetrics-text (as Prometheus does, and needs for
// exemplars), else the text format, so that old scrapers see what they always saw.
inline constexpr std::string_view kTextContentType = "text/plain; version=0.0.4; charset=utf-8";
inline constexpr std::string_view kOpenMetricsContentType =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";
bool WantsOpenMetrics(std::string_view accept);
// The same exposition in OpenMetrics 1.0 (`text` in format 0.0.4, as the renderers write it,
// families grouped): a counter family is named without its samples' `_total`, quotes in HELP
// are escaped, and the exposition ends with `# EOF`. Exemplars already written on histogram
// buckets are kept.
std::string ToOpenMetrics(std::string_view text);

// A new cumulative histogram metric in `sm`, for its points to be added to (the agent's own
// histogram families: latency_histograms.h, genai_histograms.h).
otlp_metrics::Histogram* AddCumulativeHistogram(otlp_metrics::ScopeMetrics* sm,
                                                std::string_view name, std::string_view unit,
                                                std::string_view help);

// One ResourceMetrics (the agent's resource, scope "infertel") with a metric per family
// present, under the exact spec name and unit: counters as monotonic cumulative Sums
// starting at `start_unix_nano`, gauges as Gauges; every data point at `now_unix_nano`.
MetricsRequest BuildOtlpMetrics(std::span<const MetricPoint> points, const Resource& resource,
                                std::uint64_t start_unix_nano, std::uint64_t now_unix_nano,
                                std::string_view scope_version);

}  // namespace infertel::metrics
