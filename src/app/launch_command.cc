// `infertel launch [agent options] -- <engine command>`: starts the agent and the engine
// together. The engine moves to a free loopback port behind the gateway, which takes the
// address the user asked the engine for; the engine's own telemetry is turned on towards the
// agent's receiver (only what the user did not set); signals are forwarded and infertel exits
// with the engine's exit code.

#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <cstdio>
#include <thread>

#include "app/agent_flags.h"
#include "app/commands.h"
#include "app/signals.h"
#include "config/settings.h"
#include "engines/registry.h"
#include "http/sync_client.h"
#include "launch/engine_command.h"
#include "launch/process.h"

extern char** environ;

namespace infertel {
namespace {

constexpr std::string_view kWho = "infertel launch";

struct LaunchFlags {
  AgentFlags agent;
  std::vector<std::string> command;
  int stop_timeout_s = 30;
};

[[noreturn]] void FailLaunch(int code, const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", std::string(kWho).c_str(), message.c_str());
  throw CLI::RuntimeError(code);
}

// A loopback port nobody listens on now (the engine binds it a moment later).
std::uint16_t FreeLoopbackPort() {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor a(
      io, boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  return a.local_endpoint().port();
}

std::vector<std::pair<std::string, std::string>> Environment() {
  std::vector<std::pair<std::string, std::string>> out;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string_view::npos)
      out.emplace_back(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
  }
  return out;
}

struct EngineState {
  std::atomic<std::uint64_t> up{0};         // 1 while the engine answers /health
  std::atomic<std::uint64_t> starts{0};     // engine processes started
  std::atomic<std::uint64_t> crashes{0};    // exits infertel did not ask for
  std::atomic<std::uint64_t> exit_code{0};  // of the last exit
};

// The one start-up line: where the engine went and what was added to its command.
void PrintMoved(const launch::RecognisedCommand& cmd, const launch::RewriteOptions& ro,
                const launch::Rewritten& probe, const launch::Rewritten& rewritten) {
  std::string moved = fmt::format("engine ({}) moved to 127.0.0.1:{} behind the gateway on {}:{}",
                                  cmd.form, ro.engine_port, probe.user_host, probe.user_port);
  if (!ro.instrument) {
    std::printf("%s: %s; plugin off: nothing added, the gateway only forwards\n",
                std::string(kWho).c_str(), moved.c_str());
  } else if (rewritten.added.empty()) {
    std::printf("%s: %s; added nothing (already set by you)\n", std::string(kWho).c_str(),
                moved.c_str());
  } else {
    std::string added;
    for (const auto& a : rewritten.added) added += (added.empty() ? "" : ", ") + a;
    std::printf("%s: %s; added %s\n", std::string(kWho).c_str(), moved.c_str(), added.c_str());
  }
  std::fflush(stdout);
}

void RegisterEngineStats(Agent& agent, EngineState* state) {
  using T = StatsRegistry::Type;
  agent.stats().Add("infertel_engine_up", "1 while the launched engine answers /health", T::kGauge,
                    "", &state->up);
  agent.stats().Add("infertel_engine_starts", "Engine processes started by launch mode",
                    T::kCounter, "", &state->starts);
  agent.stats().Add("infertel_engine_crashes",
                    "Engine exits infertel did not ask for (crashes, kills)", T::kCounter, "",
                    &state->crashes);
  agent.stats().Add("infertel_engine_exit_code", "Exit code of the engine's last exit", T::kGauge,
                    "", &state->exit_code);
}

// Health, on a thread of its own until `stop`: the gateway forwards once the engine answers
// /health with 200, and answers 503 while it does not.
void FollowHealth(Agent& agent, std::uint16_t engine_port, EngineState* state,
                  const std::atomic<bool>& stop) {
  http::SyncTimeouts to;
  to.connect = to.write = to.read = std::chrono::milliseconds(2000);
  http::SyncClient client(to);
  auto url = *http::ParseUrl(fmt::format("http://127.0.0.1:{}/health", engine_port));
  auto started = std::chrono::steady_clock::now();
  bool ready = false;
  while (!stop.load()) {
    http::SyncResponse resp;
    std::string err;
    bool ok = client.Send("GET", url, {}, "", "", &resp, &err, 1u << 20) && resp.status == 200;
    if (!ok) client.Close();
    if (ok != ready) {
      ready = ok;
      agent.SetUpstreamReady(0, ok);
      state->up = ok ? 1 : 0;
      if (ok) {
        auto s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started);
        spdlog::info("launch: engine healthy after {:.1f} s; forwarding", s.count());
      } else {
        spdlog::warn("launch: engine stopped answering /health; answering 503 meanwhile");
      }
    }
    for (int i = 0; i < (ready ? 20 : 2) && !stop.load(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

// Until the engine exits: a stop signal goes to the engine (then SIGKILL after
// `stop_timeout_s`), reload and ignored signals to the agent. *asked_to_stop: a stop signal came.
launch::ExitStatus Supervise(launch::ChildProcess& child, AgentRun& run, int stop_timeout_s,
                             bool* asked_to_stop) {
  std::optional<launch::ExitStatus> status;
  auto deadline = std::chrono::steady_clock::time_point::max();
  while (!status) {
    int sig = WaitForHandledSignal(std::chrono::milliseconds(200));
    const SignalAction action = ActionOf(sig);
    if (action == SignalAction::kStop) {
      if (!*asked_to_stop) {
        spdlog::info("launch: SIG{} received; forwarding it to the engine", sigabbrev_np(sig));
        deadline = std::chrono::steady_clock::now() + std::chrono::seconds(stop_timeout_s);
        // New connections are refused from now on; requests in flight go on while the engine
        // finishes them, and the drain timeout counts from here.
        run.agent->StopAccepting();
      }
      *asked_to_stop = true;
      child.Signal(sig);
    } else if (action == SignalAction::kReload || action == SignalAction::kIgnore) {
      run.OnControlSignal(sig);  // the engine does not get them: SIGHUP would end some engines
    }
    status = child.Poll();
    if (!status && std::chrono::steady_clock::now() > deadline) {
      spdlog::warn("launch: engine still running {} s after the signal; killing it",
                   stop_timeout_s);
      child.Signal(SIGKILL);
      deadline = std::chrono::steady_clock::time_point::max();
    }
  }
  return *status;
}

void Run(const LaunchFlags& f) {
  BlockHandledSignals();  // before any thread starts: threads inherit the mask
  std::string why;
  auto cmd = launch::Recognise(f.command, &why);
  if (!cmd) FailLaunch(2, why);
  const auto environment = Environment();

  // Where the user wanted the engine: the gateway takes that address.
  launch::RewriteOptions ro;
  ro.engine_port = FreeLoopbackPort();
  auto probe = launch::Rewrite(f.command, *cmd, ro, environment, &why);
  // A free port may be the very one the user gave the engine (nothing listens there yet), which
  // the gateway takes: the engine then needs another.
  for (int i = 0; i < 8 && probe && probe->user_port == ro.engine_port; ++i) {
    ro.engine_port = FreeLoopbackPort();
    probe = launch::Rewrite(f.command, *cmd, ro, environment, &why);
  }
  if (!probe) FailLaunch(2, why);

  AgentFlags af = f.agent;
  // A launch has its own receivers on free ports unless the user chose addresses.
  if (af.receiver_grpc == "127.0.0.1:4317") af.receiver_grpc = "127.0.0.1:0";
  if (af.receiver_http == "127.0.0.1:4318") af.receiver_http = "127.0.0.1:0";
  af.upstream.clear();
  auto run = StartAgentFromFlags(af, kWho, [&](AgentOptions& o) {
    gateway::UpstreamConfig uc;
    uc.name = "default";
    uc.engine = cmd->engine;
    uc.url = *http::ParseUrl(fmt::format("http://127.0.0.1:{}", ro.engine_port));
    uc.listen = {probe->user_host, probe->user_port};
    uc.pd_role = af.pd_role;
    uc.engine_version = af.engine_version;
    uc.data_parallel_size = af.data_parallel_size;
    uc.metrics_url = af.metrics_url;
    uc.start_ready = false;  // 503 until the engine answers /health
    o.upstreams.insert(o.upstreams.begin(), uc);
  });
  Agent& agent = *run->agent;

  auto settings = agent.config()->Current();
  const engines::EngineSwitches switches = engines::Profile(cmd->engine).switches();
  ro.instrument = engines::SwitchOn(*settings, switches.enabled);
  ro.otlp_grpc_endpoint = fmt::format("127.0.0.1:{}", agent.ReceiverGrpcPort());
  ro.otlp_http_endpoint = fmt::format("http://127.0.0.1:{}", agent.ReceiverHttpPort());
  // Engine spans and entry spans are one application: the agent's service name.
  for (const auto& kv : agent.resource().attributes())
    if (kv.key() == "service.name") ro.service_name = kv.value().string_value();
  if (switches.tracing_level)
    ro.tracing_level = static_cast<int>(settings->GetInt(*switches.tracing_level));
  ro.settings = settings;
  if (ro.otlp_grpc_endpoint.ends_with(":0") && ro.otlp_http_endpoint.ends_with(":0"))
    ro.instrument = false;  // no receiver: nowhere to send engine spans
  auto rewritten = launch::Rewrite(f.command, *cmd, ro, environment, &why);
  if (!rewritten) FailLaunch(2, why);

  PrintAgentAddresses(agent, kWho);
  PrintMoved(*cmd, ro, *probe, *rewritten);

  EngineState state;
  RegisterEngineStats(agent, &state);

  launch::ChildProcess child;
  if (!child.Start(rewritten->argv, rewritten->env, &why)) {
    run->Stop();
    FailLaunch(127, why);
  }
  state.starts = 1;

  // Health: the gateway forwards once the engine answers /health with 200.
  std::atomic<bool> stop_health{false};
  std::thread health([&] { FollowHealth(agent, ro.engine_port, &state, stop_health); });

  bool asked_to_stop = false;
  std::optional<launch::ExitStatus> status =
      Supervise(child, *run, f.stop_timeout_s, &asked_to_stop);
  state.up = 0;
  state.exit_code = static_cast<std::uint64_t>(status->code);
  agent.SetUpstreamReady(0, false);
  if (asked_to_stop) {
    spdlog::info("launch: engine {}", status->Describe());
  } else {
    state.crashes.fetch_add(1);
    spdlog::error("launch: engine {} unexpectedly; stopping", status->Describe());
  }
  stop_health = true;
  health.join();
  run->Stop();
  std::fflush(stdout);
  if (status->code != 0) throw CLI::RuntimeError(status->code);
}

// The engines' commands as launch recognises them, for the usage line: "vllm serve MODEL … |
// python -m vllm.entrypoints.openai.api_server … | …", from each engine's profile.
std::string EngineCommandForms() {
  std::string out;
  for (std::size_t i = 0; i < engines::EngineCount(); ++i) {
    const engines::LaunchCommands c =
        engines::Profile(EngineId{static_cast<std::uint8_t>(i)}).launch_commands();
    if (!c.program.empty())
      out += fmt::format("{}{} {} MODEL …", out.empty() ? "" : " | ", c.program, c.subcommand);
    if (!c.python_module.empty())
      out += fmt::format("{}python -m {} …", out.empty() ? "" : " | ", c.python_module);
  }
  return out;
}

}  // namespace

void AddLaunchCommand(CLI::App& app) {
  auto flags = std::make_shared<LaunchFlags>();
  CLI::App* sub = app.add_subcommand(
      "launch",
      "Start an engine behind the agent with its telemetry on: infertel launch [agent options] "
      "-- " +
          EngineCommandForms());
  AddAgentFlags(sub, &flags->agent);
  sub->add_option("--engine-stop-timeout", flags->stop_timeout_s,
                  "Seconds the engine has to exit after a forwarded signal before it is killed")
      ->capture_default_str();
  sub->add_option("command", flags->command, "The engine command, after --")->required();
  sub->callback([flags] { Run(*flags); });
}

}  // namespace infertel
