// infertel: an observability agent for LLM inference servers (vLLM, SGLang).

#include <absl/synchronization/mutex.h>
#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdio>

#include "app/commands.h"
#include "engines/registry.h"
#include "sim/sim_command.h"

#ifdef INFERTEL_JEMALLOC
// jemalloc gives freed pages back to the system after `dirty_decay_ms` (10 s), but only when
// the arena that freed them allocates again, or from a background thread. Without that thread
// the 16 MiB a refused gzip bomb inflated on the receiving thread stayed resident for good
// (RSS 22 MiB before, 31 MiB long after); with it, RSS is back within 12 s
// (tests/e2e/hostile_grpc.test.mjs, docs/limits.md "Memory after an attack"). jemalloc reads
// this symbol at start-up; MALLOC_CONF in the environment still wins.
extern "C" const char* malloc_conf;
const char* malloc_conf = "background_thread:true";
#endif

int main(int argc, char** argv) {
  // A peer closing a socket must surface as an error code on that socket, not kill us.
  std::signal(SIGPIPE, SIG_IGN);
  // Debian builds Abseil without NDEBUG, so its deadlock detection is on: every absl::Mutex
  // that gRPC takes (its call, transport and completion-queue locks) also updated a
  // process-wide lock-order graph under a global lock, with a stack trace for each mutex it
  // first saw. A release build of Abseil does none of it (docs/performance-history.md).
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);

  // The engines' keys and metric families join their tables before any is read.
  infertel::engines::RegisterEngines();

  std::string engines;  // "vLLM and SGLang"
  for (std::size_t i = 0; i < infertel::engines::EngineCount(); ++i) {
    if (i > 0) engines += i + 1 == infertel::engines::EngineCount() ? " and " : ", ";
    engines +=
        infertel::engines::Profile(infertel::EngineId{static_cast<std::uint8_t>(i)}).display_name();
  }
  CLI::App app{"infertel: traces and metrics for " + engines + ", from beside the engine"};
  app.require_subcommand(1);
  app.set_version_flag("--version", INFERTEL_VERSION);
  infertel::AddAgentCommand(app);
  infertel::AddSimCommand(app);
  infertel::AddDemoCommand(app);
  infertel::AddTracesCommand(app);
  infertel::AddSpansCommand(app);
  infertel::AddConfigCommand(app);
  infertel::AddMetricsCommand(app);
  infertel::AddSloCommand(app);
  infertel::AddUiCommand(app);
  infertel::AddLaunchCommand(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return 0;
}
