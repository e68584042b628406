#include "export/factory.h"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>

#include "core/otel_env.h"
#include "export/debug/debug_exporter.h"
#include "export/otlp_grpc/otlp_grpc_exporter.h"
#include "export/otlp_http/otlp_http_exporter.h"
#include "export/sqlite/data_dir.h"

namespace infertel::exporting {
namespace {

std::string Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

std::string PercentDecode(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      int v = 0;
      auto [p, ec] = std::from_chars(s.data() + i + 1, s.data() + i + 3, v, 16);
      if (ec == std::errc() && p == s.data() + i + 3) {
        out.push_back(static_cast<char>(v));
        i += 2;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

bool ParseUint(std::string_view s, std::uint64_t* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool ValidProtocol(std::string_view p) {
  return p == "grpc" || p == "http/protobuf" || p == "http/json";
}

const SignalOtlpOptions& SignalOf(const ExportOptions& o, std::string_view signal) {
  return signal == "traces" ? o.traces : signal == "logs" ? o.logs : o.metrics;
}

// Fills the common OTLP variables for one infix ("" or "TRACES_"...).
void OtlpFromEnv(const config::EnvLookup& env, std::string_view infix, std::string* endpoint,
                 std::string* protocol, std::map<std::string, std::string>* headers,
                 std::optional<std::chrono::milliseconds>* timeout, std::optional<bool>* gzip,
                 std::vector<std::string>* errors) {
  auto name = [&](std::string_view suffix) {
    return fmt::format("{}{}{}", otel_env::kOtlpPrefix, infix, suffix);
  };
  auto err = [&](std::string msg) {
    if (errors) errors->push_back(std::move(msg));
  };
  if (auto v = env(name(otel_env::kOtlpEndpoint)); v && !v->empty()) *endpoint = Trim(*v);
  if (auto v = env(name(otel_env::kOtlpProtocol)); v && !v->empty()) {
    std::string p = Trim(*v);
    if (ValidProtocol(p))
      *protocol = p;
    else
      err(fmt::format("{}: unknown protocol '{}' (grpc, http/protobuf, http/json)",
                      name(otel_env::kOtlpProtocol), p));
  }
  if (auto v = env(name(otel_env::kOtlpHeaders)); v && !v->empty()) {
    std::map<std::string, std::string> h;
    if (ParseOtlpHeaders(*v, &h))
      for (auto& [k, val] : h) (*headers)[k] = val;
    else
      err(fmt::format("{}: expected k=v,k2=v2", name(otel_env::kOtlpHeaders)));
  }
  if (auto v = env(name(otel_env::kOtlpTimeout)); v && !v->empty()) {
    std::uint64_t ms;
    if (ParseUint(Trim(*v), &ms))
      *timeout = std::chrono::milliseconds(ms);
    else
      err(fmt::format("{}: expected milliseconds, got '{}'", name(otel_env::kOtlpTimeout), *v));
  }
  if (auto v = env(name(otel_env::kOtlpCompression)); v && !v->empty()) {
    std::string c = Trim(*v);
    if (c == "gzip")
      *gzip = true;
    else if (c == "none")
      *gzip = false;
    else
      err(fmt::format("{}: expected gzip or none, got '{}'", name(otel_env::kOtlpCompression), c));
  }
}

struct Resolved {
  std::string url;  // the signal's endpoint: exact for http, host:port-ish for grpc
  std::string protocol;
  std::map<std::string, std::string> headers;
  std::chrono::milliseconds timeout;
  bool gzip;
};

Resolved Resolve(const ExportOptions& o, std::string_view signal) {
  const SignalOtlpOptions& s = SignalOf(o, signal);
  Resolved r;
  r.protocol = s.protocol.empty() ? o.otlp_protocol : s.protocol;
  r.headers = o.headers;
  for (const auto& [k, v] : s.headers) r.headers[k] = v;
  r.timeout = s.timeout.value_or(o.timeout);
  r.gzip = s.gzip.value_or(o.gzip);
  if (r.protocol == "grpc")
    r.url = s.endpoint.empty() ? o.otlp_endpoint : s.endpoint;
  else
    r.url = SignalUrl(o.otlp_endpoint, s.endpoint, signal);
  return r;
}

template <typename Request, typename GrpcMake, typename HttpMake, typename StoreMake,
          typename DebugMake>
std::optional<std::vector<std::unique_ptr<pipeline::Exporter<Request>>>> Build(
    const ExportOptions& o, std::string_view signal, std::string* error, GrpcMake grpc_make,
    HttpMake http_make, StoreMake store_make, DebugMake debug_make,
    const std::shared_ptr<StoreHealth>& store_health) {
  std::vector<std::unique_ptr<pipeline::Exporter<Request>>> out;
  if (OtlpEnabled(o, signal)) {
    Resolved r = Resolve(o, signal);
    std::unique_ptr<pipeline::Exporter<Request>> e;
    if (r.protocol == "grpc") {
      OtlpGrpcOptions g{r.url, r.headers, r.timeout, r.gzip, {}};
      e = grpc_make(g, error);
    } else if (r.protocol == "http/protobuf" || r.protocol == "http/json") {
      OtlpHttpOptions h;
      h.url = r.url;
      h.encoding = r.protocol == "http/json" ? HttpEncoding::kJson : HttpEncoding::kProtobuf;
      h.headers = r.headers;
      h.timeout = r.timeout;
      h.gzip = r.gzip;
      e = http_make(h, error);
    } else {
      *error =
          fmt::format("unknown OTLP protocol '{}' (grpc, http/protobuf, http/json)", r.protocol);
    }
    if (!e) return std::nullopt;
    out.push_back(std::move(e));
  }
  if (o.store_enabled) {
    if (o.store_path.empty()) {
      *error = "the store has no path (ResolveStorePath puts it under the data directory)";
      return std::nullopt;
    }
    auto e = store_make(StoreOptionsOf(o), error, store_health);
    if (!e) return std::nullopt;
    out.push_back(std::move(e));
  }
  if (o.debug) out.push_back(debug_make(DebugOptions{stdout, o.debug_json}));
  return out;
}

}  // namespace

bool ParseOtlpHeaders(std::string_view text, std::map<std::string, std::string>* out) {
  while (!text.empty()) {
    auto comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (Trim(item).empty()) continue;
    auto eq = item.find('=');
    if (eq == std::string_view::npos) return false;
    std::string key = Trim(PercentDecode(item.substr(0, eq)));
    if (key.empty()) return false;
    (*out)[key] = Trim(PercentDecode(item.substr(eq + 1)));
  }
  return true;
}

std::optional<std::chrono::milliseconds> ParseDuration(std::string_view text) {
  std::string t = Trim(text);
  std::uint64_t n = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), n);
  if (ec != std::errc() || p == t.data()) return std::nullopt;
  std::string_view unit(p, static_cast<std::size_t>(t.data() + t.size() - p));
  std::uint64_t ms_per;
  if (unit.empty() || unit == "s")
    ms_per = 1000;
  else if (unit == "ms")
    ms_per = 1;
  else if (unit == "m")
    ms_per = 60'000;
  else if (unit == "h")
    ms_per = 3'600'000;
  else if (unit == "d")
    ms_per = 86'400'000;
  else
    return std::nullopt;
  return std::chrono::milliseconds(n * ms_per);
}

ExportOptions FromEnv(const config::EnvLookup& env, std::vector<std::string>* errors,
                      ExportOptions o) {
  std::optional<std::chrono::milliseconds> timeout;
  std::optional<bool> gzip;
  OtlpFromEnv(env, "", &o.otlp_endpoint, &o.otlp_protocol, &o.headers, &timeout, &gzip, errors);
  if (timeout) o.timeout = *timeout;
  if (gzip) o.gzip = *gzip;
  OtlpFromEnv(env, "TRACES_", &o.traces.endpoint, &o.traces.protocol, &o.traces.headers,
              &o.traces.timeout, &o.traces.gzip, errors);
  OtlpFromEnv(env, "LOGS_", &o.logs.endpoint, &o.logs.protocol, &o.logs.headers, &o.logs.timeout,
              &o.logs.gzip, errors);
  OtlpFromEnv(env, "METRICS_", &o.metrics.endpoint, &o.metrics.protocol, &o.metrics.headers,
              &o.metrics.timeout, &o.metrics.gzip, errors);
  auto num = [&](std::string_view name, auto apply) {
    auto v = env(name);
    if (!v || v->empty()) return;
    std::uint64_t n;
    if (ParseUint(Trim(*v), &n) && n > 0)
      apply(n);
    else if (errors)
      errors->push_back(fmt::format("{}: expected a positive integer, got '{}'", name, *v));
  };
  num(otel_env::kBspScheduleDelay,
      [&](std::uint64_t n) { o.batch.max_delay = std::chrono::milliseconds(n); });
  num(otel_env::kBspMaxQueueSize, [&](std::uint64_t n) { o.batch.max_queue_items = n; });
  num(otel_env::kBspMaxExportBatchSize, [&](std::uint64_t n) { o.batch.max_batch_items = n; });
  return o;
}

void AddExportFlags(CLI::App& cmd, ExportOptions* o) {
  cmd.add_option("--otlp-endpoint", o->otlp_endpoint,
                 "OTLP endpoint (base URL; http exporters append /v1/<signal>)");
  cmd.add_option("--otlp-protocol", o->otlp_protocol, "grpc | http/protobuf | http/json")
      ->check(CLI::IsMember({"grpc", "http/protobuf", "http/json"}));
  cmd.add_option_function<std::vector<std::string>>(
      "--otlp-header",
      [o](const std::vector<std::string>& v) {
        for (const auto& h : v)
          if (!ParseOtlpHeaders(h, &o->headers)) throw CLI::ValidationError("--otlp-header", h);
      },
      "OTLP header k=v (repeatable)");
  cmd.add_option_function<std::uint64_t>(
      "--otlp-timeout-ms", [o](std::uint64_t ms) { o->timeout = std::chrono::milliseconds(ms); },
      "OTLP export timeout per request, milliseconds");
  cmd.add_flag("--otlp-gzip", o->gzip, "gzip-compress OTLP requests");
  cmd.add_option_function<std::uint64_t>(
         "--export-queue-mb",
         [o](std::uint64_t mb) { o->batch.max_queue_bytes = mb * 1024 * 1024; },
         "bound of each exporter's queue in MiB (per exporter and signal; beyond it telemetry is "
         "refused or dropped, counted)")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{4096}));
  cmd.add_option("--store", o->store_path,
                 "embedded store directory (SQLite files); default store in the data directory");
  cmd.add_option("--data-dir", o->data_dir,
                 "data directory, where the store goes (default: INFERTEL_DATA_DIR, else systemd's "
                 "STATE_DIRECTORY, else /var/lib/infertel as root, else "
                 "${XDG_STATE_HOME:-$HOME/.local/state}/infertel)");
  cmd.add_flag_callback(
      "--no-store", [o] { o->store_enabled = false; }, "do not write the embedded store");
  cmd.add_option_function<std::uint64_t>(
      "--store-max-mb", [o](std::uint64_t mb) { o->store_max_bytes = mb * 1024 * 1024; },
      "bound of the store's files and their WALs in MiB (oldest files removed first)");
  cmd.add_option_function<std::string>(
      "--store-max-age",
      [o](const std::string& s) {
        auto d = ParseDuration(s);
        if (!d) throw CLI::ValidationError("--store-max-age", "expected e.g. 24h, 30m, 7d");
        o->store_max_age = std::chrono::duration_cast<std::chrono::seconds>(*d);
      },
      "store age limit, e.g. 24h");
  cmd.add_flag("--debug-export", o->debug, "also print telemetry to stdout");
  cmd.add_flag("--debug-export-json", o->debug_json, "debug output as OTLP/JSON");
}

