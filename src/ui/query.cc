#include "ui/query.h"

#include <fmt/format.h>

namespace infertel::ui {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::optional<std::string> Decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%') {
      if (i + 2 >= s.size()) return std::nullopt;
      const int hi = HexValue(s[i + 1]), lo = HexValue(s[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

std::optional<std::string_view> QueryParams::Get(std::string_view name) const {
  for (const auto& [k, v] : items)
    if (k == name) return std::string_view(v);
  return std::nullopt;
}

std::variant<QueryParams, std::string> ParseQuery(std::string_view query) {
  if (query.size() > kMaxQueryBytes)
    return fmt::format("the query string is longer than {} bytes", kMaxQueryBytes);
  QueryParams p;
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view item = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (item.empty()) continue;
    if (p.items.size() == kMaxQueryParams)
      return fmt::format("more than {} query parameters", kMaxQueryParams);
    const auto eq = item.find('=');
    auto key = Decode(item.substr(0, eq));
    auto value = Decode(eq == std::string_view::npos ? std::string_view() : item.substr(eq + 1));
    if (!key || !value) return std::string("a bad percent escape in the query string");
    p.items.emplace_back(std::move(*key), std::move(*value));
  }
  return p;
}

}  // namespace infertel::ui
