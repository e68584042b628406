#include <CLI/CLI.hpp>

#include "app/commands.h"

namespace infertel {
void AddDemoCommand(CLI::App& app) { app.add_subcommand("demo", "demo (not yet built)"); }
}  // namespace infertel
