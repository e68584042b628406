#include "core/cpus.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <fstream>
#include <sstream>

namespace infertel {
namespace {

bool ParseInt(std::string_view text, std::int64_t* out) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

int CpusOf(std::int64_t quota, std::int64_t period) {
  if (quota <= 0 || period <= 0) return 0;
  return static_cast<int>(std::min<std::int64_t>((quota + period - 1) / period, 1 << 20));
}

// The whole of a small file ("" when absent).
std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Whether a v1 hierarchy's comma-separated controllers ("cpu,cpuacct") include cpu.
bool ListsCpu(std::string_view controllers) {
  while (!controllers.empty()) {
    const auto comma = controllers.find(',');
    if (controllers.substr(0, comma) == "cpu") return true;
    controllers.remove_prefix(comma == controllers.npos ? controllers.size() : comma + 1);
  }
  return false;
}

// `*smallest` lowered to quota `q` (0 in either: none).
void KeepSmallest(int* smallest, int q) {
  if (q > 0) *smallest = *smallest == 0 ? q : std::min(*smallest, q);
}

// The smallest quota `read(directory)` finds from cgroup `path` under `mount` up to the
// hierarchy's top: a parent's quota bounds its children.
template <typename Read>
int SmallestUpwards(const std::string& mount, std::string path, Read read) {
  int smallest = 0;
  for (;;) {
    KeepSmallest(&smallest, read(mount + path));
    if (path.empty()) return smallest;
    path.resize(path.find_last_of('/'));
  }
}

}  // namespace

int AllowedCpuCount() noexcept {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
}

int CpusOfCpuMax(std::string_view cpu_max) noexcept {
  const auto space = cpu_max.find(' ');
  if (space == std::string_view::npos) return 0;
  std::int64_t quota = 0, period = 0;
  if (!ParseInt(cpu_max.substr(0, space), &quota) || !ParseInt(cpu_max.substr(space + 1), &period))
    return 0;  // "max": unlimited
  return CpusOf(quota, period);
}

int CpusOfCfsQuota(std::string_view quota_us, std::string_view period_us) noexcept {
  std::int64_t quota = 0, period = 0;
  if (!ParseInt(quota_us, &quota) || !ParseInt(period_us, &period)) return 0;
  return CpusOf(quota, period);
}

int CgroupCpuQuota(std::string_view proc_self_cgroup, const std::string& root) {
  int smallest = 0;
  while (!proc_self_cgroup.empty()) {
    const auto eol = proc_self_cgroup.find('\n');
    std::string_view line = proc_self_cgroup.substr(0, eol);
    proc_self_cgroup.remove_prefix(eol == std::string_view::npos ? proc_self_cgroup.size()
                                                                 : eol + 1);
    // "hierarchy-id:controllers:path"
    const auto c1 = line.find(':'), c2 = line.find(':', c1 == line.npos ? 0 : c1 + 1);
    if (c1 == line.npos || c2 == line.npos) continue;
    const std::string_view controllers = line.substr(c1 + 1, c2 - c1 - 1);
    std::string path(line.substr(c2 + 1));  // "/a/b", or "/" (a cgroup namespace's own top)
    if (path.empty() || path.front() != '/') continue;
    if (path.back() == '/') path.pop_back();
    if (controllers.empty()) {  // v2
      KeepSmallest(&smallest, SmallestUpwards(root, path, [](const std::string& d) {
        return CpusOfCpuMax(Slurp(d + "/cpu.max"));
      }));
      continue;
    }
    if (!ListsCpu(controllers)) continue;
    // Mounted as cpu/ or under the controllers' joint name (cpu,cpuacct/), often both.
    auto cfs = [](const std::string& d) {
      return CpusOfCfsQuota(Slurp(d + "/cpu.cfs_quota_us"), Slurp(d + "/cpu.cfs_period_us"));
    };
    KeepSmallest(&smallest, SmallestUpwards(root + "/cpu", path, cfs));
    if (controllers != "cpu")
      KeepSmallest(&smallest, SmallestUpwards(root + "/" + std::string(controllers), path, cfs));
  }
  return smallest;
}

int CpuBudget() noexcept {
  const int cpus = AllowedCpuCount();
  try {
    const int quota = CgroupCpuQuota(Slurp("/proc/self/cgroup"), "/sys/fs/cgroup");
    return quota > 0 ? std::max(1, std::min(cpus, quota)) : cpus;
  } catch (...) {
    return cpus;  // a quota not read is none
  }
}

}  // namespace infertel
