#pragma once
// SGLang's engine knobs (spec C4) over its HTTP control surface: the trace level through
// /set_trace_level, request logs, their detail and the log level through /configure_logging,
// originals read from /server_info.

#include <memory>

#include "engines/knobs.h"
#include "http/url.h"

namespace infertel::engines::sglang {

std::unique_ptr<EngineKnobs> MakeKnobs(const http::Url& base);

}  // namespace infertel::engines::sglang
