#include "launch/engine_command.h"

#include "core/otel_env.h"

#include <charconv>
#include <string_view>

namespace infertel::launch {
namespace {

std::string_view Basename(std::string_view path) {
  auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

bool IsPython(std::string_view path) {
  std::string_view b = Basename(path);
  return b == "python" || b.starts_with("python3");
}

// The flags whose value names where the engine listens; removed and replaced.
bool IsListenFlag(std::string_view arg, std::string_view* name) {
  for (std::string_view f : {"--host", "--port", "--listen"}) {
    if (arg == f || (arg.size() > f.size() && arg.starts_with(f) && arg[f.size()] == '=')) {
      *name = f;
      return true;
    }
  }
  return false;
}

std::optional<std::uint16_t> ParsePort(std::string_view s) {
  unsigned v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v > 65535) return std::nullopt;
  return static_cast<std::uint16_t>(v);
}

bool InEnv(const std::vector<std::pair<std::string, std::string>>& env, std::string_view name) {
  for (const auto& [k, v] : env)
    if (k == name) return true;
  return false;
}

std::string EnvValue(const std::vector<std::pair<std::string, std::string>>& env,
                     std::string_view name) {
  for (const auto& [k, v] : env)
    if (k == name) return v;
  return {};
}

}  // namespace

std::optional<RecognisedCommand> Recognise(const std::vector<std::string>& argv, std::string* why) {
  if (argv.empty()) {
    *why = "no engine command after --";
    return std::nullopt;
  }
  std::string_view prog = Basename(argv[0]);
  if (prog == "vllm" && argv.size() > 1 && argv[1] == "serve")
    return RecognisedCommand{EngineKind::kVllm, 2, "vllm serve"};
  if (prog == "sglang" && argv.size() > 1 && argv[1] == "serve")
    return RecognisedCommand{EngineKind::kSglang, 2, "sglang serve"};
  if (IsPython(argv[0])) {
    for (std::size_t i = 1; i + 1 < argv.size(); ++i) {
      if (argv[i] != "-m") continue;
      if (argv[i + 1] == "vllm.entrypoints.openai.api_server")
        return RecognisedCommand{EngineKind::kVllm, i + 2,
                                 "python -m vllm.entrypoints.openai.api_server"};
      if (argv[i + 1] == "sglang.launch_server")
        return RecognisedCommand{EngineKind::kSglang, i + 2, "python -m sglang.launch_server"};
      break;
    }
  }
  if (prog == "infertel" && argv.size() > 1 && argv[1] == "sim") {
    auto engine = FlagValue(argv, 2, "--engine");
    if (!engine || *engine == "vllm")
      return RecognisedCommand{EngineKind::kVllm, 2, "infertel sim"};
    if (*engine == "sglang") return RecognisedCommand{EngineKind::kSglang, 2, "infertel sim"};
  }
  *why = "'" + argv[0] +
         "' is not an engine command infertel knows: expected `vllm serve …`, `python -m "
         "vllm.entrypoints.openai.api_server …`, `python -m sglang.launch_server …` or `sglang "
         "serve …`";
  return std::nullopt;
}

std::optional<std::string> FlagValue(const std::vector<std::string>& argv, std::size_t begin,
                                     std::string_view name) {
  std::optional<std::string> value;
  for (std::size_t i = begin; i < argv.size(); ++i) {
    std::string_view a = argv[i];
    if (a == name && i + 1 < argv.size()) {
      value = argv[i + 1];
      ++i;
    } else if (a.size() > name.size() && a.starts_with(name) && a[name.size()] == '=') {
      value = std::string(a.substr(name.size() + 1));
    }
  }
  return value;
}

bool HasFlag(const std::vector<std::string>& argv, std::size_t begin, std::string_view name) {
  for (std::size_t i = begin; i < argv.size(); ++i) {
    std::string_view a = argv[i];
    if (a == name || (a.size() > name.size() && a.starts_with(name) && a[name.size()] == '='))
      return true;
  }
  return false;
}

std::optional<Rewritten> Rewrite(
    const std::vector<std::string>& argv, const RecognisedCommand& cmd, const RewriteOptions& o,
    const std::vector<std::pair<std::string, std::string>>& environment, std::string* why) {
  Rewritten out;
  const bool sglang = cmd.engine == EngineKind::kSglang;
  // Where the user asked the engine to listen: vLLM binds every interface by default on 8000,
  // SGLang 127.0.0.1:30000.
  out.user_host = sglang ? "127.0.0.1" : "0.0.0.0";
  out.user_port = sglang ? 30000 : 8000;
  if (auto listen = FlagValue(argv, cmd.args_begin, "--listen")) {
    auto colon = listen->rfind(':');
    auto port = colon == std::string::npos ? std::nullopt : ParsePort(listen->substr(colon + 1));
    if (!port) {
      *why = "--listen: expected HOST:PORT, got '" + *listen + "'";
      return std::nullopt;
    }
    out.user_host = listen->substr(0, colon);
    out.user_port = *port;
  }
  if (auto host = FlagValue(argv, cmd.args_begin, "--host")) out.user_host = *host;
  if (auto port_text = FlagValue(argv, cmd.args_begin, "--port")) {
    auto port = ParsePort(*port_text);
    if (!port) {
      *why = "--port: expected a port number, got '" + *port_text + "'";
      return std::nullopt;
    }
    out.user_port = *port;
  }

  // The command without its listen flags, then the engine's private address.
  for (std::size_t i = 0; i < argv.size(); ++i) {
    std::string_view name;
    if (i >= cmd.args_begin && IsListenFlag(argv[i], &name)) {
      if (argv[i] == name) ++i;  // skip the separate value
      continue;
    }
    out.argv.push_back(argv[i]);
  }
  out.argv.insert(out.argv.end(),
                  {"--host", o.engine_host, "--port", std::to_string(o.engine_port)});
  if (!o.instrument) return out;

  auto add_flag = [&](std::string flag, std::optional<std::string> value = std::nullopt) {
    out.argv.push_back(flag);
    if (value) out.argv.push_back(*value);
    out.added.push_back(value ? flag + " " + *value : flag);
  };
  const std::string protocol = EnvValue(environment, otel_env::kOtlpTracesProtocol);
  const bool http = protocol == "http/protobuf";
  if (!sglang) {
    // vLLM: tracing is on only with an endpoint; its gRPC exporter takes a URL, its HTTP one
    // the full /v1/traces URL.
    if (!HasFlag(argv, cmd.args_begin, "--otlp-traces-endpoint"))
      add_flag("--otlp-traces-endpoint",
               http ? o.otlp_http_endpoint + "/v1/traces" : "http://" + o.otlp_grpc_endpoint);
  } else {
    if (!HasFlag(argv, cmd.args_begin, "--enable-trace")) add_flag("--enable-trace");
    // SGLang's gRPC endpoint is HOST:PORT; early releases spelled the flag --oltp-….
    if (!HasFlag(argv, cmd.args_begin, "--otlp-traces-endpoint") &&
        !HasFlag(argv, cmd.args_begin, "--oltp-traces-endpoint"))
      add_flag("--otlp-traces-endpoint",
               http ? o.otlp_http_endpoint + "/v1/traces" : o.otlp_grpc_endpoint);
    if (!HasFlag(argv, cmd.args_begin, "--enable-metrics")) add_flag("--enable-metrics");
    if (!HasFlag(argv, cmd.args_begin, "--enable-cache-report")) add_flag("--enable-cache-report");
  }
  auto add_env = [&](std::string_view name, std::string value) {
    if (value.empty() || InEnv(environment, name)) return;
    out.added.push_back(std::string(name) + "=" + value);
    out.env.emplace_back(std::string(name), std::move(value));
  };
  add_env(otel_env::kServiceName, o.service_name);
  add_env(otel_env::kResourceAttributes, o.resource_attributes);
  if (!sglang) add_env(otel_env::kBspScheduleDelay, o.vllm_export_delay_ms);
  if (sglang && o.sglang_trace_level)
    add_env("SGLANG_TRACE_LEVEL", std::to_string(*o.sglang_trace_level));
  return out;
}

}  // namespace infertel::launch
