#include "core/cpus.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <thread>

namespace infertel {
namespace {

TEST(CpusTest, CountsTheAffinityMaskNotTheMachine) {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  ASSERT_EQ(sched_getaffinity(0, sizeof(mine), &mine), 0);
  EXPECT_EQ(AllowedCpuCount(), CPU_COUNT(&mine));
  int first = 0;
  while (!CPU_ISSET(first, &mine)) ++first;
  int confined = 0;
  std::thread t([&] {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    if (sched_setaffinity(0, sizeof(one), &one) == 0) confined = AllowedCpuCount();
  });
  t.join();
  EXPECT_EQ(confined, 1);
}

}  // namespace
}  // namespace infertel
