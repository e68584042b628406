#pragma once
// Each subcommand of the `infertel` binary registers itself on the CLI11 app. The areas own
// their commands; main.cc only lists them.

namespace CLI {
class App;
}

namespace infertel {

void AddAgentCommand(CLI::App& app);    // src/app/agent_command.cc
void AddDemoCommand(CLI::App& app);     // src/app/demo_command.cc
void AddTracesCommand(CLI::App& app);   // src/app/traces_command.cc
void AddSpansCommand(CLI::App& app);    // src/app/traces_command.cc
void AddConfigCommand(CLI::App& app);   // src/app/config_command.cc
void AddMetricsCommand(CLI::App& app);  // src/app/metrics_command.cc
void AddSloCommand(CLI::App& app);      // src/app/slo_command.cc
void AddUiCommand(CLI::App& app);       // src/app/ui_command.cc
void AddLaunchCommand(CLI::App& app);   // src/app/launch_command.cc

// Commands run inside CLI11 callbacks; a failing command throws CLI::RuntimeError(exit_code)
// after printing its message, and main returns that code.

}  // namespace infertel
