#pragma once
// vLLM's engine profile (engines/profile.h): spec M2 and M3, switches C3, facts/vllm.md.

#include "engines/profile.h"

namespace infertel::engines::vllm {

const EngineProfile& Profile();

}  // namespace infertel::engines::vllm
