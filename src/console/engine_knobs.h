#pragma once
// Engine knobs: the switches of spec C3/C4 that live in the engine (log level, request logs,
// the engine's trace level). On the first override the engine's own value is read and kept; when
// the console no longer sets the key, that original is written back.
//
// An engine that restarts starts again from its own settings, and nothing tells the agent. So
// while a value of the console's is set on an engine, the controller asks every few seconds
// whether the engine still answers; once it answers again after it did not, every value of
// the console's is applied to it again. The originals stay those read at the first override.
//
// EngineKnobs is what one engine can do; KnobController applies the settings to every
// upstream on its own worker thread, off the data path, and keeps what happened for
// GET /api/config.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "config/settings.h"
#include "engines/knobs.h"

namespace infertel::console {

// One engine's knobs, as its profile makes them (engines/knobs.h).
using engines::EngineKnobs;

struct KnobTarget {
  std::string upstream;  // the upstream's name
  std::string url;       // for reports
  std::unique_ptr<EngineKnobs> knobs;
};

// What happened to one key on one upstream.
struct KnobState {
  std::string upstream;
  std::string url;
  // "unsupported", "engine" (left at the engine's own value), "applied", or "error" (the last
  // attempt failed; it is retried).
  std::string status = "engine";
  std::string reason;  // unsupported: why
  std::optional<config::Value> original;
  std::string original_note;
  std::optional<config::Value> applied;  // what infertel set, while it is set
  std::string error;                     // the last failure
  std::int64_t updated_ms = 0;           // unix ms of the last change of this state
};

class KnobController {
 public:
  // `check_interval`: how often an engine holding a value of the console's is asked whether
  // it answers. A restart shorter than that goes unnoticed; an LLM engine takes far longer
  // to load its model.
  explicit KnobController(std::vector<KnobTarget> targets,
                          std::chrono::milliseconds retry_interval = std::chrono::seconds(2),
                          std::chrono::milliseconds check_interval = std::chrono::seconds(5));
  ~KnobController();
  KnobController(const KnobController&) = delete;
  KnobController& operator=(const KnobController&) = delete;

  void Start();
  void Stop();

  // Hands the worker the newest settings; returns at once. An engine knob is overridden while
  // its source is not "default". Any thread.
  void Update(const config::Settings& settings);

  // The state of `key` on every upstream whose engine the key concerns. Any thread.
  std::vector<KnobState> StateOf(config::Key key) const;

  // Waits until the worker has handled the newest settings and nothing is left to retry, or
  // `timeout` passes; true when idle. For tests and orderly shutdown.
  bool WaitIdle(std::chrono::milliseconds timeout);

 private:
  struct Slot {
    KnobState state;
    // True from the first override (original recorded, the engine may hold our value) until
    // the original is written back.
    bool holding = false;
    // The engine answered again after it did not: it may have restarted with its own values,
    // so ours is applied again (or the original restored) even where it was already.
    bool reassert = false;
  };
  void Run();
  // Asks every engine holding a value of ours whether it answers; returns true when one
  // answers again after it did not (its slots are then marked `reassert`).
  bool CheckEngines();
  // One pass over every target and key; returns true when something must be retried.
  bool Pass(const config::Settings& settings);
  bool Handle(std::size_t target, config::Key key, const config::Settings& settings);

  std::vector<KnobTarget> targets_;  // worker-owned after Start
  const std::chrono::milliseconds retry_interval_;
  const std::chrono::milliseconds check_interval_;
  std::vector<bool> silent_;  // worker-owned: per target, did not answer at the last check

  mutable std::mutex mu_;  // guards everything below
  std::condition_variable cv_;
  std::shared_ptr<const config::Settings> pending_;  // newest settings not yet handled
  std::shared_ptr<const config::Settings> current_;  // the settings being applied
  bool stop_ = false;
  bool busy_ = false;
  bool retrying_ = false;
  std::map<std::pair<std::size_t, config::Key>, Slot> slots_;  // (target index, key)
  std::thread worker_;
};

}  // namespace infertel::console
