#include "console/engine_knobs.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "console/layered_config.h"
#include "core/thread_name.h"

namespace infertel::console {

KnobController::KnobController(std::vector<KnobTarget> targets,
                               std::chrono::milliseconds retry_interval,
                               std::chrono::milliseconds check_interval)
    : targets_(std::move(targets)),
      retry_interval_(retry_interval),
      check_interval_(check_interval),
      silent_(targets_.size(), false) {
  for (std::size_t i = 0; i < targets_.size(); ++i) {
    const auto& t = targets_[i];
    for (const auto& spec : config::AllKeys()) {
      if (!spec.engine_knob || spec.engine != t.knobs->engine()) continue;
      Slot slot;
      slot.state.upstream = t.upstream;
      slot.state.url = t.url;
      slot.state.reason = t.knobs->Unsupported(spec.key);
      if (!slot.state.reason.empty()) slot.state.status = "unsupported";
      slots_.emplace(std::make_pair(i, spec.key), std::move(slot));
    }
  }
}

KnobController::~KnobController() { Stop(); }

void KnobController::Start() {
  std::lock_guard lock(mu_);
  if (worker_.joinable() || stop_) return;
  worker_ = std::thread([this] {
    NameThisThread("engine-knobs");
    Run();
  });
}

void KnobController::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void KnobController::Update(const config::Settings& settings) {
  {
    std::lock_guard lock(mu_);
    pending_ = std::make_shared<const config::Settings>(settings);
  }
  cv_.notify_all();
}

std::vector<KnobState> KnobController::StateOf(config::Key key) const {
  std::lock_guard lock(mu_);
  std::vector<KnobState> out;
  for (const auto& [id, slot] : slots_)
    if (id.second == key) out.push_back(slot.state);
  return out;
}

bool KnobController::WaitIdle(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return !busy_ && !pending_ && !retrying_; });
}

void KnobController::Run() {
  using Clock = std::chrono::steady_clock;
  std::unique_lock lock(mu_);
  auto next_check = Clock::now() + check_interval_;
  auto retry_at = Clock::time_point::max();
  for (;;) {
    auto wake = [&] { return stop_ || pending_ != nullptr; };
    cv_.wait_until(lock, retrying_ ? std::min(next_check, retry_at) : next_check, wake);
    if (stop_) return;
    const auto now = Clock::now();
    bool pass = pending_ != nullptr || (retrying_ && now >= retry_at);
    if (pending_) current_ = std::move(pending_);
    if (now >= next_check) {
      next_check = now + check_interval_;
      busy_ = true;
      lock.unlock();
      const bool answers_again = CheckEngines();
      lock.lock();
      busy_ = false;
      pass = pass || answers_again;
      cv_.notify_all();  // WaitIdle
    }
    if (!pass || !current_) continue;
    auto settings = current_;
    busy_ = true;
    lock.unlock();
    bool retry = Pass(*settings);
    lock.lock();
    busy_ = false;
    retrying_ = retry;
    retry_at = Clock::now() + retry_interval_;
    cv_.notify_all();  // WaitIdle
  }
}

bool KnobController::CheckEngines() {
  std::vector<bool> holding(targets_.size(), false);
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, slot] : slots_)
      if (slot.holding) holding[id.first] = true;
  }
  bool answers_again = false;
  for (std::size_t t = 0; t < targets_.size(); ++t) {
    if (!holding[t]) {
      silent_[t] = false;  // nothing of ours there: nothing to put back
      continue;
    }
    {
      std::lock_guard lock(mu_);
      if (stop_) return false;
    }
    std::string err;
    const bool answers = targets_[t].knobs->Answers(&err);
    if (answers != silent_[t]) continue;  // as at the last check
    silent_[t] = !answers;
    const std::int64_t now_ms = NowUnixMs();
    std::lock_guard lock(mu_);
    if (!answers) {
      spdlog::warn(
          "console: upstream {} does not answer ({}); the console's engine settings will be "
          "applied to it again when it does",
          targets_[t].upstream, err);
    } else {
      spdlog::info(
          "console: upstream {} answers again and may have restarted with its own settings; "
          "applying the console's engine settings again",
          targets_[t].upstream);
      answers_again = true;
    }
    for (auto& [id, slot] : slots_) {
      if (id.first != t || !slot.holding) continue;
      if (!answers) {
        slot.state.status = "error";
        slot.state.error = "the engine does not answer (" + err + "); applied again when it does";
      } else {
        slot.reassert = true;
      }
      slot.state.updated_ms = now_ms;
    }
  }
  return answers_again;
}

