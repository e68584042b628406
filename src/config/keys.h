#pragma once
// The key registry: every collection switch of spec C1-C4 (console key, env var, type,
// default, live or restart), plus the few keys of infertel's own. This one table drives
// parsing, validation, `infertel config`, the admin API and docs/configuration.md.

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace infertel::config {

enum class Key : std::uint8_t {
  // C1: plugin switches (restart).
  kVllmEnabled,
  kSglangEnabled,
  // C2: AI application collection.
  kCaptureMessageContent,
  kMessageContentMaxLength,
  kMessageContentCaptureStrategy,
  kCaptureMultimodal,
  // C3: vLLM engine switches.
  kVllmMetricsEnabled,
  kVllmTracingLevel,
  kVllmLogRequests,
  kVllmLogIterationDetails,
  kVllmLogTraceContext,
  kVllmLoggingLevel,
  // C4: SGLang engine switches.
  kSglangMetricsEnabled,
  kSglangTracingLevel,
  kSglangLogRequests,
  kSglangLogRequestsLevel,
  kSglangLoggingLevel,
  // infertel's own: upstream timeouts and shutdown (docs/operations.md).
  kUpstreamConnectTimeoutMs,
  kUpstreamFirstByteTimeoutMs,
  kUpstreamIdleTimeoutMs,
  kDrainTimeoutMs,
  kCount,
};
inline constexpr std::size_t kKeyCount = static_cast<std::size_t>(Key::kCount);

enum class ValueType : std::uint8_t { kBool, kInt, kEnum };
enum class Apply : std::uint8_t { kLive, kRestart };

struct KeySpec {
  Key key;
  std::string_view console_key;
  std::string_view env_var;  // empty: the spec names no environment variable
  ValueType type;
  // Default as text. Empty for an engine knob whose default is the engine's own value:
  // such a key is "unset" until the console sets it, and the agent then leaves the engine alone.
  std::string_view default_value;
  Apply apply;
  // Which engine a key concerns, by its registry name (engines/registry.h); empty for keys of
  // the agent as a whole.
  std::string_view engine;
  std::int64_t min = 0, max = 0;  // kInt range
  std::string_view allowed;       // kEnum: canonical values, '|' separated
  bool engine_knob = false;       // applied through the engine's own endpoints
  std::string_view spec_section;  // C1..C4, or "infertel" for keys of our own
  std::string_view description;
};

std::span<const KeySpec> AllKeys();
const KeySpec& Spec(Key key);
std::optional<Key> FindByConsoleKey(std::string_view console_key);

}  // namespace infertel::config
