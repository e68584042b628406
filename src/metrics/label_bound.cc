#include "metrics/label_bound.h"

#include <mutex>

namespace infertel::metrics {

bool BoundedLabelValues::Admit(std::string_view value) noexcept {
  if (value.size() > options_.max_length) {
    folded_.length.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  {
    std::shared_lock lock(mu_);
    if (known_.contains(value) || admitted_.contains(value)) return true;
  }
  std::unique_lock lock(mu_);
  if (admitted_.contains(value)) return true;  // admitted between the two locks
  if (admitted_.size() < options_.cap) {
    try {
      admitted_.emplace(value);
      return true;
    } catch (const std::exception&) {
      // Out of memory: fold rather than fail the measurement.
    }
  }
  folded_.cap.fetch_add(1, std::memory_order_relaxed);
  return false;
}

void BoundedLabelValues::SetKnown(const std::vector<std::string>& values) {
  Set next;
  for (const auto& v : values) {
    if (next.size() >= options_.max_known) break;
    if (v.size() <= options_.max_length) next.insert(v);
  }
  std::unique_lock lock(mu_);
  known_.swap(next);
}

std::size_t BoundedLabelValues::admitted() const {
  std::shared_lock lock(mu_);
  return admitted_.size();
}

std::size_t BoundedLabelValues::known() const {
  std::shared_lock lock(mu_);
  return known_.size();
}

}  // namespace infertel::metrics
