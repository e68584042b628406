#include "core/cpus.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
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

TEST(CpusTest, ReadsCgroupV2CpuMaxRoundedUp) {
  EXPECT_EQ(CpusOfCpuMax("max 100000\n"), 0);
  EXPECT_EQ(CpusOfCpuMax("100000 100000\n"), 1);
  EXPECT_EQ(CpusOfCpuMax("150000 100000"), 2);
  EXPECT_EQ(CpusOfCpuMax("50000 100000"), 1);
  EXPECT_EQ(CpusOfCpuMax(""), 0);
  EXPECT_EQ(CpusOfCpuMax("100000"), 0);
  EXPECT_EQ(CpusOfCpuMax("abc 100000"), 0);
  EXPECT_EQ(CpusOfCpuMax("100000 0"), 0);
}

TEST(CpusTest, ReadsCgroupV1CfsQuota) {
  EXPECT_EQ(CpusOfCfsQuota("-1\n", "100000\n"), 0);
  EXPECT_EQ(CpusOfCfsQuota("200000\n", "100000\n"), 2);
  EXPECT_EQ(CpusOfCfsQuota("", ""), 0);
}

class CgroupTree {
 public:
  CgroupTree()
      : root_(std::filesystem::temp_directory_path() /
              ("infertel-cgroup-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(root_);
  }
  ~CgroupTree() { std::filesystem::remove_all(root_); }
  void Write(const std::string& relative, const std::string& text) {
    const auto p = root_ / relative;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  std::string root() const { return root_.string(); }

 private:
  std::filesystem::path root_;
};

// A container limited to one CPU: its own cgroup, or one above it, holds the quota; the
// smallest on the way up counts.
TEST(CpusTest, FindsTheSmallestQuotaOnTheWayUpAV2Hierarchy) {
  CgroupTree t;
  t.Write("pod/agent/cpu.max", "max 100000\n");
  t.Write("pod/cpu.max", "100000 100000\n");
  t.Write("cpu.max", "400000 100000\n");
  EXPECT_EQ(CgroupCpuQuota("0::/pod/agent\n", t.root()), 1);
  EXPECT_EQ(CgroupCpuQuota("0::/\n", t.root()), 4);
  EXPECT_EQ(CgroupCpuQuota("0::/elsewhere\n", t.root()), 4);
}

TEST(CpusTest, FindsAV1QuotaUnderTheCpuController) {
  CgroupTree t;
  t.Write("cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "150000\n");
  t.Write("cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
  const std::string self = "5:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n0::/\n";
  EXPECT_EQ(CgroupCpuQuota(self, t.root()), 2);
  EXPECT_EQ(CgroupCpuQuota("4:cpuacct:/docker/abc\n", t.root()), 0);  // not the cpu controller
}

TEST(CpusTest, NoQuotaMeansTheAffinityMask) {
  CgroupTree t;
  EXPECT_EQ(CgroupCpuQuota("0::/x\n4:cpu:/y\ngarbage\n\n", t.root()), 0);
  EXPECT_GE(CpuBudget(), 1);
  EXPECT_LE(CpuBudget(), AllowedCpuCount());
}

}  // namespace
}  // namespace infertel
