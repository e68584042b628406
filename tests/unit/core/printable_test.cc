#include "core/printable.h"

#include <gtest/gtest.h>

namespace infertel {
namespace {

using namespace std::string_literals;

TEST(PrintableTest, PlainTextAndUtf8AreKept) {
  EXPECT_EQ(Printable("chat Qwen/Qwen2.5-7B"), "chat Qwen/Qwen2.5-7B");
  EXPECT_EQ(Printable("modèle 模型 🙂 back\\slash"), "modèle 模型 🙂 back\\slash");
}

TEST(PrintableTest, ControlCharactersAreEscaped) {
  // A client's model name that would retitle the terminal, ring it, and forge a line.
  const std::string hostile = "m\x1b]0;owned\x07\r\nFORGED\0end\x7f\t"s;
  EXPECT_EQ(Printable(hostile), "m\\x1b]0;owned\\x07\\r\\nFORGED\\x00end\\x7f\\t");
}

TEST(PrintableTest, C1BidiAndInvalidUtf8AreEscaped) {
  EXPECT_EQ(Printable("a\xc2\x9b"
                      "2Jb"),
            "a\\u{009b}2Jb");  // C1 CSI
  EXPECT_EQ(Printable("x\xe2\x80\xae"
                      "cba"),
            "x\\u{202e}cba");  // right-to-left override
  EXPECT_EQ(Printable("\x9b"
                      "2J"),
            "\\x9b2J");                                     // a lone 8-bit CSI byte
  EXPECT_EQ(Printable("\xc0\xaf"), "\\xc0\\xaf");           // overlong '/'
  EXPECT_EQ(Printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(Printable("\xe6\xa8"), "\\xe6\\xa8");           // cut short
}

TEST(PrintableTest, ExcerptCutsLongValuesAndSaysHowLong) {
  EXPECT_EQ(Excerpt("short"), "short");
  const std::string big(500 * 1024, 'x');
  const std::string e = Excerpt(big, 16);
  EXPECT_EQ(e, std::string(16, 'x') + "… (512000 bytes)");
  // Never in the middle of a character.
  EXPECT_EQ(Excerpt("ab模型", 4), "ab… (8 bytes)");
  EXPECT_EQ(Excerpt("a\nb", 2), "a\\n… (3 bytes)");
}

}  // namespace
}  // namespace infertel
