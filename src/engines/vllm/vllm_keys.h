#pragma once
// vLLM's keys (spec C1 plugin switch, C3 engine switches): the rows this folder adds to the key
// table (config/keys.h). The engine registry registers them at start-up; vLLM's code reads its
// settings through the handles of keys().

#include <span>

#include "config/keys.h"

namespace infertel::engines::vllm {

// vLLM's rows of the key table, in the order of the fields of Keys.
std::span<const config::KeySpec> KeySpecs();

struct Keys {
  config::Key enabled;                // C1 plugin switch (restart)
  config::Key metrics_enabled;        // C3
  config::Key tracing_level;          // C3: 0, 1 or 2
  config::Key log_requests;           // C3 engine knob
  config::Key log_iteration_details;  // C3 engine knob
  config::Key log_trace_context;      // C3 engine knob
  config::Key logging_level;          // C3 engine knob
};
// vLLM's keys in the table, resolved once: only after the engines registered their keys
// (engines::RegisterEngines); aborts before.
const Keys& keys();

}  // namespace infertel::engines::vllm
