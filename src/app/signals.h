#pragma once
// Waiting for SIGINT/SIGTERM in a long-running command.

namespace infertel {

// Blocks SIGINT and SIGTERM in the calling thread and every thread it starts afterwards;
// call before starting threads.
void BlockTerminationSignals();
// Waits for SIGINT or SIGTERM and returns its number.
int WaitForTerminationSignal();

}  // namespace infertel
