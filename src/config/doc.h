#pragma once
// Renderings of the key registry: the Markdown table of docs/configuration.md and the
// plain listing of `infertel config`.

#include <string>

#include "config/settings.h"

namespace infertel::config {

// The "Keys" table of docs/configuration.md, generated from the registry; a unit test keeps
// the committed document equal to it.
std::string KeysMarkdownTable();
// One line per key: console key, value, source, env var, live/restart.
std::string DescribeSettings(const Settings& settings);

}  // namespace infertel::config
