#pragma once
// The engines the agent knows: the built-in ones (registry.cc lists them, one line each) and
// any added with AddEngine before the agent starts (a test's own engine, for one). Lookups
// are lock-free and safe from any thread; AddEngine is for start-up, before other threads
// look up the engine it adds.
//
// The built-in engines declare their own keys (config/keys.h) and metric families
// (core/metric_families.h): RegisterEngines adds them to those tables and closes them. main,
// and every test binary's main, call it first.

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/engine_id.h"
#include "engines/profile.h"

namespace infertel::engines {

// At most this many engines; AddEngine refuses more.
inline constexpr std::size_t kMaxEngines = 16;

// Registers the built-in engines, their keys and their metric families, then closes the key
// and family tables. Idempotent and thread-safe; every other function here calls it.
void RegisterEngines();

// The profile of `id`, which must come from this registry.
const EngineProfile& Profile(EngineId id);
// The engine of this name (as flags and files spell it); nullopt for none.
std::optional<EngineId> FindEngine(std::string_view name);
std::size_t EngineCount();
// The engines' names for messages: "vllm or sglang".
std::string EngineNames();

// Adds an engine after the built-in ones and returns its id; nullopt when the name is taken,
// the registry is full or the engine declares keys or metric families (their tables are closed
// by then). The profile lives as long as the process.
std::optional<EngineId> AddEngine(std::unique_ptr<const EngineProfile> profile);

}  // namespace infertel::engines
