#pragma once
// Counts the heap allocations a piece of code makes on the calling thread: AllocationsIn(f).
//
// This header replaces the global operator new and delete of the test binary that includes it
// (they only count, and only while AllocationsIn runs): include it from exactly one file of a
// test binary. Every form is replaced, nothrow and array ones too: a delete of ours (free) must
// never meet a new of the library's (gRPC and simdjson allocate with `new (std::nothrow)`),
// which AddressSanitizer reports as an alloc-dealloc mismatch.

#include <cstddef>
#include <cstdlib>
#include <new>

namespace infertel::testing_alloc {
inline thread_local bool counting = false;
inline thread_local int allocations = 0;

inline void* Allocate(std::size_t n) noexcept {
  if (counting) ++allocations;
  return std::malloc(n == 0 ? 1 : n);
}
}  // namespace infertel::testing_alloc

void* operator new(std::size_t n) {
  if (void* p = infertel::testing_alloc::Allocate(n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return ::operator new(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  return infertel::testing_alloc::Allocate(n);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  return infertel::testing_alloc::Allocate(n);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

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
