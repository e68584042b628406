#pragma once
// SGLang's keys (spec C1 plugin switch, C4 engine switches): the rows this folder adds to the
// key table (config/keys.h). The engine registry registers them at start-up; SGLang's code
// reads its settings through the handles of keys().

#include <span>

#include "config/keys.h"

namespace infertel::engines::sglang {

// SGLang's rows of the key table, in the order of the fields of Keys.
std::span<const config::KeySpec> KeySpecs();

struct Keys {
  config::Key enabled;             // C1 plugin switch (restart)
  config::Key metrics_enabled;     // C4
  config::Key tracing_level;       // C4: 0 to 4, an engine knob
  config::Key log_requests;        // C4 engine knob
  config::Key log_requests_level;  // C4 engine knob
  config::Key logging_level;       // C4 engine knob
  // SGLang has no trace-context switch of its own: vLLM's (C3) governs the agent's request
  // lines for SGLang too. Found by its console key, since engines' folders are independent.
  config::Key log_trace_context;
};
// SGLang's keys in the table, resolved once: only after the engines registered their keys
// (engines::RegisterEngines); aborts before.
const Keys& keys();

}  // namespace infertel::engines::sglang
