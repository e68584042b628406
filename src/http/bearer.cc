#include "http/bearer.h"

#include <cctype>

namespace infertel::http {

bool ConstantTimeEqual(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  return diff == 0;
}

bool BearerTokenMatches(const StringRequest& req, std::string_view token) {
  if (token.empty()) return true;
  auto it = req.find(boost::beast::http::field::authorization);
  if (it == req.end()) return false;
  std::string_view v = it->value();
  constexpr std::string_view kScheme = "bearer ";
  if (v.size() < kScheme.size()) return false;
  for (std::size_t i = 0; i < kScheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(v[i])) != kScheme[i]) return false;
  v.remove_prefix(kScheme.size());
  while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  return ConstantTimeEqual(v, token);
}

}  // namespace infertel::http
