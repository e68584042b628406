#pragma once
// `infertel sim`: the engine simulator as a subcommand. Declared here rather than in
// app/commands.h so that the simulator includes nothing of the agent; main.cc lists it.

namespace CLI {
class App;
}

namespace infertel {

void AddSimCommand(CLI::App& app);

}  // namespace infertel
