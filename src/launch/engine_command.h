#pragma once
// The engine command of `infertel launch -- <command>`: which engine it starts, where the user
// asked it to listen, and the command rewritten so that the engine listens on a private
// loopback port behind the gateway and sends its telemetry to the agent.
//
// Pure functions; thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/engine_kind.h"

namespace infertel::launch {

struct RecognisedCommand {
  EngineKind engine = EngineKind::kVllm;
  // Index in argv of the first engine argument (after `serve`, the module name, or `sim`).
  std::size_t args_begin = 0;
  std::string form;  // how it was recognised, e.g. "vllm serve", "python -m sglang.launch_server"
};

// Recognises: `vllm serve …`, `python[3[.x]] -m vllm.entrypoints.openai.api_server …`,
// `python[3[.x]] -m sglang.launch_server …`, `sglang serve …`, and the simulator's
// `infertel sim --engine vllm|sglang …` (any path to the binaries). nullopt otherwise, with
// *why set.
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
  std::optional<int> sglang_trace_level;  // SGLANG_TRACE_LEVEL, when the user set none
  // OTEL_BSP_SCHEDULE_DELAY for vLLM, when the user set none; empty: add nothing. vLLM's span
  // processor takes the OpenTelemetry SDK's 5 s by default, so an engine span reached the
  // backend about 1 s after its request under load and up to 5 s after it when idle; SGLang
  // passes its own 500 ms to its processor and ignores the variable.
  std::string vllm_export_delay_ms = "500";
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
