#pragma once
// Names the calling thread, so that `top -H`, `perf` and /proc/PID/task/*/comm show which of
// the agent's threads spends the CPU (the gateway's I/O, the assembler, an exporter lane...).

#include <string>
#include <string_view>

namespace infertel {

// Linux keeps 15 bytes of a thread's name: longer names are cut there. Never fails loudly:
// a name is a diagnostic aid only.
void NameThisThread(std::string_view name) noexcept;

// The calling thread's name, as the kernel holds it ("" when it cannot be read).
std::string ThisThreadName();

}  // namespace infertel
