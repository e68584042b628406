#pragma once
// A third engine, defined only here: "toy", an engine that continues the trace the gateway
// propagates (its spans pass through a processor of its own), reports a fact of its own, counts its
// requests in a family of the model and adds one attribute to the entry span. It plugs in through
// engines::AddEngine, as a new engine's folder would through registry.cc, and shows what adding an
// engine takes: one profile.

#include <memory>

#include "engines/profile.h"

namespace infertel::toy {

// The entry-span attribute the toy engine adds: the upstream's stream interval as its facts
// say (0 before they are read).
inline constexpr std::string_view kToyStreamIntervalAttr = "toy.stream_interval";

// Its spans' instrumentation scope, and the attribute its span processor adds to each: the
// tracing level the gateway saw the request start with (the negated current level for a
// trace the gateway did not start).
inline constexpr std::string_view kToyScope = "toy";
inline constexpr std::string_view kToyLevelAttr = "toy.request_level";

std::unique_ptr<const engines::EngineProfile> MakeToyProfile();

}  // namespace infertel::toy
