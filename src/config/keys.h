#pragma once
// The key registry: every switch of infertel's collection (spec C1-C4: console key, env var,
// type, default, live or restart), in one open table. This one table drives parsing,
// validation, `infertel config`, the admin API and docs/configuration.md.
//
// The table starts with the keys of the agent as a whole (the enumerators of Key below);
// each engine declares its own keys in its folder (engines/<name>/) and the engine registry
// appends them at start-up (engines::RegisterEngines), before any Settings is built. After
// that the table is closed and read-only: every lookup is lock-free and safe from any thread.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace infertel::config {

// A dense index into the table. The enumerators are the agent-wide keys; an engine's keys are
// the values AddKeys hands out after them (engines hold theirs in a struct of their own).
enum class Key : std::uint16_t {
  // C2: AI application collection.
  kCaptureMessageContent,
  kMessageContentMaxLength,
  kMessageContentCaptureStrategy,
  kCaptureMultimodal,
  // The GenAI conventions' own switch: which dialect of their names spans and metrics speak.
  kSemconvStabilityOptIn,
  // infertel's own: upstream timeouts and shutdown (docs/operations.md).
  kUpstreamConnectTimeoutMs,
  kUpstreamFirstByteTimeoutMs,
  kUpstreamIdleTimeoutMs,
  kDrainTimeoutMs,
  // infertel's own: tenants and latency objectives (src/analytics/).
  kTenantFrom,
  kTenantMax,
  kSloTtftMs,
  kSloTpotMs,
  kSloE2eMs,
  kSloModels,
};
inline constexpr std::size_t kAgentKeyCount = 15;
// The table's capacity: Settings hold this many values, and AddKeys refuses more.
inline constexpr std::size_t kMaxKeys = 64;

inline constexpr std::size_t IndexOf(Key key) { return static_cast<std::size_t>(key); }

// kList: comma-separated items, each one of `allowed` ('|' separated), where an option ending in
// ":*" stands for any item with that prefix and a non-empty name after it (header:*).
// kTable: a mapping of names (models) to mappings of the fields in `allowed` to integers in
// [min, max]; written as a nested mapping in a console document, as JSON text elsewhere.
enum class ValueType : std::uint8_t { kBool, kInt, kEnum, kList, kTable };
enum class Apply : std::uint8_t { kLive, kRestart };
// Where a key is listed (`infertel config`, docs/configuration.md): by group, then in the
// order the keys were added.
enum class KeyGroup : std::uint8_t {
  kPlugin,       // C1: an engine's plugin switch
  kApplication,  // C2 and its infertel companions: AI application collection
  kEngine,       // C3, C4: an engine's own switches
  kAnalytics,    // infertel's own: tenants and latency objectives
  kAgent,        // infertel's own: timeouts, shutdown
};

struct KeySpec {
  Key key;  // set by AddKeys: what an engine declares here is not read
  std::string_view console_key;
  std::string_view env_var;  // empty: the spec names no environment variable
  ValueType type;
  // Default as text. Empty: the key is unset until a source sets it. For an engine knob the
  // engine's own value then stands, and the agent leaves the engine alone; for an objective,
  // there is none.
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
  KeyGroup group = KeyGroup::kAgent;
};

// ---- Registration, at start-up (engines/registry.cc), before any Settings is built.
// Appends `specs` to the table and returns the key of the first (the others follow it, in
// order). Aborts with a message once the table is closed, past kMaxKeys, or for a console key
// the table has already.
Key AddKeys(std::span<const KeySpec> specs);
// Closes the table: no key is added after. Idempotent.
void CloseKeys();
bool KeysClosed();

// ---- Lookups: each aborts with a message while the table is open (before registration).
// Every key, in listing order (by group, then as added).
std::span<const KeySpec> AllKeys();
std::size_t KeyCount();
const KeySpec& Spec(Key key);
std::optional<Key> FindByConsoleKey(std::string_view console_key);
// The key of the console key `console_key`, which must be in the table: aborts with a message
// otherwise (an engine's keys resolved before engines::RegisterEngines added them).
Key KeyOf(std::string_view console_key);

}  // namespace infertel::config
