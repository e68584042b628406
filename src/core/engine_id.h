#pragma once
// Which engine an upstream runs: the one engine identifier that exchanges, join records,
// upstreams, scrape targets and launch's recognised commands share. It is a position in the
// engine registry (engines/registry.h), which alone knows the engines by name; the base names
// no engine.

#include <cstdint>

namespace infertel {

struct EngineId {
  // Position in the registry. 0, the default, is the first engine the registry lists.
  std::uint8_t index = 0;
  friend bool operator==(EngineId, EngineId) = default;
};

}  // namespace infertel
