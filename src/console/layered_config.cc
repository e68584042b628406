#include "console/layered_config.h"

#include <chrono>

namespace infertel::console {
namespace {

bool SameSettings(const config::Settings& a, const config::Settings& b) {
  for (const auto& spec : config::AllKeys()) {
    const auto& x = a.At(spec.key);
    const auto& y = b.At(spec.key);
    if (x.value != y.value || x.source != y.source) return false;
  }
  return true;
}

}  // namespace

std::string_view LayerName(Layer layer) {
  switch (layer) {
    case Layer::kFile:
      return "file";
    case Layer::kUrl:
      return "url";
    case Layer::kApi:
      return "api";
  }
  return "api";
}

std::int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

LayeredConfig::LayeredConfig(const config::EnvLookup& env, std::vector<std::string>* env_errors) {
  auto r = config::Resolve(env);
  base_ = std::move(r.settings);
  if (env_errors != nullptr)
    env_errors->insert(env_errors->end(), r.errors.begin(), r.errors.end());
  status_[static_cast<std::size_t>(Layer::kApi)].configured = true;
  status_[static_cast<std::size_t>(Layer::kApi)].origin = "PUT /api/config/{key}";
}

void LayeredConfig::Configure(Layer layer, std::string origin) {
  std::lock_guard lock(mu_);
  auto& st = status_[static_cast<std::size_t>(layer)];
  st.configured = true;
  st.origin = std::move(origin);
}

void LayeredConfig::SetLayer(Layer layer, ConsoleValues values) {
  std::lock_guard lock(mu_);
  auto i = static_cast<std::size_t>(layer);
  auto& st = status_[i];
  const auto now = NowUnixMs();
  st.last_attempt_ms = st.last_ok_ms = now;
  st.ok = true;
  st.error.clear();
  if (layers_[i] == values) return;
  layers_[i] = std::move(values);
  st.keys = layers_[i].size();
  st.last_change_ms = now;
  PublishLocked();
}

void LayeredConfig::SetLayerError(Layer layer, std::string error) {
  std::lock_guard lock(mu_);
  auto& st = status_[static_cast<std::size_t>(layer)];
  st.last_attempt_ms = NowUnixMs();
  st.ok = false;
  st.error = std::move(error);
}

void LayeredConfig::MarkLayerOk(Layer layer) {
  std::lock_guard lock(mu_);
  auto& st = status_[static_cast<std::size_t>(layer)];
  st.last_attempt_ms = st.last_ok_ms = NowUnixMs();
  st.ok = true;
  st.error.clear();
}

void LayeredConfig::SetApiValue(config::Key key, config::Value value) {
  std::lock_guard lock(mu_);
  auto i = static_cast<std::size_t>(Layer::kApi);
  layers_[i][key] = std::move(value);
  status_[i].keys = layers_[i].size();
  status_[i].last_attempt_ms = status_[i].last_ok_ms = status_[i].last_change_ms = NowUnixMs();
  PublishLocked();
}

bool LayeredConfig::RemoveApiValue(config::Key key) {
  std::lock_guard lock(mu_);
  auto i = static_cast<std::size_t>(Layer::kApi);
  if (layers_[i].erase(key) == 0) return false;
  status_[i].keys = layers_[i].size();
  status_[i].last_attempt_ms = status_[i].last_ok_ms = status_[i].last_change_ms = NowUnixMs();
  PublishLocked();
  return true;
}

LayeredConfig::Resolved LayeredConfig::ResolveLocked() const {
  Resolved r;
  r.settings = base_;
  for (std::size_t i = 0; i < kLayerCount; ++i) {
    for (const auto& [key, value] : layers_[i]) {
      r.settings.Mutable(key) = {value, config::Source::kConsole};
      r.layer[static_cast<std::size_t>(key)] = static_cast<Layer>(i);
    }
  }
  return r;
}

config::Settings LayeredConfig::Desired() const {
  std::lock_guard lock(mu_);
  return ResolveLocked().settings;
}

void LayeredConfig::Attach(std::shared_ptr<config::ConfigStore> store) {
  std::lock_guard lock(mu_);
  store_ = std::move(store);
  frozen_ = *store_->Current();
  Resolved r = ResolveLocked();
  for (const auto& spec : config::AllKeys()) {
    auto i = static_cast<std::size_t>(spec.key);
    const auto& a = frozen_.At(spec.key);
    const auto& b = r.settings.At(spec.key);
    frozen_layer_[i] = a.value == b.value && a.source == b.source ? r.layer[i] : std::nullopt;
  }
  PublishLocked();
}

void LayeredConfig::PublishLocked() {
  if (!store_) return;
  config::Settings next = ResolveLocked().settings;
  for (const auto& spec : config::AllKeys())
    if (spec.apply == config::Apply::kRestart) next.Mutable(spec.key) = frozen_.At(spec.key);
  if (SameSettings(next, *store_->Current())) return;
  store_->Publish(std::move(next));
}

KeyState LayeredConfig::KeyStateLocked(const Resolved& r, config::Key key) const {
  KeyState k;
  k.key = key;
  const auto& desired = r.settings.At(key);
  const auto desired_layer = r.layer[static_cast<std::size_t>(key)];
  if (config::Spec(key).apply == config::Apply::kRestart && store_) {
    const auto& running = frozen_.At(key);
    k.value = running.value;
    k.source = running.source;
    k.layer = frozen_layer_[static_cast<std::size_t>(key)];
    if (running.value != desired.value || running.source != desired.source) {
      k.pending_restart = true;
      k.pending_value = desired.value;
      k.pending_source = desired.source;
      k.pending_layer = desired_layer;
    }
    return k;
  }
  k.value = desired.value;
  k.source = desired.source;
  k.layer = desired_layer;
  return k;
}

std::vector<KeyState> LayeredConfig::Keys() const {
  std::lock_guard lock(mu_);
  Resolved r = ResolveLocked();
  std::vector<KeyState> out;
  out.reserve(config::KeyCount());
  for (const auto& spec : config::AllKeys()) out.push_back(KeyStateLocked(r, spec.key));
  return out;
}

KeyState LayeredConfig::KeyOf(config::Key key) const {
  std::lock_guard lock(mu_);
  return KeyStateLocked(ResolveLocked(), key);
}

LayerStatus LayeredConfig::Status(Layer layer) const {
  std::lock_guard lock(mu_);
  return status_[static_cast<std::size_t>(layer)];
}

}  // namespace infertel::console
