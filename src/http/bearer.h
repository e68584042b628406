#pragma once
// The bearer token of the admin address's APIs (the console's /api/config, the store's /api/v1):
// exactly one "Authorization: Bearer <token>" field, the scheme in any case, compared in a time
// that does not depend on how much of the token matched.

#include <string_view>

#include "http/simple_server.h"

namespace infertel::http {

// Whether `req` carries `token` as its bearer token (always true for an empty token).
bool BearerTokenMatches(const StringRequest& req, std::string_view token);

// Same length or not, the comparison takes the same time for a given candidate length.
bool ConstantTimeEqual(std::string_view a, std::string_view b);

}  // namespace infertel::http
