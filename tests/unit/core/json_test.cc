#include <gtest/gtest.h>

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

}  // namespace
}  // namespace infertel
