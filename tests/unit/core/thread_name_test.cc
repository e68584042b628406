#include "core/thread_name.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <map>
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

// "policy", "prio" and "se.slice" (Linux 6.12+) of /proc/self/task/TID/sched.
std::map<std::string, std::string> SchedOf(long tid) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/sched");
  std::map<std::string, std::string> out;
  for (std::string line; std::getline(in, line);) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    auto trim = [](std::string v) {
      v.erase(0, v.find_first_not_of(' '));
      v.erase(v.find_last_not_of(' ') + 1);
      return v;
    };
    out[trim(line.substr(0, colon))] = trim(line.substr(colon + 1));
  }
  return out;
}

TEST(ThreadNameTest, ShortSlicesKeepPolicyAndNiceAndStayWithTheThread) {
  std::map<std::string, std::string> before, after, sibling;
  bool accepted = false;
  std::thread t([&] {
    const long tid = static_cast<long>(syscall(SYS_gettid));
    before = SchedOf(tid);
    accepted = AskForShortSlices();
    after = SchedOf(tid);
  });
  t.join();
  std::thread u([&] { sibling = SchedOf(static_cast<long>(syscall(SYS_gettid))); });
  u.join();
  ASSERT_TRUE(before.count("policy")) << "no /proc/self/task/TID/sched";
  EXPECT_EQ(after["policy"], before["policy"]);
  EXPECT_EQ(after["prio"], before["prio"]);
  // Kernels with EEVDF's custom slices (6.12+) show the slice; older ones have no such line
  // and may refuse or ignore the request.
  if (before.count("se.slice") && before["policy"] == "0") {  // SCHED_OTHER
    EXPECT_TRUE(accepted);
    EXPECT_EQ(after["se.slice"], "100000");
    EXPECT_EQ(sibling["se.slice"], before["se.slice"]) << "only the calling thread asked";
  }
}

}  // namespace
}  // namespace infertel
