#include "pipeline/pacer.h"

#include <sched.h>

namespace infertel::pipeline {

void Pacer::Between() noexcept {
  if (queued_ == nullptr) return;
  const auto now = Clock::now();
  if (now - last_ < every_) return;
  last_ = now;
  if (queued_->load(std::memory_order_relaxed) >= backlog_) return;
  // With nothing else runnable on this core the call returns at once (about a microsecond).
  sched_yield();
  ++yields_;
  last_ = Clock::now();
}

}  // namespace infertel::pipeline
