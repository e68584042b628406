#include "core/json.h"

#include <bit>
#include <cstdint>
#include <cstring>

namespace infertel {
namespace {
constexpr char kReplacement[] = "\xEF\xBF\xBD";

// The bytes of `w` that need more than a copy, as the high bit of each: a control character
// (< 0x20), '"', '\\', or a byte of 0x80 and above (a multi-byte sequence, checked one byte at
// a time). Most of what is written is long runs of plain text (captured messages, attribute
// values), which this passes eight bytes per step instead of one. The bit tricks are the
// classic ones: (x - 0x01..) & ~x has a byte's high bit set where that byte of x was zero, and
// (x - 0x20..) & ~x where it was below 0x20. A borrow can only spread upwards from a byte that
// matched, so a word without any such byte is never flagged, and the lowest flagged byte is
// always one that matched: the writer jumps straight to it.
std::uint64_t Attention(std::uint64_t w) {
  constexpr std::uint64_t kOnes = 0x0101010101010101ull;
  constexpr std::uint64_t kHigh = 0x8080808080808080ull;
  const std::uint64_t quote = w ^ (kOnes * '"');
  const std::uint64_t backslash = w ^ (kOnes * '\\');
  const std::uint64_t hits = ((quote - kOnes) & ~quote) | ((backslash - kOnes) & ~backslash) |
                             ((w - kOnes * 0x20) & ~w) | w;
  return hits & kHigh;
}

}  // namespace

std::size_t Utf8SeqLen(std::string_view s, std::size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) return 1;
  std::size_t len;
  unsigned char lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;  // overlong
    if (b0 == 0xED) hi = 0x9F;  // surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;  // overlong
    if (b0 == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  const auto b1 = static_cast<unsigned char>(s[i + 1]);
  if (b1 < lo || b1 > hi) return 0;
  for (std::size_t k = 2; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if (b < 0x80 || b > 0xBF) return 0;
  }
  return len;
}

void AppendJsonString(std::string* out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  std::size_t run = 0;  // start of the pending run of bytes copied as they are
  std::size_t i = 0;
  while (i < s.size()) {
    for (std::uint64_t w; i + 8 <= s.size(); i += 8) {
      std::memcpy(&w, s.data() + i, 8);
      if (const std::uint64_t hits = Attention(w)) {
        // Text that is JSON itself (captured messages) has a quote every few bytes: go to
        // the first byte that needs attention instead of re-reading the word from each byte
        // before it. The lowest byte of a little-endian load is the first in the text.
        if constexpr (std::endian::native == std::endian::little)
          i += static_cast<std::size_t>(std::countr_zero(hits)) / 8;
        break;
      }
    }
    if (i == s.size()) break;
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
      ++i;
      continue;
    }
    if (c >= 0x80) {
      const std::size_t len = Utf8SeqLen(s, i);
      if (len != 0) {
        i += len;
        continue;
      }
    }
    out->append(s.data() + run, i - run);
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      case '\b':
        out->append("\\b");
        break;
      case '\f':
        out->append("\\f");
        break;
      default:
        if (c < 0x20) {
          out->append("\\u00");
          out->push_back(kHex[c >> 4]);
          out->push_back(kHex[c & 0xF]);
        } else {
          out->append(kReplacement);
        }
    }
    ++i;
    run = i;
  }
  out->append(s.data() + run, s.size() - run);
  out->push_back('"');
}

}  // namespace infertel
