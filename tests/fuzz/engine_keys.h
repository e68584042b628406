#pragma once
// The key table of the fuzz targets that read keys: the agent's keys and the engines' own, as
// engines::RegisterEngines() makes it in the agent. The targets do not link the registry (it
// brings every engine's code), so they add the engines' rows themselves, before the first
// input.

#include "config/keys.h"
#include "engines/sglang/sglang_keys.h"
#include "engines/vllm/vllm_keys.h"

namespace infertel::fuzz {

inline void RegisterEngineKeys() {
  // In the order of engines/registry.cc, so that each key has the agent's index.
  config::AddKeys(engines::vllm::KeySpecs());
  config::AddKeys(engines::sglang::KeySpecs());
  config::CloseKeys();
}

}  // namespace infertel::fuzz