bool OtlpEnabled(const ExportOptions& o, std::string_view signal) {
  return !o.otlp_endpoint.empty() || !SignalOf(o, signal).endpoint.empty();
}

std::optional<std::vector<std::unique_ptr<pipeline::TraceExporter>>> BuildTraceExporters(
    const ExportOptions& o, std::string* error, std::shared_ptr<StoreHealth> store_health) {
  return Build<TracesRequest>(o, "traces", error, MakeOtlpGrpcTraceExporter,
                              MakeOtlpHttpTraceExporter, MakeStoreTraceExporter,
                              MakeDebugTraceExporter, store_health);
}
std::optional<std::vector<std::unique_ptr<pipeline::LogExporter>>> BuildLogExporters(
    const ExportOptions& o, std::string* error, std::shared_ptr<StoreHealth> store_health) {
  return Build<LogsRequest>(o, "logs", error, MakeOtlpGrpcLogExporter, MakeOtlpHttpLogExporter,
                            MakeStoreLogExporter, MakeDebugLogExporter, store_health);
}
std::optional<std::vector<std::unique_ptr<pipeline::MetricExporter>>> BuildMetricExporters(
    const ExportOptions& o, std::string* error, std::shared_ptr<StoreHealth> store_health) {
  return Build<MetricsRequest>(o, "metrics", error, MakeOtlpGrpcMetricExporter,
                               MakeOtlpHttpMetricExporter, MakeStoreMetricExporter,
                               MakeDebugMetricExporter, store_health);
}