bool KnobController::Pass(const config::Settings& settings) {
  std::vector<std::pair<std::size_t, config::Key>> ids;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, slot] : slots_) ids.push_back(id);
  }
  bool retry = false;
  for (const auto& [target, key] : ids) {
    {
      std::lock_guard lock(mu_);
      if (stop_) return false;
    }
    retry |= Handle(target, key, settings);
  }
  return retry;
}

bool KnobController::Handle(std::size_t target, config::Key key, const config::Settings& settings) {
  Slot slot;
  {
    std::lock_guard lock(mu_);
    slot = slots_.at({target, key});
  }
  if (slot.state.status == "unsupported") return false;
  EngineKnobs& knobs = *targets_[target].knobs;
  const auto& entry = settings.At(key);
  std::optional<config::Value> want;
  if (entry.source != config::Source::kDefault &&
      !std::holds_alternative<std::monostate>(entry.value)) {
    want = entry.value;
  }
  const std::string old_error = slot.state.error;
  const std::string_view name = config::Spec(key).console_key;
  bool retry = false;
  std::string err;
  if (want) {
    if (slot.state.status == "applied" && slot.state.applied == want && !slot.reassert)
      return false;
    if (!slot.holding) {
      auto original = knobs.ReadOriginal(key, &err);
      if (original) {
        slot.holding = true;
        slot.state.original = std::move(original->value);
        slot.state.original_note = std::move(original->note);
      } else {
        slot.state.status = "error";
        slot.state.error = "reading the engine's current value: " + err;
        retry = true;
      }
    }
    if (slot.holding) {
      if (knobs.Apply(key, *want, &err)) {
        slot.state.status = "applied";
        slot.state.applied = want;
        slot.state.error.clear();
        slot.reassert = false;
        spdlog::info("console: {} = {} applied to upstream {} (engine's original {})", name,
                     config::FormatValue(*want), slot.state.upstream,
                     config::FormatValue(*slot.state.original));
      } else {
        slot.state.status = "error";
        slot.state.error = "applying " + config::FormatValue(*want) + ": " + err;
        retry = true;
      }
    }
  } else {
    if (!slot.holding) {
      if (slot.state.status == "engine" && slot.state.error.empty()) return false;
      slot.state.status = "engine";  // nothing of ours on the engine; forget a failed read
      slot.state.error.clear();
      slot.state.original.reset();
      slot.state.original_note.clear();
    } else if (knobs.Apply(key, *slot.state.original, &err)) {
      spdlog::info("console: {} restored to the engine's original {} on upstream {}", name,
                   config::FormatValue(*slot.state.original), slot.state.upstream);
      slot.holding = false;
      slot.reassert = false;
      slot.state.status = "engine";
      slot.state.applied.reset();
      slot.state.original.reset();
      slot.state.original_note.clear();
      slot.state.error.clear();
    } else {
      slot.state.status = "error";
      slot.state.error = "restoring the engine's original " +
                         config::FormatValue(*slot.state.original) + ": " + err;
      retry = true;
    }
  }
  if (!slot.state.error.empty() && slot.state.error != old_error) {
    spdlog::warn("console: {} on upstream {}: {} (retrying)", name, slot.state.upstream,
                 slot.state.error);
  }
  slot.state.updated_ms = NowUnixMs();
  std::lock_guard lock(mu_);
  slots_[{target, key}] = std::move(slot);
  return retry;
}

}  // namespace infertel::console
