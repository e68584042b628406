#include <CLI/CLI.hpp>

#include "app/commands.h"

namespace infertel {
void AddAgentCommand(CLI::App& app) { app.add_subcommand("agent", "agent (not yet built)"); }
}  // namespace infertel
