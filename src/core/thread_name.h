#pragma once
// Names the calling thread, so that `top -H`, `perf` and /proc/PID/task/*/comm show which of
// the agent's threads spends the CPU (the gateway's I/O, the assembler, an exporter lane...),
// and asks the scheduler to serve latency-bound threads first when they wake.

#include <chrono>
#include <string>
#include <string_view>

namespace infertel {

// Linux keeps 15 bytes of a thread's name: longer names are cut there. Never fails loudly:
// a name is a diagnostic aid only.
void NameThisThread(std::string_view name) noexcept;

// The shortest scheduler slice Linux accepts.
inline constexpr std::chrono::microseconds kShortSlice{100};

// For the gateway's threads, which wake for every request and every streamed chunk: asks for
// a scheduler slice of kShortSlice instead of the kernel's default (0.7 ms times 1 + log2 of
// the CPU count: 1.4 ms on a 2-core machine). With Linux's EEVDF scheduler
// (custom slices since Linux 6.12) a waking thread with a shorter slice gets an earlier
// deadline and preempts the thread running on its core (an export lane committing a batch to
// the store, say) instead of waiting for that thread's slice to end. It does not change any
// thread's share of the CPU, so background work keeps up as before. Older kernels ignore the
// slice. Keeps the thread's policy and nice value; a thread under another policy than
// SCHED_OTHER or SCHED_BATCH is left alone. Returns whether the kernel accepted the request.
bool AskForShortSlices() noexcept;

// The calling thread's name, as the kernel holds it ("" when it cannot be read).
std::string ThisThreadName();

}  // namespace infertel
