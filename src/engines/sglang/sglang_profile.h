#pragma once
// SGLang's engine profile (engines/profile.h): spec M4 and M5, switches C4, facts/sglang.md.

#include "engines/profile.h"

namespace infertel::engines::sglang {

const EngineProfile& Profile();

}  // namespace infertel::engines::sglang
