#pragma once
// The console's layers over the environment and the defaults, and the snapshot the agent
// runs with. Precedence, highest first:
//
//   API (PUT /api/config/{key})  >  console URL  >  console file  >  environment  >  default
//
// The three console layers are independent: a DELETE on the API uncovers the URL's or the
// file's value, and a file change to a key the API has set stays hidden until that API value
// is deleted. All three report source "console"; `layer` says which.
//
// Restart keys (spec C1) keep, in the published snapshot, the value they had when the agent
// started; a different console value is reported as pending until restart.
//
// Thread-safety: every method may be called from any thread.

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/settings.h"
#include "console/document.h"

namespace infertel::console {

enum class Layer : std::uint8_t { kFile, kUrl, kApi };  // ascending precedence
inline constexpr std::size_t kLayerCount = 3;
std::string_view LayerName(Layer layer);

// The health of one console source.
struct LayerStatus {
  bool configured = false;
  std::string origin;  // file path or URL
  bool ok = true;      // false while the last attempt failed (its values are the last good)
  std::string error;   // the last attempt's error
  std::int64_t last_attempt_ms = 0;  // unix ms
  std::int64_t last_ok_ms = 0;
  std::int64_t last_change_ms = 0;  // when its values last changed
  std::size_t keys = 0;             // values it currently sets
};

// One key as GET /api/config reports it (engine-knob state is added by the caller).
struct KeyState {
  config::Key key;
  config::Value value;  // what the agent runs with
  config::Source source = config::Source::kDefault;
  std::optional<Layer> layer;  // set when source is console
  // Restart keys only: the value the layers now resolve to differs from the running one.
  bool pending_restart = false;
  config::Value pending_value;
  config::Source pending_source = config::Source::kDefault;
  std::optional<Layer> pending_layer;
};

class LayeredConfig {
 public:
  // Resolves the environment once (it does not change while the agent runs). Rejected
  // environment values are appended to *env_errors and fall back to the default.
  LayeredConfig(const config::EnvLookup& env, std::vector<std::string>* env_errors);

  // Marks a source as in use (for status), e.g. the file's path.
  void Configure(Layer layer, std::string origin);
  // Replaces the layer's values and marks the attempt good.
  void SetLayer(Layer layer, ConsoleValues values);
  // Records a failed attempt: the layer keeps its last good values.
  void SetLayerError(Layer layer, std::string error);
  // Records a good attempt that changed nothing (an unchanged file, a 304).
  void MarkLayerOk(Layer layer);

  // The API layer, one key at a time. RemoveApiValue returns false when the API had not set it.
  void SetApiValue(config::Key key, config::Value value);
  bool RemoveApiValue(config::Key key);

  // Every layer applied, restart keys included: what the agent would start with now.
  config::Settings Desired() const;

  // From now on every change is published to `store`. Restart keys keep the values `store`
  // holds now. Publishing happens on the caller's thread, under this object's lock.
  void Attach(std::shared_ptr<config::ConfigStore> store);

  std::vector<KeyState> Keys() const;
  KeyState KeyOf(config::Key key) const;
  LayerStatus Status(Layer layer) const;

 private:
  struct Resolved {
    config::Settings settings;
    std::array<std::optional<Layer>, config::kMaxKeys> layer{};
  };
  Resolved ResolveLocked() const;
  KeyState KeyStateLocked(const Resolved& r, config::Key key) const;
  void PublishLocked();

  mutable std::mutex mu_;  // guards everything below
  config::Settings base_;  // env > default
  std::array<ConsoleValues, kLayerCount> layers_;
  std::array<LayerStatus, kLayerCount> status_;
  std::shared_ptr<config::ConfigStore> store_;
  config::Settings frozen_;  // the running values of restart keys, from Attach
  std::array<std::optional<Layer>, config::kMaxKeys> frozen_layer_{};
};

// Unix time in milliseconds (for status fields).
std::int64_t NowUnixMs();

}  // namespace infertel::console
