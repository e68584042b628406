// `infertel sim`: runs the engine simulator until SIGINT/SIGTERM.

#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <iostream>

#include "sim/sim_command.h"
#include "sim/sim_server.h"

namespace infertel {
namespace {

int g_signal_pipe[2] = {-1, -1};

void OnSignal(int) {
  char b = 1;
  // Async-signal-safe; a full pipe only means a stop is already pending.
  [[maybe_unused]] ssize_t n = write(g_signal_pipe[1], &b, 1);
}

struct SimFlags {
  sim::SimOptions options;
  std::string listen;
  std::string host;
  int port = -1;
  int shutdown_timeout_s = 0;  // vLLM's --shutdown-timeout
};

bool SplitHostPort(const std::string& s, std::string* host, int* port) {
  auto colon = s.rfind(':');
  if (colon == std::string::npos) return false;
  *host = s.substr(0, colon);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']')
    *host = host->substr(1, host->size() - 2);
  try {
    std::size_t used = 0;
    *port = std::stoi(s.substr(colon + 1), &used);
    return used == s.size() - colon - 1 && *port >= 0 && *port <= 65535;
  } catch (...) {
    return false;
  }
}

void RunSim(SimFlags& f) {
  sim::SimOptions& o = f.options;
  if (!f.listen.empty()) {
    int port = 0;
    if (!SplitHostPort(f.listen, &o.host, &port)) {
      std::cerr << "infertel sim: --listen must be HOST:PORT, got '" << f.listen << "'\n";
      throw CLI::RuntimeError(2);
    }
    o.port = static_cast<std::uint16_t>(port);
  } else {
    if (!f.host.empty()) o.host = f.host;
    if (f.port > 65535) {
      std::cerr << "infertel sim: bad --port\n";
      throw CLI::RuntimeError(2);
    }
    // Each engine's own default port.
    o.port =
        static_cast<std::uint16_t>(f.port < 0 ? (o.engine == "sglang" ? 30000 : 8000) : f.port);
  }

  // Threads started by libraries before this point may receive the signal, so a handler
  // (not sigwait with a blocked mask) turns it into a byte on a pipe.
  if (pipe(g_signal_pipe) != 0) {
    std::cerr << "infertel sim: pipe failed\n";
    throw CLI::RuntimeError(1);
  }
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  std::string error;
  auto server = sim::SimServer::Start(o, &error);
  if (!server) {
    std::cerr << "infertel sim: " << error << "\n";
    throw CLI::RuntimeError(1);
  }
  std::string shown_host = o.host.find(':') != std::string::npos ? "[" + o.host + "]" : o.host;
  std::printf("infertel sim: listening on http://%s:%u\n", shown_host.c_str(),
              static_cast<unsigned>(server->port()));
  std::fflush(stdout);
  char byte;
  while (read(g_signal_pipe[0], &byte, 1) < 0 && errno == EINTR) {
  }
  if (f.shutdown_timeout_s > 0) server->Drain(std::chrono::seconds(f.shutdown_timeout_s));
  server->Stop();
}

// SGLang's server arguments (facts/sglang.md); they apply with --engine sglang.
void AddSglangFlags(CLI::App* cmd, sim::SglangSimOptions& g) {
  cmd->add_option("--sglang-version", g.version, "SGLang release imitated (spans, /metrics era)")
      ->capture_default_str();
  cmd->add_option("--served-model-name", g.served_model_name,
                  "SGLang: served model name (default: the model path)");
  cmd->add_flag("--enable-trace", g.enable_trace, "SGLang: native OpenTelemetry request tracing");
  cmd->add_option("--trace-modules", g.trace_modules, "SGLang: traced modules")
      ->capture_default_str();
  cmd->add_flag("--enable-metrics", g.enable_metrics, "SGLang: serve Prometheus /metrics");
  cmd->add_flag("--enable-metrics-for-all-schedulers", g.enable_metrics_for_all_schedulers,
                "SGLang: scheduler metrics from every TP rank");
  cmd->add_option("--decode-log-interval", g.decode_log_interval,
                  "SGLang: decode batches between scheduler metric refreshes")
      ->capture_default_str();
  cmd->add_flag("--enable-cache-report", g.enable_cache_report,
                "SGLang: usage.prompt_tokens_details.cached_tokens");
  cmd->add_option("--tp,--tp-size", g.tp_size, "SGLang: tensor-parallel size (one scheduler each)")
      ->capture_default_str();
  cmd->add_option("--stream-interval", g.stream_interval, "SGLang: tokens per streamed chunk")
      ->capture_default_str();
  cmd->add_flag("--stream-response-default-include-usage", g.stream_response_default_include_usage,
                "SGLang: streams end with a usage chunk unless the client says otherwise");
  cmd->add_flag("--incremental-streaming-output", g.incremental_streaming_output,
                "SGLang: /generate chunks carry only the new text");
  cmd->add_flag("--log-requests", g.log_requests, "SGLang: request logs on stderr");
  cmd->add_option("--log-requests-level", g.log_requests_level,
                  "SGLang: request log detail 0-3 (default: the release's)");
  cmd->add_option("--log-requests-format", g.log_requests_format, "SGLang: text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cmd->add_option("--log-level", g.log_level, "SGLang: log level")->capture_default_str();
  cmd->add_option("--disaggregation-mode", g.disaggregation_mode,
                  "SGLang: PD role null, prefill or decode")
      ->check(CLI::IsMember({"null", "prefill", "decode"}))
      ->capture_default_str();
  cmd->add_option("--speculative-algorithm", g.speculative_algorithm,
                  "SGLang: speculative decoding (EAGLE, EAGLE3, NEXTN, STANDALONE, NGRAM)");
  cmd->add_option("--speculative-num-steps", g.speculative_num_steps, "SGLang: draft steps")
      ->capture_default_str();
  cmd->add_option("--speculative-eagle-topk", g.speculative_eagle_topk, "SGLang: draft top-k")
      ->capture_default_str();
  cmd->add_option("--speculative-num-draft-tokens", g.speculative_num_draft_tokens,
                  "SGLang: tokens verified per step (drafts + 1)")
      ->capture_default_str();
  cmd->add_option("--tool-call-parser", g.tool_call_parser,
                  "SGLang: tool-call parser (tool calls need one)");
  cmd->add_option("--reasoning-parser", g.reasoning_parser,
                  "SGLang: reasoning parser (output starts with reasoning_content)");
  cmd->add_flag("--disable-overlap-schedule", g.disable_overlap_schedule,
                "SGLang: no overlap scheduler (a decode_waiting stage appears)");
  cmd->add_option("--weight-version", g.weight_version, "SGLang: reported weight version")
      ->capture_default_str();
  cmd->add_option("--stream-abort-delay-ms", g.stream_abort_delay_ms,
                  "Simulator: delay before a streamed request whose client left is aborted "
                  "(SGLang: 2 s)")
      ->capture_default_str();
}

}  // namespace

void AddSimCommand(CLI::App& app) {
  auto flags = std::make_shared<SimFlags>();
  sim::SimOptions& o = flags->options;
  sim::EngineConfig& e = o.engine_config;
  CLI::App* cmd =
      app.add_subcommand("sim", "Run the engine simulator (a stand-in for vLLM or SGLang)");
  cmd->add_option("--engine", o.engine, "Engine to simulate")
      ->check(CLI::IsMember({"vllm", "sglang"}))
      ->capture_default_str();
  cmd->add_option("--listen", flags->listen, "Listen address HOST:PORT (port 0: any)");
  cmd->add_option("--host", flags->host,
                  "Listen host (the engines' flag; alternative to --listen)");
  cmd->add_option("--port", flags->port,
                  "Listen port (the engines' flag; alternative to --listen; default 8000 for vLLM, "
                  "30000 for SGLang)");
  cmd->add_option("--model,--model-path", o.model,
                  "Model (vLLM: served name; SGLang: --model-path, the served name unless "
                  "--served-model-name)")
      ->capture_default_str();
  cmd->add_option("--seed", e.seed, "Seed for generated text")->capture_default_str();
  cmd->add_option("--shutdown-timeout", flags->shutdown_timeout_s,
                  "On SIGTERM/SIGINT: seconds the requests being served may take to finish, no "
                  "new connection accepted meanwhile (vLLM's flag; 0: cut them at once)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--speed", e.speed, "Speed factor dividing every step time")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--max-num-seqs,--max-running-requests", e.max_num_seqs,
                  "Cap on running sequences")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--num-kv-blocks", e.num_kv_blocks, "KV cache blocks")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--block-size", e.block_size, "Tokens per KV block")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--max-num-batched-tokens,--chunked-prefill-size", e.max_num_batched_tokens,
                  "Token budget per step")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--step-fixed-ms", e.step_fixed_ms, "Fixed cost per step (ms)")
      ->capture_default_str();
  cmd->add_option("--prefill-ms-per-token", e.prefill_ms_per_token, "Prefill cost per token (ms)")
      ->capture_default_str();
  cmd->add_option("--decode-ms-per-token", e.decode_ms_per_token,
                  "Decode cost per running sequence per step (ms)")
      ->capture_default_str();
  cmd->add_option("--max-model-len,--context-length", e.max_model_len, "Context length")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_flag("--enable-prompt-tokens-details", o.enable_prompt_tokens_details,
                "Report usage.prompt_tokens_details.cached_tokens");
  cmd->add_option("--engine-version", o.engine_version, "Surface generation: v1 or v0")
      ->check(CLI::IsMember({"v1", "v0"}))
      ->capture_default_str();
  cmd->add_option("--vllm-version", o.vllm_version,
                  "vLLM release imitated in v1 mode (/version, deprecated metric names)")
      ->capture_default_str();
  cmd->add_option("--show-hidden-metrics-for-version", o.show_hidden_metrics_for_version,
                  "Re-enable metrics hidden since the given version (vLLM's flag)");
  cmd->add_option("--otlp-traces-endpoint", o.otlp_traces_endpoint,
                  "Native spans over OTLP to this endpoint (vLLM: llm_request; SGLang: with "
                  "--enable-trace, default localhost:4317) "
                  "(OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=grpc|http/protobuf)");
  cmd->add_option("--collect-detailed-traces", o.collect_detailed_traces,
                  "Detailed V0 span timings: model, worker, all (comma-separated)");
  cmd->add_flag("--drop-trace-context", o.drop_trace_context,
                "Ignore the incoming traceparent: native spans start new traces (as some vLLM "
                "releases do)");
  cmd->add_option("--kv-role", o.kv_role, "PD role: kv_producer, kv_consumer or kv_both")
      ->check(CLI::IsMember({"kv_producer", "kv_consumer", "kv_both"}));
  cmd->add_option("--kv-transfer-config", o.kv_transfer_config,
                  "vLLM's KV-transfer config as JSON; only kv_role is used");
  AddSglangFlags(cmd, o.sglang);
  cmd->callback([flags] { RunSim(*flags); });
}

}  // namespace infertel
