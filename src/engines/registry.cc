#include "engines/registry.h"

#include <array>
#include <atomic>
#include <cstdlib>
#include <mutex>

#include "config/keys.h"
#include "core/metric_families.h"
#include "engines/sglang/sglang_profile.h"
#include "engines/vllm/vllm_profile.h"

namespace infertel::engines {
namespace {

struct Registry {
  std::array<const EngineProfile*, kMaxEngines> profiles{};
  std::atomic<std::size_t> count{0};
  std::mutex add_mu;  // serializes AddEngine; lookups take no lock

  Registry() {
    // The built-in engines, in the order of their ids. The first is the default engine.
    Add(&vllm::Profile());
    Add(&sglang::Profile());
    config::CloseKeys();
    metrics::CloseMetricFamilies();
  }
  std::size_t Add(const EngineProfile* p) {
    if (!p->key_specs().empty()) config::AddKeys(p->key_specs());
    if (!p->metric_family_rows().empty()) metrics::AddMetricFamilies(p->metric_family_rows());
    std::size_t n = count.load(std::memory_order_relaxed);
    profiles[n] = p;
    count.store(n + 1, std::memory_order_release);
    return n;
  }
};

Registry& Instance() {
  static Registry r;
  return r;
}

}  // namespace

void RegisterEngines() { Instance(); }

const EngineProfile& Profile(EngineId id) {
  Registry& r = Instance();
  if (id.index >= r.count.load(std::memory_order_acquire)) std::abort();  // not from FindEngine
  return *r.profiles[id.index];
}

std::optional<EngineId> FindEngine(std::string_view name) {
  Registry& r = Instance();
  const std::size_t n = r.count.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < n; ++i)
    if (r.profiles[i]->name() == name) return EngineId{static_cast<std::uint8_t>(i)};
  return std::nullopt;
}

std::size_t EngineCount() { return Instance().count.load(std::memory_order_acquire); }

std::string EngineNames() {
  Registry& r = Instance();
  const std::size_t n = r.count.load(std::memory_order_acquire);
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0) out += i + 1 == n ? " or " : ", ";
    out += r.profiles[i]->name();
  }
  return out;
}

std::optional<EngineId> AddEngine(std::unique_ptr<const EngineProfile> profile) {
  Registry& r = Instance();
  std::lock_guard lock(r.add_mu);
  if (!profile || FindEngine(profile->name()) || EngineCount() >= kMaxEngines ||
      !profile->key_specs().empty() || !profile->metric_family_rows().empty())
    return std::nullopt;
  return EngineId{static_cast<std::uint8_t>(r.Add(profile.release()))};
}

}  // namespace infertel::engines
