#pragma once
// A third engine, defined only here: "toy", an engine that continues the trace the gateway
// propagates, reports a fact of its own, counts its requests in a family of the model and adds
// one attribute to the entry span. It plugs in through engines::AddEngine, as a new engine's
// folder would through registry.cc, and shows what adding an engine takes: one profile.

#include <memory>

#include "engines/profile.h"

namespace infertel::toy {

// The entry-span attribute the toy engine adds: the upstream's stream interval as its facts
// say (0 before they are read).
inline constexpr std::string_view kToyStreamIntervalAttr = "toy.stream_interval";

std::unique_ptr<const engines::EngineProfile> MakeToyProfile();

}  // namespace infertel::toy
