#pragma once
// The body of PUT /api/config/{key}: {"value": …}. Apart from the API so that it can be
// tested and fuzzed alone (tests/fuzz/api_body_fuzz.cc).

#include <string>
#include <string_view>
#include <variant>

#include "config/keys.h"
#include "config/settings.h"

namespace infertel::console {

// The typed value `body` sets for `spec`, or the message of its 400: what is wrong and the
// accepted values, quoting at most 64 bytes of what was sent, escaped (core/printable.h).
std::variant<config::Value, std::string> ValueFromBody(const config::KeySpec& spec,
                                                       std::string_view body);

}  // namespace infertel::console
