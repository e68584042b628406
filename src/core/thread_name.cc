#include "core/thread_name.h"

#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>

namespace infertel {

namespace {
constexpr std::size_t kMaxName = 15;  // TASK_COMM_LEN - 1
}

void NameThisThread(std::string_view name) noexcept {
  std::array<char, kMaxName + 1> buf{};
  const std::size_t n = std::min(name.size(), kMaxName);
  std::memcpy(buf.data(), name.data(), n);
  pthread_setname_np(pthread_self(), buf.data());
}

namespace {
// The kernel's struct sched_attr (linux/sched/types.h, which clashes with <sched.h>); glibc
// wraps sched_getattr/sched_setattr only from 2.41 on.
struct SchedAttr {
  std::uint32_t size;
  std::uint32_t sched_policy;
  std::uint64_t sched_flags;
  std::int32_t sched_nice;
  std::uint32_t sched_priority;
  std::uint64_t sched_runtime;  // SCHED_OTHER/BATCH: the requested slice, in ns (Linux 6.12+)
  std::uint64_t sched_deadline;
  std::uint64_t sched_period;
  std::uint32_t sched_util_min;
  std::uint32_t sched_util_max;
};
}  // namespace

bool AskForShortSlices() noexcept {
  SchedAttr attr{};
  const auto tid = static_cast<pid_t>(::syscall(SYS_gettid));
  if (::syscall(SYS_sched_getattr, tid, &attr, sizeof(attr), 0) != 0) return false;
  if (attr.sched_policy != SCHED_OTHER && attr.sched_policy != SCHED_BATCH) return false;
  attr.size = sizeof(attr);
  attr.sched_flags = 0;
  attr.sched_runtime = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(kShortSlice).count());
  return ::syscall(SYS_sched_setattr, tid, &attr, 0) == 0;
}

std::string ThisThreadName() {
  std::array<char, kMaxName + 1> buf{};
  if (pthread_getname_np(pthread_self(), buf.data(), buf.size()) != 0) return {};
  return std::string(buf.data());
}

}  // namespace infertel