bool Pipelines::Flush(std::chrono::milliseconds timeout) {
  bool ok = true;
  if (traces) ok &= traces->Flush(timeout);
  if (logs) ok &= logs->Flush(timeout);
  if (metrics) ok &= metrics->Flush(timeout);
  return ok;
}

namespace {

template <typename Request>
void DescribeFailing(const pipeline::BatchProcessor<Request>* p, std::string* out) {
  if (p == nullptr) return;
  for (std::size_t i = 0; i < p->LaneCount(); ++i) {
    const pipeline::ExporterStats& s = p->Stats(i);
    const std::uint64_t failures = s.consecutive_failures.load(std::memory_order_relaxed);
    if (failures == 0) continue;
    const std::uint64_t dropped = s.dropped_queue_full.load(std::memory_order_relaxed) +
                                  s.dropped_export_failed.load(std::memory_order_relaxed);
    *out += fmt::format(
        "exporter {} ({}) failing: {} failed attempts in a row, {} items dropped, {} queued; last "
        "error: {}\n",
        p->ExporterName(i), pipeline::SignalTraits<Request>::kName, failures, dropped,
        s.queue_items.load(std::memory_order_relaxed), s.LastError());
  }
}

}  // namespace

std::string Pipelines::FailingExporters() const {
  std::string out;
  if (store_health && store_health->Faulted()) out += store_health->Describe() + "\n";
  DescribeFailing(traces.get(), &out);
  DescribeFailing(logs.get(), &out);
  DescribeFailing(metrics.get(), &out);
  return out;
}

