#pragma once
// An environment for tests: config::EnvLookup over a map, in place of the process's.

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "config/settings.h"

namespace infertel::testing {

inline config::EnvLookup EnvOf(std::map<std::string, std::string> env) {
  return [env = std::move(env)](std::string_view name) -> std::optional<std::string> {
    auto it = env.find(std::string(name));
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
}

}  // namespace infertel::testing
