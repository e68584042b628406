#include <CLI/CLI.hpp>

#include "app/commands.h"

namespace infertel {
void AddSimCommand(CLI::App& app) { app.add_subcommand("sim", "Run the engine simulator"); }
}  // namespace infertel
