#include <CLI/CLI.hpp>

#include "app/commands.h"

namespace infertel {
void AddTracesCommand(CLI::App& app) { app.add_subcommand("traces", "traces (not yet built)"); }
}  // namespace infertel
