#pragma once
// How many CPUs this process may run on: its affinity mask (taskset, a cgroup's cpuset as
// the kernel applies it to the mask), not the machine's count; and how much CPU time it may
// use, under a cgroup's CPU quota (a container's CPU limit).

#include <string>
#include <string_view>

namespace infertel {

// The CPUs in the calling thread's affinity mask; the machine's online count when the mask
// cannot be read; never below 1.
int AllowedCpuCount() noexcept;

// A cgroup CPU quota in CPUs' worth of time, rounded up; 0 for none (unlimited, absent or not
// understood). cgroup v2's cpu.max ("max 100000", "150000 100000"), and v1's
// cpu.cfs_quota_us ("-1" for none) over cpu.cfs_period_us.
int CpusOfCpuMax(std::string_view cpu_max) noexcept;
int CpusOfCfsQuota(std::string_view quota_us, std::string_view period_us) noexcept;
// The smallest quota on the process's cgroup or any cgroup above it, given the text of
// /proc/self/cgroup and where the cgroup file systems are mounted (`root`: /sys/fs/cgroup,
// v2 there, v1 under cpu/ or cpu,cpuacct/); 0 for none.
int CgroupCpuQuota(std::string_view proc_self_cgroup, const std::string& root);

// The CPUs' worth this process can use at once: AllowedCpuCount(), or a smaller quota
// (a container limited to one CPU on a larger machine counts 1). Never below 1.
int CpuBudget() noexcept;

}  // namespace infertel