void Pipelines::Shutdown(std::chrono::milliseconds timeout) {
  if (traces) traces->Shutdown(timeout);
  if (logs) logs->Shutdown(timeout);
  if (metrics) metrics->Shutdown(timeout);
}

std::unique_ptr<Pipelines> BuildPipelines(const ExportOptions& o, StatsRegistry* stats,
                                          std::string* error) {
  std::shared_ptr<StoreHealth> health;
  if (o.store_enabled && !o.store_path.empty()) {
    health = std::make_shared<StoreHealth>(StoreHealthOptions{.path = o.store_path});
    if (stats) health->RegisterStats(stats);
  }
  auto t = BuildTraceExporters(o, error, health);
  if (!t) return nullptr;
  auto l = BuildLogExporters(o, error, health);
  if (!l) return nullptr;
  auto m = BuildMetricExporters(o, error, health);
  if (!m) return nullptr;
  if (o.store_enabled && stats != nullptr && o.store_stats != nullptr)
    RegisterStoreStats(*stats, o.store_stats);
  auto p = std::make_unique<Pipelines>();
  p->store_health = std::move(health);
  p->traces = std::make_unique<pipeline::TraceBatchProcessor>(std::move(*t), o.batch, stats);
  p->logs = std::make_unique<pipeline::LogBatchProcessor>(std::move(*l), o.batch, stats);
  p->metrics = std::make_unique<pipeline::MetricBatchProcessor>(std::move(*m), o.batch, stats);
  return p;
}

std::optional<std::string> ResolveStorePath(ExportOptions* o, const config::EnvLookup& env,
                                            bool root, std::string* error) {
  constexpr std::string_view kHow =
      "--data-dir DIR or INFERTEL_DATA_DIR to move it, --store DIR for another directory, "
      "--no-store "
      "for none";
  if (!o->store_enabled) return std::string();
  if (!o->store_path.empty())
    return fmt::format("store {} (from --store; {})", o->store_path, kHow);
  auto dir = ChooseDataDir(o->data_dir, env, root, error);
  if (!dir || !MakeDataDir(dir->path, error)) return std::nullopt;
  o->store_path = (std::filesystem::path(dir->path) / kStoreDirName).string();
  return fmt::format("store {} (data directory {}: {}; {})", o->store_path, dir->path, dir->rule,
                     kHow);
}

StoreOptions StoreOptionsOf(const ExportOptions& o) {
  StoreOptions s;
  s.path = o.store_path;
  s.max_bytes = o.store_max_bytes;
  s.max_age = o.store_max_age;
  // Age retention looks at least eight times per max age, so that a short one holds too.
  s.cleanup_interval =
      std::clamp(std::chrono::duration_cast<std::chrono::seconds>(o.store_max_age / 8),
                 std::chrono::seconds(1), o.store_cleanup_interval);
  s.stats = o.store_stats;
  return s;
}

std::string Describe(const ExportOptions& o) {
  std::string out;
  for (std::string_view signal : {"traces", "logs", "metrics"}) {
    std::string line;
    if (OtlpEnabled(o, signal)) {
      Resolved r = Resolve(o, signal);
      line += fmt::format("otlp {} {}", r.protocol, r.url);
    }
    if (o.store_enabled) line += fmt::format("{}store {}", line.empty() ? "" : " + ", o.store_path);
    if (o.debug) line += fmt::format("{}debug", line.empty() ? "" : " + ");
    if (line.empty()) line = "nowhere";
    out += fmt::format("{}{} -> {}", out.empty() ? "" : "; ", signal, line);
  }
  return out;
}

}  // namespace infertel::exporting
