#include "ui/query.h"

#include <gtest/gtest.h>

namespace infertel::ui {
namespace {

QueryParams Ok(std::string_view q) {
  auto r = ParseQuery(q);
  if (auto* e = std::get_if<std::string>(&r)) ADD_FAILURE() << *e;
  return std::get<QueryParams>(r);
}

TEST(UiQuery, DecodesPercentEscapesAndPlus) {
  const QueryParams p = Ok("model=meta-llama%2FLlama-3.1&q=two+words%21&&empty=&flag");
  EXPECT_EQ(p.Get("model"), "meta-llama/Llama-3.1");
  EXPECT_EQ(p.Get("q"), "two words!");
  EXPECT_EQ(p.Get("empty"), "");
  EXPECT_EQ(p.Get("flag"), "");
  EXPECT_EQ(p.Get("missing"), std::nullopt);
  EXPECT_EQ(Ok("a=1&a=2").Get("a"), "1");  // the first wins
}

TEST(UiQuery, RefusesBadEscapesAndPastTheBounds) {
  for (const char* bad : {"q=%", "q=%4", "q=%zz", "%G0=1"})
    EXPECT_TRUE(std::holds_alternative<std::string>(ParseQuery(bad))) << bad;
  std::string many;
  for (std::size_t i = 0; i <= kMaxQueryParams; ++i) many += "k" + std::to_string(i) + "=v&";
  EXPECT_NE(std::get<std::string>(ParseQuery(many)).find("query parameters"), std::string::npos);
  EXPECT_TRUE(
      std::holds_alternative<std::string>(ParseQuery(std::string(kMaxQueryBytes + 1, 'a'))));
}

}  // namespace
}  // namespace infertel::ui
