#include "app/signals.h"

#include <pthread.h>
#include <csignal>
#include <ctime>

namespace infertel {

namespace {
sigset_t HandledSet() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM, SIGCHLD}) sigaddset(&set, s);
  return set;
}
}  // namespace

void BlockHandledSignals() {
  sigset_t set = HandledSet();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int WaitForHandledSignal(std::chrono::milliseconds timeout) {
  sigset_t set = HandledSet();
  timespec ts{static_cast<time_t>(timeout.count() / 1000),
              static_cast<long>((timeout.count() % 1000) * 1000000)};
  int sig = sigtimedwait(&set, nullptr, &ts);
  return sig < 0 ? 0 : sig;
}

SignalAction ActionOf(int sig) {
  switch (sig) {
    case SIGINT:
    case SIGTERM:
      return SignalAction::kStop;
    case SIGHUP:
      return SignalAction::kReload;
    case SIGUSR1:
    case SIGUSR2:
    case SIGALRM:
      return SignalAction::kIgnore;
    case SIGCHLD:
      return SignalAction::kChild;
    default:
      return SignalAction::kNone;
  }
}

}  // namespace infertel
