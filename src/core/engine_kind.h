#pragma once
// Which engine an upstream runs: the one engine identifier that the gateway's exchanges,
// launch's recognised commands and the agent's upstreams share.

#include <cstdint>
#include <string_view>

namespace infertel {

enum class EngineKind : std::uint8_t { kVllm, kSglang };

// The engine's name as flags, the agent file and logs spell it ("vllm", "sglang").
std::string_view EngineKindName(EngineKind k);

}  // namespace infertel
