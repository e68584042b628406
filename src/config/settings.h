#pragma once
// Resolved values of the key registry: console value > environment variable > default.
// A Settings object is immutable once built; the live configuration swaps whole snapshots.

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "config/keys.h"
#include "core/genai_dialect.h"

namespace infertel::config {

// monostate = unset (an engine knob left at the engine's own value).
using Value = std::variant<std::monostate, bool, std::int64_t, std::string>;
enum class Source : std::uint8_t { kDefault, kEnv, kConsole };
std::string_view SourceName(Source s);

// Parses `text` for `spec`. On error returns a message naming the key and the accepted values.
// Enum values are matched case-insensitively and returned in canonical spelling; the capture
// strategy also accepts SPAN_ONLY, EVENT_ONLY and SPAN_AND_EVENT.
std::variant<Value, std::string> ParseValue(const KeySpec& spec, std::string_view text);
// What ParseValue accepts for `spec`, in words ("true or false", "one of span,event,…").
std::string AcceptedValues(const KeySpec& spec);
std::string FormatValue(const Value& v);

class Settings {
 public:
  struct Entry {
    Value value;
    Source source = Source::kDefault;
  };

  bool GetBool(Key k) const;                // false when unset
  std::int64_t GetInt(Key k) const;         // 0 when unset
  std::string_view GetString(Key k) const;  // "" when unset
  bool IsSet(Key k) const { return !std::holds_alternative<std::monostate>(At(k).value); }
  const Entry& At(Key k) const { return entries_[static_cast<std::size_t>(k)]; }
  Entry& Mutable(Key k) { return entries_[static_cast<std::size_t>(k)]; }

 private:
  std::array<Entry, kMaxKeys> entries_{};  // index: the key
};

// The GenAI dialect the settings ask for (Key::kSemconvStabilityOptIn, core/genai_dialect.h).
GenAiDialect GenAiDialectIn(const Settings& s);

using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;
EnvLookup ProcessEnv();

struct Resolution {
  Settings settings;
  // One message per rejected env or console value; the rejected value falls back to the
  // next layer (env → default, console → env/default).
  std::vector<std::string> errors;
};
Resolution Resolve(const EnvLookup& env, const std::map<Key, std::string>& console = {});

// The live configuration: readers take a snapshot (lock-free); writers publish a new one and
// every listener is told. Listeners run on the writer's thread and must not block.
class ConfigStore {
 public:
  using Listener = std::function<void(const Settings& old_settings, const Settings& new_settings)>;

  explicit ConfigStore(Settings initial);
  std::shared_ptr<const Settings> Current() const {
    return current_.load(std::memory_order_acquire);
  }
  void Publish(Settings next);
  void Subscribe(Listener listener);

 private:
  std::atomic<std::shared_ptr<const Settings>> current_;
  std::mutex mu_;  // guards listeners_ and serializes Publish
  std::vector<Listener> listeners_;
};

}  // namespace infertel::config
