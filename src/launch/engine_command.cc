#include "launch/engine_command.h"

#include <fmt/format.h>

#include "core/otel_env.h"
#include "engines/registry.h"

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

namespace {

// The engine `argv` starts: `PROGRAM SUBCOMMAND …` or `python -m MODULE …` of a registered
// engine, or the simulator's `infertel sim [--engine NAME] …` (the registry's first engine
// without --engine).
std::optional<RecognisedCommand> RecogniseEngine(const std::vector<std::string>& argv) {
  std::string_view prog = Basename(argv[0]);
  const bool python = IsPython(argv[0]);
  std::size_t module_at = 0;  // index of the module name after -m
  if (python) {
    for (std::size_t i = 1; i + 1 < argv.size(); ++i) {
      if (argv[i] != "-m") continue;
      module_at = i + 1;
      break;
    }
  }
  for (std::size_t id = 0; id < engines::EngineCount(); ++id) {
    const EngineId engine{static_cast<std::uint8_t>(id)};
    const engines::LaunchCommands lc = engines::Profile(engine).launch_commands();
    if (prog == lc.program && argv.size() > 1 && argv[1] == lc.subcommand)
      return RecognisedCommand{engine, 2, fmt::format("{} {}", lc.program, lc.subcommand)};
    if (module_at != 0 && argv[module_at] == lc.python_module)
      return RecognisedCommand{engine, module_at + 1,
                               fmt::format("python -m {}", lc.python_module)};
  }
  if (prog == "infertel" && argv.size() > 1 && argv[1] == "sim") {
    auto name = FlagValue(argv, 2, "--engine");
    auto engine = name ? engines::FindEngine(*name) : std::optional<EngineId>(EngineId{});
    if (engine) return RecognisedCommand{*engine, 2, "infertel sim"};
  }
  return std::nullopt;
}

// "`vllm serve …`, `python -m vllm.entrypoints.openai.api_server …`, … or `sglang serve …`"
std::string KnownCommands() {
  std::vector<std::string> forms;
  for (std::size_t id = 0; id < engines::EngineCount(); ++id) {
    const auto lc = engines::Profile(EngineId{static_cast<std::uint8_t>(id)}).launch_commands();
    forms.push_back(fmt::format("`{} {} …`", lc.program, lc.subcommand));
    forms.push_back(fmt::format("`python -m {} …`", lc.python_module));
  }
  std::string out;
  for (std::size_t i = 0; i < forms.size(); ++i) {
    if (i > 0) out += i + 1 == forms.size() ? " or " : ", ";
    out += forms[i];
  }
  return out;
}

}  // namespace

std::optional<RecognisedCommand> Recognise(const std::vector<std::string>& argv, std::string* why) {
  if (argv.empty()) {
    *why = "no engine command after --";
    return std::nullopt;
  }
  if (auto cmd = RecogniseEngine(argv)) return cmd;
  *why = "'" + argv[0] + "' is not an engine command infertel knows: expected " + KnownCommands();
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
  const engines::EngineProfile& engine = engines::Profile(cmd.engine);
  // Where the user asked the engine to listen: the engine's own default unless it says.
  const auto [default_host, default_port] = engine.default_listen();
  out.user_host = std::string(default_host);
  out.user_port = default_port;
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

  engines::LaunchTelemetry t;
  t.otlp_grpc_endpoint = o.otlp_grpc_endpoint;
  t.otlp_http_endpoint = o.otlp_http_endpoint;
  t.http = EnvValue(environment, otel_env::kOtlpTracesProtocol) == "http/protobuf";
  t.tracing_level = o.tracing_level;
  t.export_delay_ms = o.export_delay_ms;
  t.settings = o.settings.get();
  const engines::LaunchAdditions adds = engine.LaunchTelemetryFor(
      t, [&](std::string_view flag) { return HasFlag(argv, cmd.args_begin, flag); });
  for (const auto& [flag, value] : adds.flags) {
    out.argv.push_back(flag);
    if (value) out.argv.push_back(*value);
    out.added.push_back(value ? flag + " " + *value : flag);
  }
  auto add_env = [&](std::string_view name, std::string value) {
    if (value.empty() || InEnv(environment, name)) return;
    out.added.push_back(std::string(name) + "=" + value);
    out.env.emplace_back(std::string(name), std::move(value));
  };
  add_env(otel_env::kServiceName, o.service_name);
  add_env(otel_env::kResourceAttributes, o.resource_attributes);
  for (const auto& [name, value] : adds.env) add_env(name, value);
  return out;
}

}  // namespace infertel::launch
