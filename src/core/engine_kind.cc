#include "core/engine_kind.h"

namespace infertel {

std::string_view EngineKindName(EngineKind k) {
  return k == EngineKind::kSglang ? "sglang" : "vllm";
}

}  // namespace infertel
