#pragma once
// How many CPUs this process may run on: its affinity mask (taskset, a cgroup's cpuset as
// the kernel applies it to the mask), not the machine's count.

namespace infertel {

// The CPUs in the calling thread's affinity mask; the machine's online count when the mask
// cannot be read; never below 1.
int AllowedCpuCount() noexcept;

}  // namespace infertel
