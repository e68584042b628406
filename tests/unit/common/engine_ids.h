#pragma once
// The built-in engines' ids, as tests name them (the agent's code asks the registry by name).

#include "core/engine_id.h"
#include "engines/registry.h"

namespace infertel {

inline EngineId VllmEngineId() { return *engines::FindEngine("vllm"); }
inline EngineId SglangEngineId() { return *engines::FindEngine("sglang"); }

}  // namespace infertel
