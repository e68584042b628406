#pragma once
// A URL's query string (`a=1&b=two%20words`) read into its parameters: percent-decoded, `+` as
// a space, bounded (outside input: a browser or a script). Fuzzed (tests/fuzz/ui_query_fuzz.cc).

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace infertel::ui {

inline constexpr std::size_t kMaxQueryParams = 32;
inline constexpr std::size_t kMaxQueryBytes = 8192;

struct QueryParams {
  std::vector<std::pair<std::string, std::string>> items;
  // The first value of `name`, if given.
  std::optional<std::string_view> Get(std::string_view name) const;
};

// The parameters of `query` (what follows '?'), or why not: too long, too many, a bad escape.
std::variant<QueryParams, std::string> ParseQuery(std::string_view query);

}  // namespace infertel::ui
