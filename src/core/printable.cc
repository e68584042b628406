#include "core/printable.h"

#include <fmt/format.h>

#include <cstdint>

namespace infertel {
namespace {

bool IsContinuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// The length of the valid UTF-8 sequence at the start of `s` and its code point, or 0 when
// the first byte does not start one (overlong forms, surrogates and values past U+10FFFF
// included).
std::size_t DecodeUtf8(std::string_view s, char32_t* cp) {
  const auto b0 = static_cast<unsigned char>(s[0]);
  std::size_t len = 0;
  char32_t min = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2, min = 0x80, *cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3, min = 0x800, *cp = b0 & 0x0F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4, min = 0x10000, *cp = b0 & 0x07;
  } else {
    return 0;
  }
  if (s.size() < len) return 0;
  for (std::size_t i = 1; i < len; ++i) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (!IsContinuation(b)) return 0;
    *cp = (*cp << 6) | (b & 0x3F);
  }
  if (*cp < min || *cp > 0x10FFFF || (*cp >= 0xD800 && *cp <= 0xDFFF)) return 0;
  return len;
}

// C1 controls and the characters that change the direction in which a line is shown.
bool IsInvisibleControl(char32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || cp == 0x061C || cp == 0x200E || cp == 0x200F ||
         (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

void AppendControl(std::string* out, unsigned char c) {
  switch (c) {
    case '\n':
      *out += "\\n";
      return;
    case '\r':
      *out += "\\r";
      return;
    case '\t':
      *out += "\\t";
      return;
    default:
      *out += fmt::format("\\x{:02x}", c);
  }
}

}  // namespace

void AppendPrintable(std::string* out, std::string_view text) {
  out->reserve(out->size() + text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7F) {
      out->push_back(static_cast<char>(c));
      ++i;
      continue;
    }
    if (c < 0x80) {  // C0 controls and DEL
      AppendControl(out, c);
      ++i;
      continue;
    }
    char32_t cp = 0;
    const std::size_t len = DecodeUtf8(text.substr(i), &cp);
    if (len == 0) {
      *out += fmt::format("\\x{:02x}", c);
      ++i;
    } else if (IsInvisibleControl(cp)) {
      *out += fmt::format("\\u{{{:04x}}}", static_cast<std::uint32_t>(cp));
      i += len;
    } else {
      out->append(text.substr(i, len));
      i += len;
    }
  }
}

std::string Printable(std::string_view text) {
  std::string out;
  AppendPrintable(&out, text);
  return out;
}

std::string Excerpt(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return Printable(text);
  std::size_t cut = max_bytes;
  // Not in the middle of a UTF-8 sequence (at most three continuation bytes to step over).
  for (int k = 0; k < 3 && cut > 0 && IsContinuation(static_cast<unsigned char>(text[cut])); ++k)
    --cut;
  std::string out = Printable(text.substr(0, cut));
  out += fmt::format("… ({} bytes)", text.size());
  return out;
}

}  // namespace infertel
