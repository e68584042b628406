#include "core/thread_name.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <thread>

namespace infertel {
namespace {

std::string KernelName(long tid) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

TEST(ThreadNameTest, TheKernelShowsTheName) {
  std::string seen, read_back;
  std::thread t([&] {
    NameThisThread("assembler");
    seen = KernelName(static_cast<long>(syscall(SYS_gettid)));
    read_back = ThisThreadName();
  });
  t.join();
  EXPECT_EQ(seen, "assembler");
  EXPECT_EQ(read_back, "assembler");
}

TEST(ThreadNameTest, LongNamesAreCutAtFifteenBytes) {
  std::string seen;
  std::thread t([&] {
    NameThisThread("traces:otlp_grpc_backup");
    seen = ThisThreadName();
  });
  t.join();
  EXPECT_EQ(seen, "traces:otlp_grp");
}

}  // namespace
}  // namespace infertel
