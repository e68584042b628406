#pragma once
// Reading JSON in tests with simdjson: a document that must parse, and a string field or
// "<absent>".

#include <gtest/gtest.h>
#include <simdjson.h>

#include <string>
#include <string_view>

namespace infertel::testing {

inline simdjson::dom::element ParseJson(simdjson::dom::parser& parser, const std::string& json) {
  simdjson::dom::element root;
  EXPECT_EQ(parser.parse(json).get(root), simdjson::SUCCESS) << json;
  return root;
}

inline std::string Str(simdjson::simdjson_result<simdjson::dom::element> e) {
  std::string_view s;
  if (e.get_string().get(s)) return "<absent>";
  return std::string(s);
}

}  // namespace infertel::testing
