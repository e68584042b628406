#pragma once
// Builds the export pipelines (one BatchProcessor per signal, one lane per exporter) from
// options resolved from OTEL_* environment variables and command-line flags.
//
// Exporter selection, per signal: an OTLP exporter when an OTLP endpoint applies to the
// signal (the base endpoint or the signal's own), the embedded store unless disabled
// (--no-store), the debug exporter with --debug-export. So with no OTLP endpoint configured
// the store is the sink; with one, OTLP and the store both receive everything.

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/settings.h"
#include "core/stats.h"
#include "export/sqlite/sqlite_store.h"
#include "export/sqlite/store_health.h"
#include "pipeline/batch_processor.h"

namespace CLI {
class App;
}

namespace infertel::exporting {

// Per-signal OTLP settings (OTEL_EXPORTER_OTLP_<SIGNAL>_*); empty/unset fields fall back to
// the general ones.
struct SignalOtlpOptions {
  std::string endpoint;                        // exact URL, used as is
  std::string protocol;                        // grpc | http/protobuf | http/json
  std::map<std::string, std::string> headers;  // merged over the general headers
  std::optional<std::chrono::milliseconds> timeout;
  std::optional<bool> gzip;
};

struct ExportOptions {
  // OTLP. `otlp_endpoint` is a base URL: http(s) exporters append /v1/<signal>.
  std::string otlp_endpoint;                    // OTEL_EXPORTER_OTLP_ENDPOINT, --otlp-endpoint
  std::string otlp_protocol = "http/protobuf";  // OTEL_EXPORTER_OTLP_PROTOCOL, --otlp-protocol
  std::map<std::string, std::string> headers;   // OTEL_EXPORTER_OTLP_HEADERS
  std::chrono::milliseconds timeout{10000};     // OTEL_EXPORTER_OTLP_TIMEOUT
  bool gzip = false;                            // OTEL_EXPORTER_OTLP_COMPRESSION=gzip
  SignalOtlpOptions traces, logs, metrics;

  // The embedded store.
  bool store_enabled = true;  // --no-store
  // --store; "" until ResolveStorePath puts it under the data directory.
  std::string store_path;
  std::string data_dir;  // --data-dir; "" for the rules of export/sqlite/data_dir.h
  std::uint64_t store_max_bytes = 256ull * 1024 * 1024;  // --store-max-mb
  std::chrono::seconds store_max_age{24 * 3600};         // --store-max-age
  std::chrono::seconds store_cleanup_interval{60};
  // The store's retention counters, registered by BuildPipelines (shared by copies).
  std::shared_ptr<StoreStats> store_stats = std::make_shared<StoreStats>();

  // The debug exporter (stdout).
  bool debug = false;       // --debug-export
  bool debug_json = false;  // --debug-export-json

  // Batching and queue limits (OTEL_BSP_*, --export-queue-mb for the bytes), applied to every
  // lane of every signal.
  pipeline::BatchOptions batch;
};

// Resolves OTEL_EXPORTER_OTLP_{ENDPOINT,PROTOCOL,HEADERS,TIMEOUT,COMPRESSION}, their
// _TRACES_/_LOGS_/_METRICS_ variants, and OTEL_BSP_{SCHEDULE_DELAY,MAX_QUEUE_SIZE,
// MAX_EXPORT_BATCH_SIZE} over `base`. Bad values are skipped (the field keeps its
// value) and described in *errors (may be null), naming the variable.
ExportOptions FromEnv(const config::EnvLookup& env, std::vector<std::string>* errors = nullptr,
                      ExportOptions base = {});
inline ExportOptions ExportOptionsFromEnv(const config::EnvLookup& env,
                                          std::vector<std::string>* errors = nullptr) {
  return FromEnv(env, errors);
}

// Puts the store under the data directory (export/sqlite/data_dir.h, created if absent) unless
// its path was given or it is off. Returns the start-up line saying where the store is, which
// rule chose it and how to change it ("" when the store is off); nullopt and *error when no
// data directory can be chosen or created.
std::optional<std::string> ResolveStorePath(ExportOptions* options, const config::EnvLookup& env,
                                            bool root, std::string* error);

// The store options the store exporters use.
StoreOptions StoreOptionsOf(const ExportOptions& options);
// One line naming where each signal goes, e.g.
// "traces, logs, metrics -> otlp http/protobuf http://c:4318 + store infertel.db".
std::string Describe(const ExportOptions& options);

// Registers --otlp-endpoint, --otlp-protocol, --otlp-header (repeatable k=v), --otlp-timeout-ms,
// --otlp-gzip, --store, --data-dir, --no-store, --store-max-mb, --store-max-age, --debug-export,
// --debug-export-json on `cmd`, writing into `*options` at parse time (so call FromEnv first:
// flags override the environment). `options` must outlive the parse.
void AddExportFlags(CLI::App& cmd, ExportOptions* options);

// "24h", "30m", "90s", "500ms", "7d"; a bare number is seconds. nullopt when malformed.
std::optional<std::chrono::milliseconds> ParseDuration(std::string_view text);
// OTEL_EXPORTER_OTLP_HEADERS syntax: "k=v,k2=v2", keys and values percent-decoded and trimmed.
// False when an entry has no '='.
bool ParseOtlpHeaders(std::string_view text, std::map<std::string, std::string>* out);

// True when an OTLP endpoint applies to the signal ("traces", "logs", "metrics").
bool OtlpEnabled(const ExportOptions& options, std::string_view signal);

// The exporters of one signal, in lane order: OTLP, store, debug. nullopt and *error when one
// cannot be built (bad endpoint or protocol, store not writable). The store's exporters call
// `store_health`'s hooks when given (export/sqlite/store_health.h).
std::optional<std::vector<std::unique_ptr<pipeline::TraceExporter>>> BuildTraceExporters(
    const ExportOptions& options, std::string* error,
    std::shared_ptr<StoreHealth> store_health = {});
std::optional<std::vector<std::unique_ptr<pipeline::LogExporter>>> BuildLogExporters(
    const ExportOptions& options, std::string* error,
    std::shared_ptr<StoreHealth> store_health = {});
std::optional<std::vector<std::unique_ptr<pipeline::MetricExporter>>> BuildMetricExporters(
    const ExportOptions& options, std::string* error,
    std::shared_ptr<StoreHealth> store_health = {});

// The three processors. Stats (may be null) receive each lane's self-metrics.
struct Pipelines {
  std::unique_ptr<pipeline::TraceBatchProcessor> traces;
  std::unique_ptr<pipeline::LogBatchProcessor> logs;
  std::unique_ptr<pipeline::MetricBatchProcessor> metrics;
  // The store's file system faults, shared by its three exporters; null with --no-store.
  std::shared_ptr<StoreHealth> store_health;

  bool Flush(std::chrono::milliseconds timeout);
  void Shutdown(std::chrono::milliseconds timeout);
  // One line per failing exporter (its last attempt failed), for /healthz: the signal, the
  // exporter, failed attempts in a row, items dropped there so far and the last error; first
  // a line for a fault of the store's file system (StoreHealth::Describe), which shows even
  // while nothing is written. Empty when every exporter is healthy.
  std::string FailingExporters() const;
};
// nullptr and *error when an exporter cannot be built.
std::unique_ptr<Pipelines> BuildPipelines(const ExportOptions& options, StatsRegistry* stats,
                                          std::string* error);

}  // namespace infertel::exporting
