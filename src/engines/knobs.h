#pragma once
// One running engine's knobs: the switches of spec C3/C4 that live in the engine (its log
// level, request logs, trace level), as the console applies them. Each engine's profile makes
// its own (EngineProfile::MakeKnobs); console/engine_knobs.h applies them to every upstream.

#include <optional>
#include <string>
#include <string_view>

#include "config/settings.h"

namespace infertel::engines {

// Calls block on the network: only the console's knob worker calls them. Not thread-safe.
class EngineKnobs {
 public:
  virtual ~EngineKnobs() = default;

  // The engine's name, as the key table's KeySpec::engine spells it.
  virtual std::string_view engine() const = 0;
  // Empty when the agent can change `key` on this engine from outside; otherwise the reason
  // it cannot (reported as "unsupported").
  virtual std::string Unsupported(config::Key key) const = 0;

  struct Original {
    config::Value value;
    // Empty when read from the engine; otherwise how the value was chosen (e.g. the engine
    // does not report it, so its documented default is assumed).
    std::string note;
  };
  // The engine's current value of `key`, to restore later.
  virtual std::optional<Original> ReadOriginal(config::Key key, std::string* error) = 0;
  // Sets `key` to `value` on the engine.
  virtual bool Apply(config::Key key, const config::Value& value, std::string* error) = 0;
  // Whether the engine answers now; *error says why not. Asked only while a value of the
  // console's is set on it.
  virtual bool Answers(std::string* error) = 0;
};

}  // namespace infertel::engines
