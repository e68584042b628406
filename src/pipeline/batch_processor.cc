#include "pipeline/batch_processor.h"

namespace infertel::pipeline {

void RegisterExporterStats(StatsRegistry& registry, std::string_view exporter,
                           std::string_view signal, std::shared_ptr<const ExporterStats> stats) {
  const std::string labels = StatsLabel("exporter", exporter) + "," + StatsLabel("signal", signal);
  using T = StatsRegistry::Type;
  auto counter = [&](const char* name, const char* help, std::string lbl,
                     const std::atomic<std::uint64_t> ExporterStats::*field) {
    registry.AddFn(name, help, T::kCounter, std::move(lbl), [stats, field] {
      return static_cast<double>((stats.get()->*field).load(std::memory_order_relaxed));
    });
  };
  counter("infertel_exporter_sent_items", "Items accepted by the exporter's backend", labels,
          &ExporterStats::sent);
  const char* dropped_help = "Items dropped before or during export, by reason";
  counter("infertel_exporter_dropped_items", dropped_help, labels + ",reason=\"queue_full\"",
          &ExporterStats::dropped_queue_full);
  counter("infertel_exporter_dropped_items", dropped_help, labels + ",reason=\"export_failed\"",
          &ExporterStats::dropped_export_failed);
  counter("infertel_exporter_dropped_items", dropped_help, labels + ",reason=\"rejected\"",
          &ExporterStats::rejected);
  counter("infertel_exporter_failures", "Failed export attempts", labels, &ExporterStats::failures);
  counter("infertel_exporter_retries", "Export retries", labels, &ExporterStats::retries);
  auto gauge = [&](const char* name, const char* help,
                   const std::atomic<std::uint64_t> ExporterStats::*field) {
    registry.AddFn(name, help, T::kGauge, labels, [stats, field] {
      return static_cast<double>((stats.get()->*field).load(std::memory_order_relaxed));
    });
  };
  gauge("infertel_exporter_queue_items", "Items waiting in the exporter's queue",
        &ExporterStats::queue_items);
  gauge("infertel_exporter_queue_bytes", "Bytes waiting in the exporter's queue",
        &ExporterStats::queue_bytes);
  registry.AddFn("infertel_exporter_failing",
                 "1 while the exporter's last attempt failed (it then takes no part in admission)",
                 T::kGauge, labels, [stats] {
                   return stats->consecutive_failures.load(std::memory_order_relaxed) > 0 ? 1.0
                                                                                          : 0.0;
                 });
}

template class BatchProcessor<TracesRequest>;
template class BatchProcessor<LogsRequest>;
template class BatchProcessor<MetricsRequest>;

}  // namespace infertel::pipeline
