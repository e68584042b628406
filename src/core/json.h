#pragma once
// JSON text for the few places that write it by hand (OTLP/JSON, GenAI messages, the
// simulator's responses, error bodies): one string writer, escaping control characters and
// replacing invalid UTF-8 with U+FFFD so that the output is always valid JSON.

#include <cstddef>
#include <string>
#include <string_view>

namespace infertel {

// Appends `s` as a quoted JSON string.
void AppendJsonString(std::string* out, std::string_view s);

// Length of the valid UTF-8 sequence starting at s[i], or 0 when there is none.
std::size_t Utf8SeqLen(std::string_view s, std::size_t i);

}  // namespace infertel
