#pragma once
// The engine command of `infertel launch -- <command>`: which engine it starts, where the user
// asked it to listen, and the command rewritten so that the engine listens on a private
// loopback port behind the gateway and sends its telemetry to the agent.
//
// Pure functions; thread-safe.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/engine_id.h"
#include "engines/profile.h"

namespace infertel::launch {

struct RecognisedCommand {
  EngineId engine;
  // Index in argv of the first engine argument (after `serve`, the module name, or `sim`).
  std::size_t args_begin = 0;
  std::string form;  // how it was recognised, e.g. "PROGRAM serve", "python -m MODULE"
};

// Recognises the commands of every registered engine (EngineProfile::launch_commands: `PROGRAM
// SUBCOMMAND …` and `python[3[.x]] -m MODULE …`) and the simulator's `infertel sim --engine
// NAME …` (any path to the binaries). nullopt otherwise, with *why set.
std::optional<RecognisedCommand> Recognise(const std::vector<std::string>& argv, std::string* why);

// The value of a flag given as `--name value` or `--name=value` (the last one wins, as with
// argparse); nullopt when absent.
std::optional<std::string> FlagValue(const std::vector<std::string>& argv, std::size_t begin,
                                     std::string_view name);
bool HasFlag(const std::vector<std::string>& argv, std::size_t begin, std::string_view name);

struct RewriteOptions {
  std::string engine_host = "127.0.0.1";  // where the engine is moved
  std::uint16_t engine_port = 0;
  bool instrument = true;  // C1 plugin switch: false = add no telemetry flags or variables
  // The agent's OTLP receiver: gRPC HOST:PORT (both engines default to gRPC).
  std::string otlp_grpc_endpoint;
  std::string otlp_http_endpoint;   // the HTTP receiver, http://HOST:PORT
  std::string service_name;         // OTEL_SERVICE_NAME for the engine, when the user set none
  std::string resource_attributes;  // OTEL_RESOURCE_ATTRIBUTES, likewise
  // The engine's tracing level, for an engine that takes it at start (its profile decides
  // how), when the user set none.
  std::optional<int> tracing_level;
  // The agent's switches, whose log switches the engine maps to its flags (null: none).
  std::shared_ptr<const config::Settings> settings;
  // The batch delay of the engine's span processor, for an engine that reads it from the
  // environment, when the user set none; empty: add nothing. The OpenTelemetry SDK's default
  // is 5 s, so an engine span reached the backend about 1 s after its request under load and
  // up to 5 s after it when idle.
  std::string export_delay_ms = "500";
};

struct Rewritten {
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;  // variables to set for the engine
  std::string user_host;  // where the user asked the engine to listen (the gateway's address)
  std::uint16_t user_port = 0;
  std::vector<std::string> added;  // what was added, for the one start-up line
};

// Rewrites the command. `environment` tells which variables the user already set (they are
// kept). Fails (nullopt, *why) on an unparsable --port.
std::optional<Rewritten> Rewrite(
    const std::vector<std::string>& argv, const RecognisedCommand& cmd,
    const RewriteOptions& options,
    const std::vector<std::pair<std::string, std::string>>& environment, std::string* why);

}  // namespace infertel::launch
