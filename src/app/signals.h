#pragma once
// The signals a long-running command (agent, launch) handles itself, by waiting for them in
// one thread: none of them ends the process without a drain and a flush.
//   SIGINT, SIGTERM             graceful stop (docs/operations.md, "Shutdown and drain")
//   SIGHUP                      re-read the console file and poll the console URL now
//   SIGUSR1, SIGUSR2, SIGALRM   ignored (logged)
// SIGCHLD is in the set too, for launch mode (its engine child); others ignore it.

#include <chrono>

namespace infertel {

// Blocks the handled signals in the calling thread and every thread it starts afterwards;
// call before starting threads. A child started with posix_spawn gets them unblocked again
// (launch::ChildProcess).
void BlockHandledSignals();
// Waits up to `timeout` for a handled signal; its number, or 0 when the timeout passed.
int WaitForHandledSignal(std::chrono::milliseconds timeout);
// What a handled signal asks for.
enum class SignalAction { kNone, kStop, kReload, kIgnore, kChild };
SignalAction ActionOf(int sig);

}  // namespace infertel
