#include "pipeline/pacer.h"

#include <thread>

namespace infertel::pipeline {

void Pacer::Between() noexcept {
  if (queued_ == nullptr) return;
  const auto now = Clock::now();
  if (now - last_ < every_) return;
  last_ = now;
  if (queued_->load(std::memory_order_relaxed) >= backlog_) return;
  // With the default timer slack the sleep lasts 20–70 µs: about what the gateway needs for
  // one request at load.
  std::this_thread::sleep_for(pause_);
  ++pauses_;
  last_ = Clock::now();
}

}  // namespace infertel::pipeline
