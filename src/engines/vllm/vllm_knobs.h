#pragma once
// vLLM's engine knobs (spec C3): none can be changed from outside the engine process, since
// vLLM's HTTP API has no endpoint for them (facts/vllm.md §3.1); each says why.

#include <memory>
#include <string>

#include "engines/knobs.h"

namespace infertel::engines::vllm {

// Why `key` cannot be applied to a vLLM engine from outside; empty for keys that are not vLLM
// engine knobs.
std::string UnsupportedReason(config::Key key);

// The knobs of a vLLM server: none can be changed from outside (see UnsupportedReason).
std::unique_ptr<EngineKnobs> MakeKnobs();

}  // namespace infertel::engines::vllm
