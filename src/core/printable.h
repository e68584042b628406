#pragma once
// Text from outside (span names and attributes from clients and engines, scraped labels, a
// console document's keys, an admin API caller's values) made safe to print on a terminal or
// in a log line: nothing in it can move the cursor, retitle the terminal, end a line early,
// reorder the line's characters, or be cut by a NUL.
//
// Escaped: every C0 control and DEL (`\n`, `\r`, `\t`, others as `\xNN`, e.g. ESC as `\x1b`),
// every byte that is not part of valid UTF-8 (`\xNN`), the C1 controls U+0080..U+009F and the
// bidirectional formatting characters (U+061C, U+200E, U+200F, U+202A..U+202E,
// U+2066..U+2069) as `\u{NNNN}`. Everything else, backslashes included, is kept as it is.

#include <cstddef>
#include <string>
#include <string_view>

namespace infertel {

// Appends `text` to *out with the characters above escaped.
void AppendPrintable(std::string* out, std::string_view text);
std::string Printable(std::string_view text);

// Printable(text) cut to its first `max_bytes` bytes, followed by "… (N bytes)" when it was
// longer: for echoing an outside value in an error message without echoing all of it.
std::string Excerpt(std::string_view text, std::size_t max_bytes = 64);

}  // namespace infertel
