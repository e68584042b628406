#include <gtest/gtest.h>

#include <random>

#include "core/json.h"

namespace infertel {
namespace {

std::string Json(std::string_view s) {
  std::string out;
  AppendJsonString(&out, s);
  return out;
}

TEST(JsonStringTest, EscapesAndKeepsValidUtf8) {
  EXPECT_EQ(Json("a\"b\\c\n\t\x01"), R"("a\"b\\c\n\t\u0001")");
  EXPECT_EQ(Json("阿里云 ✓"), "\"阿里云 ✓\"");
}

TEST(JsonStringTest, InvalidUtf8BecomesReplacementCharacters) {
  EXPECT_EQ(Json("a\xff"
                 "b"),
            "\"a\xEF\xBF\xBD"
            "b\"");
  EXPECT_EQ(Json("\xED\xA0\x80"),
            "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"");        // an encoded surrogate
  EXPECT_EQ(Json("\xE4\xBD"), "\"\xEF\xBF\xBD\xEF\xBF\xBD\"");  // cut sequence
  EXPECT_EQ(Utf8SeqLen("\xF0\x9F\x98\x80", 0), 4u);
  EXPECT_EQ(Utf8SeqLen("\xC0\xAF", 0), 0u);  // overlong
}

// The writer, one byte at a time, as it was before it skipped plain runs a word at a time.
std::string ByteByByte(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const std::size_t len = Utf8SeqLen(s, i);
      out.append(len != 0 ? s.substr(i, len) : "\xEF\xBF\xBD");
      i += len != 0 ? len : 1;
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out.push_back(kHex[c >> 4]);
          out.push_back(kHex[c & 0xF]);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
    ++i;
  }
  out.push_back('"');
  return out;
}

TEST(JsonStringTest, EveryByteInEveryPlaceOfAWord) {
  // Each byte value at each of the first 17 places of a plain text, so that it falls in every
  // lane of the first two eight-byte words and in the byte-wise tail.
  for (int b = 0; b < 256; ++b) {
    for (std::size_t at = 0; at < 17; ++at) {
      std::string s(24, 'a');
      s[at] = static_cast<char>(b);
      ASSERT_EQ(Json(s), ByteByByte(s)) << "byte " << b << " at " << at;
    }
  }
}

TEST(JsonStringTest, RandomTextMatchesTheByteWiseWriter) {
  // Mostly plain text with quotes, backslashes, control characters, valid and broken UTF-8
  // mixed in, at every length up to 80.
  std::mt19937 rng(7);
  const std::string pieces[] = {"\"",       "\\",           "\n",
                                "\x01",     "\x1f",         "\x7f",
                                "\xC3\xA9", "\xE2\x9C\x93", "\xF0\x9F\x98\x80",
                                "\xff",     "\xE4\xBD",     " "};
  for (int n = 0; n < 20000; ++n) {
    std::string s;
    const std::size_t len = rng() % 81;
    while (s.size() < len) {
      if (rng() % 8 == 0)
        s += pieces[rng() % std::size(pieces)];
      else
        s.push_back(static_cast<char>('0' + rng() % 75));
    }
    ASSERT_EQ(Json(s), ByteByByte(s)) << testing::PrintToString(s);
  }
}

}  // namespace
}  // namespace infertel
