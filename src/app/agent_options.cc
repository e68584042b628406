#include "app/agent_options.h"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <array>
#include <ranges>
#include <type_traits>
#include <utility>

#include "engines/registry.h"

namespace infertel {

namespace {

// A field of AgentFlags, by type and member path.
#define INFERTEL_FIELD(type, member)                                \
  AgentField {                                                      \
    FieldRef<type>([](AgentFlags& f) -> type& { return f.member; }) \
  }

using config::Key;

const std::array kTable = std::to_array<AgentOption>({
    {.flag = "--engine",
     .field = INFERTEL_FIELD(std::string, engine),
     .help = "Engine kind of --upstream: {engines}",
     .yaml_key = "upstreams[].engine"},
    {.flag = "--upstream",
     .field = INFERTEL_FIELD(std::string, upstream),
     .help = "Engine URL, e.g. http://127.0.0.1:8000",
     .yaml_key = "upstreams[].url",
     .more = "an upstream in front of the agent file's"},
    {.flag = "--listen",
     .field = INFERTEL_FIELD(std::string, listen),
     .help = "Gateway address HOST:PORT for clients",
     .yaml_key = "upstreams[].listen"},
    {.flag = "--admin",
     .field = INFERTEL_FIELD(std::string, admin),
     .help = "Admin address HOST:PORT (/healthz, /metrics, /api/config)",
     .yaml_key = "admin",
     .default_text = "127.0.0.1:9464"},
    {.flag = "--admin-token",
     .field = INFERTEL_FIELD(std::string, admin_token),
     .help = "Bearer token for /api/config (default: INFERTEL_ADMIN_TOKEN); required when "
             "--admin is not loopback",
     .env_var = "INFERTEL_ADMIN_TOKEN"},
    {.flag = "--console-file",
     .field = INFERTEL_FIELD(std::string, console_file),
     .help = "Console values (YAML or JSON: console key -> value), watched for changes"},
    {.flag = "--console-url",
     .field = INFERTEL_FIELD(std::string, console_url),
     .help = "Console URL serving the same document, polled with If-None-Match"},
    {.flag = "--console-url-interval-ms",
     .field = INFERTEL_FIELD(int, console_url_interval_ms),
     .help = "How often --console-url is polled",
     .unit = "ms",
     .more = "at least 100"},
    {.flag = "--config",
     .field = INFERTEL_FIELD(std::string, config_file),
     .help = "Agent file (YAML): upstreams, admin, store, otlp",
     .more = "several upstreams, each with its own listen address (below)"},
    {.flag = "--pd-role",
     .field = INFERTEL_FIELD(std::string, pd_role),
     .help = "PD role of --upstream: producer, consumer or none",
     .allowed = "producer|consumer|none",
     .yaml_key = "upstreams[].pd_role"},
    {.flag = "--engine-version",
     .field = INFERTEL_FIELD(std::string, engine_version),
     .help = "Span generation of --upstream, for an engine whose spans changed shape: auto (from "
             "its spans and the version it reports), v0 or v1",
     .allowed = "auto|v0|v1",
     .yaml_key = "upstreams[].engine_version"},
    {.flag = "--data-parallel-size",
     .field = INFERTEL_FIELD(int, data_parallel_size),
     .help = "Engine cores behind --upstream (data parallelism)",
     .yaml_key = "upstreams[].data_parallel_size",
     .more = "with 1, `gen_ai.engine.index` is 0"},
    {.flag = "--metrics-url",
     .field = INFERTEL_FIELD(std::string, metrics_url),
     .help = "Engine metrics URL of --upstream (default: the upstream's /metrics; off: none)",
     .yaml_key = "upstreams[].metrics_url",
     .default_text = "UPSTREAM/metrics"},
    {.flag = "--scrape-interval",
     .field = INFERTEL_FIELD(std::string, scrape_interval),
     .help = "How often each engine's /metrics is scraped",
     .unit = "duration"},
    {.flag = "--scrape-timeout",
     .field = INFERTEL_FIELD(std::string, scrape_timeout),
     .help = "Timeout of one scrape",
     .unit = "duration"},
    {.flag = "--scrape-max-series",
     .field = INFERTEL_FIELD(std::size_t, scrape_max_series),
     .help = "Series kept per scraped engine; new series beyond it are refused and counted",
     .min = 1,
     .max = 10'000'000},
    {.flag = "--scrape-stale-after",
     .field = INFERTEL_FIELD(std::string, scrape_stale_after),
     .help = "A scraped counter series absent this long is forgotten",
     .unit = "duration"},
    {.flag = "--metric-model-cap",
     .field = INFERTEL_FIELD(std::size_t, metric_model_cap),
     .help = "Model label values per upstream beyond the models the engine serves; later ones "
             "are reported as \"other\"",
     .min = 0,
     .max = 100'000},
    {.flag = "--metric-export-interval",
     .field = INFERTEL_FIELD(std::string, metric_export_interval),
     .help = "OTLP metric export interval with its unit, e.g. 60s or 500ms, from 100ms to 24h "
             "(default: OTEL_METRIC_EXPORT_INTERVAL, in milliseconds, else 60s)",
     .unit = "duration",
     .env_var = "OTEL_METRIC_EXPORT_INTERVAL",
     .default_text = "60s",
     .more = "a bare number is refused; the variable is in milliseconds"},
    {.flag = "--threads",
     .field = INFERTEL_FIELD(int, threads),
     .help = "Gateway worker threads; 0: one per CPU the agent may run on (its affinity, or its "
             "cgroup's CPU quota when smaller), at most 2",
     .min = 0,
     .max = 256},
    {.flag = "--max-body-bytes",
     .field = INFERTEL_FIELD(std::size_t, max_body),
     .help = "Request body limit (413 above it)",
     .unit = "bytes",
     .more = "the client gets a JSON error"},
    {.flag = "--export-delay-ms",
     .field = INFERTEL_FIELD(int, export_delay_ms),
     .help = "Batching delay before an export",
     .unit = "ms",
     .env_var = "OTEL_BSP_SCHEDULE_DELAY",
     .default_text = "200"},
    {.flag = "--receiver-grpc",
     .field = INFERTEL_FIELD(std::string, receiver_grpc),
     .help = "OTLP gRPC receiver for engine spans, HOST:PORT or off"},
    {.flag = "--receiver-http",
     .field = INFERTEL_FIELD(std::string, receiver_http),
     .help = "OTLP HTTP receiver (/v1/traces, protobuf or JSON), HOST:PORT or off",
     .more = "also `/v1/logs` and `/v1/metrics`, gzip"},
    {.flag = "--join-window-ms",
     .field = INFERTEL_FIELD(int, join_window_ms),
     .help = "How long an engine span waits for its request to finish at the gateway",
     .unit = "ms"},
    {.flag = "--receiver-wait-ms",
     .field = INFERTEL_FIELD(int, receiver_wait_ms),
     .help = "How long an OTLP request waits for room while the export queues are full, before "
             "it is answered retry-later (0: at once)",
     .unit = "ms",
     .min = 0,
     .max = 10'000,
     .more = "full means three-quarters full; the answer is gRPC `UNAVAILABLE` / HTTP 503; at "
             "most 16 requests per transport wait, an HTTP body waits unread"},
    {.flag = "--receiver-http-max-connections",
     .field = INFERTEL_FIELD(std::size_t, receiver_http_max_connections),
     .help = "OTLP/HTTP connections at once; beyond it the one reading its request longest is "
             "closed, or the new one refused (503) if all are busy",
     .min = 1,
     .max = 100'000,
     .more = "([limits.md](limits.md#otlphttp-receiver))"},
    {.flag = "--admin-max-connections",
     .field = INFERTEL_FIELD(std::size_t, admin_max_connections),
     .help = "Admin address connections at once (as --receiver-http-max-connections)",
     .min = 1,
     .max = 100'000},
    {.flag = "--gateway-max-connections",
     .field = INFERTEL_FIELD(std::size_t, gateway_max_connections),
     .help = "Gateway client connections at once, every listener together; beyond it the one "
             "waiting for or reading its request longest is closed (never one being answered "
             "or streamed), or the new one refused (503) if all are busy",
     .min = 1,
     .max = 1'000'000,
     .more = "([limits.md](limits.md#gateway-port))"},
    {.flag = "--http-idle-timeout-ms",
     .field = INFERTEL_FIELD(int, http_idle_timeout_ms),
     .help = "OTLP/HTTP and admin: how long a kept-alive connection waits for a request",
     .unit = "ms",
     .min = 100,
     .max = 3'600'000,
     .more = "past it the connection is closed, counted "
             "([limits.md](limits.md#otlphttp-receiver))"},
    {.flag = "--http-header-timeout-ms",
     .field = INFERTEL_FIELD(int, http_header_timeout_ms),
     .help = "OTLP/HTTP and admin: a request's first byte to the end of its header",
     .unit = "ms",
     .min = 100,
     .max = 600'000},
    {.flag = "--http-body-timeout-ms",
     .field = INFERTEL_FIELD(int, http_body_timeout_ms),
     .help = "OTLP/HTTP and admin: the end of a request's header to the end of its body",
     .unit = "ms",
     .min = 100,
     .max = 600'000},
    {.flag = "--receiver-grpc-max-connections",
     .field = INFERTEL_FIELD(std::size_t, grpc_limits.max_connections),
     .help = "OTLP gRPC connections open at once; further ones are closed at once",
     .min = 1,
     .max = 100'000,
     .more = "([limits.md](limits.md#otlpgrpc-receiver))"},
    {.flag = "--receiver-max-value-elements",
     .field = INFERTEL_FIELD(std::uint32_t, value_elements),
     .help = "Elements kept of one array or key-value list inside a received attribute or log "
             "body, the first ones",
     .min = 1,
     .max = 1'000'000,
     .more = "([limits.md](limits.md#ingested-spans-otlp-receivers))"},
    {.flag = "--receiver-max-value-depth",
     .field = INFERTEL_FIELD(std::uint32_t, value_depth),
     .help = "Arrays and key-value lists nested in one another inside a received value; a deeper "
             "one is emptied",
     .min = 1,
     .max = 64,
     .more = "([limits.md](limits.md#ingested-spans-otlp-receivers))"},
    {.flag = "--receiver-grpc-max-streams",
     .field = INFERTEL_FIELD(std::uint32_t, grpc_limits.max_concurrent_streams),
     .help = "Concurrent streams per OTLP gRPC connection (SETTINGS_MAX_CONCURRENT_STREAMS)",
     .min = 1,
     .max = 100'000},
    {.flag = "--receiver-grpc-max-header-bytes",
     .field = INFERTEL_FIELD(std::uint32_t, grpc_limits.max_header_list_bytes),
     .help = "Header list size of an OTLP gRPC call (SETTINGS_MAX_HEADER_LIST_SIZE)",
     .unit = "bytes",
     .min = 1024,
     .max = 1 << 20,
     .more = "enforced"},
    {.flag = "--receiver-grpc-max-resets-per-second",
     .field = INFERTEL_FIELD(std::uint32_t, grpc_limits.max_resets_per_second),
     .help = "Stream resets per OTLP gRPC connection per second before GOAWAY",
     .min = 1,
     .max = 1'000'000,
     .more = "`ENHANCE_YOUR_CALM`"},
    {.flag = "--receiver-grpc-buffer-mb",
     .field = INFERTEL_FIELD(std::size_t, grpc_buffer_mb),
     .help = "Message bytes all OTLP gRPC connections hold at once, in MiB",
     .unit = "MiB",
     .min = 1,
     .max = 65'536,
     .more = "beyond, `UNAVAILABLE` with RetryInfo"},
    {.flag = "--receiver-grpc-idle-timeout-ms",
     .field = INFERTEL_FIELD(int, grpc_idle_timeout_ms),
     .help = "An OTLP gRPC connection that sends nothing this long is closed",
     .unit = "ms",
     .min = 10,
     .max = 86'400'000,
     .more = "with GOAWAY"},
    {.flag = "--receiver-grpc-handshake-timeout-ms",
     .field = INFERTEL_FIELD(int, grpc_handshake_timeout_ms),
     .help = "Time a new OTLP gRPC connection has for its HTTP/2 preface",
     .unit = "ms",
     .min = 10,
     .max = 600'000,
     .more = "and SETTINGS"},
    {.flag = "--upstream-connect-timeout-ms",
     .field = INFERTEL_FIELD(std::int64_t, upstream_connect_timeout_ms),
     .help = {},
     .unit = "ms",
     .key = Key::kUpstreamConnectTimeoutMs,
     .more = "([operations.md](operations.md#upstream-timeouts))"},
    {.flag = "--upstream-first-byte-timeout-ms",
     .field = INFERTEL_FIELD(std::int64_t, upstream_first_byte_timeout_ms),
     .help = {},
     .unit = "ms",
     .key = Key::kUpstreamFirstByteTimeoutMs,
     .more = "([operations.md](operations.md#upstream-timeouts))"},
    {.flag = "--upstream-idle-timeout-ms",
     .field = INFERTEL_FIELD(std::int64_t, upstream_idle_timeout_ms),
     .help = {},
     .unit = "ms",
     .key = Key::kUpstreamIdleTimeoutMs,
     .more = "([operations.md](operations.md#upstream-timeouts))"},
    {.flag = "--drain-timeout-ms",
     .field = INFERTEL_FIELD(std::int64_t, drain_timeout_ms),
     .help = {},
     .unit = "ms",
     .key = Key::kDrainTimeoutMs,
     .more = "([operations.md](operations.md#shutdown-and-drain-sigterm-sigint))"},
});

#undef INFERTEL_FIELD

// The field's initial value as text; empty for "not given" (an empty string, or -1).
std::string InitialText(const AgentField& field) {
  AgentFlags initial;
  return std::visit(
      [&](auto ref) -> std::string {
        const auto& v = ref(initial);
        if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::string>) {
          return v;
        } else {
          if constexpr (std::is_signed_v<std::decay_t<decltype(v)>>)
            if (v < 0) return {};
          return std::to_string(v);
        }
      },
      field);
}

// A row's help, `{engines}` replaced by the registry's engines ("vllm or sglang").
std::string HelpText(std::string_view help) {
  std::string out(help);
  if (auto at = out.find("{engines}"); at != std::string::npos)
    out.replace(at, std::string_view("{engines}").size(), engines::EngineNames());
  return out;
}

std::string HelpOf(const AgentOption& o) {
  if (!o.key) return HelpText(o.help);
  const config::KeySpec& spec = config::Spec(*o.key);
  return fmt::format("{} Default {}; console key {}, env {}", spec.description, spec.default_value,
                     spec.console_key, spec.env_var);
}

}  // namespace

std::span<const AgentOption> AgentOptionTable() { return kTable; }

config::OptionDoc DocOf(const AgentOption& o) {
  config::OptionDoc d;
  d.flag = o.flag;
  d.yaml_key = o.yaml_key;
  d.env_var = o.env_var;
  d.default_text = o.default_text.empty() ? InitialText(o.field) : std::string(o.default_text);
  d.unit = o.unit;
  if (o.min < o.max) d.range = fmt::format("{}..{}", o.min, o.max);
  if (!o.allowed.empty()) {
    d.range = std::string(o.allowed);
    std::replace(d.range.begin(), d.range.end(), '|', '/');
  }
  d.help = HelpText(o.help);
  d.more = o.more;
  if (o.key) {
    const config::KeySpec& spec = config::Spec(*o.key);
    d.env_var = spec.env_var;
    d.console_key = spec.console_key;
    d.default_text = spec.default_value;
    d.range = fmt::format("{}..{}", spec.min, spec.max);
    d.help = fmt::format(
        "sets the live key as its environment variable would (the console "
        "wins over it): {}",
        spec.description);
  }
  return d;
}

std::vector<config::OptionDoc> AgentOptionDocs() {
  std::vector<config::OptionDoc> out;
  for (const AgentOption& o : kTable) out.push_back(DocOf(o));
  for (auto& d : config::RegisteredOptions()) out.push_back(std::move(d));
  return out;
}

config::EnvLookup KeyFlagsOverEnv(config::EnvLookup env, const AgentFlags& flags) {
  // Only the given flags' values are kept, by variable name, not a copy of every flag.
  AgentFlags f = flags;  // FieldRef reads through a mutable reference; once, at start-up
  std::vector<std::pair<std::string_view, std::string>> given;
  for (const AgentOption& o : kTable) {
    if (!o.key) continue;
    const std::int64_t v = std::get<FieldRef<std::int64_t>>(o.field)(f);
    if (v >= 0) given.emplace_back(config::Spec(*o.key).env_var, std::to_string(v));
  }
  if (given.empty()) return env;
  return [env = std::move(env),
          given = std::move(given)](std::string_view name) -> std::optional<std::string> {
    for (const auto& [var, value] : given)
      if (var == name) return value;
    return env(name);
  };
}

bool ApplyAdminFlag(const std::string& flag, http::HostPort* admin) {
  if (flag.empty()) return true;
  auto parsed = http::ParseHostPort(flag);
  if (!parsed) return false;
  *admin = *parsed;
  return true;
}

std::string AgentOptionsMarkdown() { return config::OptionsMarkdownTable(AgentOptionDocs()); }

void AddAgentTableOptions(CLI::App* sub, AgentFlags* flags) {
  for (const AgentOption& o : kTable) {
    std::visit(
        [&](auto ref) {
          CLI::Option* opt = sub->add_option(std::string(o.flag), ref(*flags), HelpOf(o));
          std::int64_t min = o.min, max = o.max;
          if (o.key) min = config::Spec(*o.key).min, max = config::Spec(*o.key).max;
          if (min < max || o.key) opt->check(CLI::Range(min, max));
          if (!o.allowed.empty()) {
            std::vector<std::string> allowed;
            for (auto part : std::views::split(o.allowed, '|'))
              allowed.emplace_back(part.begin(), part.end());
            opt->check(CLI::IsMember(allowed));
          }
          if (!o.default_text.empty() && InitialText(o.field).empty()) {
            opt->default_str(std::string(o.default_text));
          } else if (!InitialText(o.field).empty()) {
            opt->capture_default_str();
          }
        },
        o.field);
  }
}

}  // namespace infertel
