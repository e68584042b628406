// The engine child process: environment, exit codes, signals.

#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include "app/signals.h"
#include "launch/process.h"

namespace infertel::launch {
namespace {

TEST(ChildProcess, ExitCodeAndEnvironment) {
  ChildProcess p;
  std::string err;
  ASSERT_TRUE(p.Start({"sh", "-c", "test \"$LAUNCH_TEST_VAR\" = hello && exit 7"},
                      {{"LAUNCH_TEST_VAR", "hello"}}, &err))
      << err;
  auto st = p.WaitFor(std::chrono::seconds(10));
  ASSERT_TRUE(st);
  EXPECT_EQ(st->code, 7);
  EXPECT_EQ(st->signal, 0);
  EXPECT_EQ(st->Describe(), "exited with code 7");
}

TEST(ChildProcess, SignalsReachTheChildEvenWhenBlockedHere) {
  BlockHandledSignals();  // the launcher's state: the child must still get default handling
  ChildProcess p;
  std::string err;
  ASSERT_TRUE(p.Start({"sleep", "30"}, {}, &err)) << err;
  EXPECT_FALSE(p.WaitFor(std::chrono::milliseconds(100)));
  p.Signal(SIGTERM);
  auto st = p.WaitFor(std::chrono::seconds(10));
  ASSERT_TRUE(st);
  EXPECT_EQ(st->signal, SIGTERM);
  EXPECT_EQ(st->code, 128 + SIGTERM);
  EXPECT_NE(st->Describe().find("SIGTERM"), std::string::npos);
  // The SIGCHLD is pending for the launcher's wait.
  EXPECT_EQ(WaitForHandledSignal(std::chrono::milliseconds(100)), SIGCHLD);
}

// The engine gets stdio only: a listening socket of the agent left open in it would keep
// taking connections after the agent closed its own (a graceful stop).
TEST(ChildProcess, OnlyStdioIsInherited) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);  // without O_CLOEXEC, as asio opens its sockets
  ChildProcess p;
  std::string err;
  const std::string check = "[ -e /proc/self/fd/" + std::to_string(fds[0]) + " ] && exit 9; exit 0";
  ASSERT_TRUE(p.Start({"sh", "-c", check}, {}, &err)) << err;
  auto st = p.WaitFor(std::chrono::seconds(10));
  ::close(fds[0]);
  ::close(fds[1]);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->code, 0) << "fd " << fds[0] << " was inherited";
}

TEST(ChildProcess, MissingProgram) {
  ChildProcess p;
  std::string err;
  EXPECT_FALSE(p.Start({"/nonexistent/engine-binary"}, {}, &err));
  EXPECT_NE(err.find("cannot start"), std::string::npos);
}

}  // namespace
}  // namespace infertel::launch
