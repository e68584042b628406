#pragma once
// Counts the heap allocations a piece of code makes on the calling thread: AllocationsIn(f).
//
// This header replaces the global operator new and delete of the test binary that includes it
// (they only count, and only while AllocationsIn runs): include it from exactly one file of a
// test binary.

#include <cstddef>
#include <cstdlib>
#include <new>

namespace infertel::testing_alloc {
inline thread_local bool counting = false;
inline thread_local int allocations = 0;
}  // namespace infertel::testing_alloc

void* operator new(std::size_t n) {
  if (infertel::testing_alloc::counting) ++infertel::testing_alloc::allocations;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace infertel {

// The operator new calls `f()` makes on this thread.
template <typename F>
int AllocationsIn(F&& f) {
  testing_alloc::allocations = 0;
  testing_alloc::counting = true;
  f();
  testing_alloc::counting = false;
  return testing_alloc::allocations;
}

}  // namespace infertel
