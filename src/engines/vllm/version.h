#pragma once
// vLLM's version, as its /version endpoint reports it, and what it says about the shape of
// the spans that server emits.

#include <optional>
#include <string>
#include <string_view>

#include "engines/vllm/vllm_spans.h"
#include "http/url.h"

namespace infertel::engines::vllm {

// V1 request tracing arrived in 0.11.0; an older server that emits spans runs the V0 engine
// (tracing made it fall back to V0). nullopt for an unparsable version.
std::optional<SpanShape> ShapeFromVersion(std::string_view version);

// GET <base>/version → {"version": "..."}; nullopt when the engine does not answer in time.
// Blocking: call from a thread that may wait (not a gateway worker).
std::optional<std::string> ProbeVersion(const http::Url& base, std::string* error);

}  // namespace infertel::engines::vllm
