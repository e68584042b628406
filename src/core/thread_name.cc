#include "core/thread_name.h"

#include <pthread.h>

#include <algorithm>
#include <array>
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

std::string ThisThreadName() {
  std::array<char, kMaxName + 1> buf{};
  if (pthread_getname_np(pthread_self(), buf.data(), buf.size()) != 0) return {};
  return std::string(buf.data());
}

}  // namespace infertel
