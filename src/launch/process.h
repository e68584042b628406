#pragma once
// The engine as a child process of `infertel launch`: started with the caller's stdio (its
// output passes through), extra environment variables and signals unblocked; waited for
// with the signals the caller handles (app/signals.h).
//
// Thread-safety: one ChildProcess per launch, used from the thread that started it.

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace infertel::launch {

struct ExitStatus {
  int code = 0;                  // exit code, or 128 + signal when killed (as a shell reports it)
  int signal = 0;                // the signal that killed it, 0 when it exited
  std::string Describe() const;  // "exited with code 3" / "killed by signal 9 (SIGKILL)"
};

class ChildProcess {
 public:
  // Starts argv[0] (searched in PATH) with the current environment plus `env` (which
  // overrides). The child gets the default signal mask and dispositions even when the caller
  // blocks the signals it handles itself. False and *error when it cannot be started.
  bool Start(const std::vector<std::string>& argv,
             const std::vector<std::pair<std::string, std::string>>& env, std::string* error);
  pid_t pid() const { return pid_; }
  void Signal(int sig) const;
  // Reaps the child if it has exited (non-blocking).
  std::optional<ExitStatus> Poll();
  // Waits up to `timeout` for the child to exit; nullopt if it is still running.
  std::optional<ExitStatus> WaitFor(std::chrono::milliseconds timeout);

 private:
  pid_t pid_ = -1;
  std::optional<ExitStatus> status_;
};

}  // namespace infertel::launch
