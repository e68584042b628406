#include "app/engine_probe.h"

#include <spdlog/spdlog.h>

#include "core/thread_name.h"

namespace infertel {

EngineProbe::EngineProbe(std::string thread_name, std::string upstream, std::string what,
                         ProbeSchedule schedule, std::function<bool(std::string*)> read)
    : upstream_(std::move(upstream)),
      what_(std::move(what)),
      schedule_(schedule),
      read_(std::move(read)) {
  thread_ = std::thread([this, name = std::move(thread_name)] { Run(name); });
}

EngineProbe::~EngineProbe() { Stop(); }

void EngineProbe::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void EngineProbe::Run(const std::string& thread_name) {
  NameThisThread(thread_name);
  int failures = 0;  // in a row
  bool warned = false;
  for (;;) {
    std::string error;
    const bool answered = read_(&error);
    if (answered) {
      if (warned)
        spdlog::info("upstream {}: {} read after {} attempts", upstream_, what_, failures + 1);
      failures = 0;
      warned = false;
    } else if (++failures == schedule_.warn_after) {
      warned = true;
      spdlog::warn("upstream {}: {} not read yet ({}); asking again every {} ms", upstream_, what_,
                   error, schedule_.retry.count());
    }
    std::unique_lock lock(mu_);
    if (cv_.wait_for(lock, answered ? schedule_.recheck : schedule_.retry, [&] { return stop_; }))
      return;
  }
}

}  // namespace infertel
