// `infertel config`: the effective configuration and where each value comes from.

#include <CLI/CLI.hpp>

#include <cstdio>

#include "app/commands.h"
#include "config/doc.h"

namespace infertel {

void AddConfigCommand(CLI::App& app) {
  auto markdown = std::make_shared<bool>(false);
  CLI::App* sub = app.add_subcommand(
      "config",
      "Print the effective configuration (console > env > default) and each value's source");
  sub->add_flag("--markdown", *markdown, "Print the key table of docs/configuration.md instead");
  sub->callback([markdown] {
    if (*markdown) {
      std::fputs(config::KeysMarkdownTable().c_str(), stdout);
      return;
    }
    auto r = config::Resolve(config::ProcessEnv());
    for (const auto& e : r.errors) std::fprintf(stderr, "infertel config: %s\n", e.c_str());
    std::fputs(config::DescribeSettings(r.settings).c_str(), stdout);
    if (!r.errors.empty()) throw CLI::RuntimeError(2);
  });
}

}  // namespace infertel
