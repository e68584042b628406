#pragma once
// Requests passed on without copying or freeing their items one by one.
//
// A received OTLP request is about 60 heap objects per span (strings, key-values). Moved
// between heap messages, every one of them is allocated on the receiver's thread and freed on
// an exporter's, which was about a third of the agent's CPU in the OTLP benchmark
// (docs/performance-history.md). A Held request instead lives on a protobuf Arena owned by a
// Memory, and stages pass it on by linking pointers:
//
//   - the receiver parses each request onto the arena of a fresh Memory;
//   - a stage that keeps some items (the assembler's waiting spans) keeps raw pointers to them
//     and a reference to their Memory;
//   - a request made from parts of others (a split, an export batch, the assembler's output)
//     is a *view*: its containers (request, resource and scope blocks, repeated fields) are
//     made on its own Memory's arena, and its leaves (Resource, InstrumentationScope, the
//     items) are borrowed from the requests it was made from, whose Memories it keeps.
//
// Rules that keep this sound:
//   - Every Held request is on an arena. Arena messages never run their destructors, so a
//     container never frees what it points at; the leaves die with the Memory that made them.
//   - Pointers move between containers only with RepeatedPtrField's UnsafeArena* calls, and a
//     container holding borrowed items is never Clear()ed or RemoveLast()ed (protobuf keeps
//     such elements for reuse, and a later Add() would hand a borrowed item out again).
//   - One item is in at most one live view that may still change it. Borrowed headers may be
//     shared by several views; they are only read (their cached sizes are atomic).

#include <google/protobuf/arena.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include "pipeline/signal.h"

namespace infertel::pipeline {

// An arena and the Memories whose objects its views borrow. Built by one thread, then shared
// (read-only) through shared_ptr; the arena itself is thread-safe for allocation.
class Memory {
 public:
  // protobuf's default blocks (256 B doubling to 8 KiB, per allocating thread): decoding a
  // 512-span request with blocks up to 64 KiB or 512 KiB was 2 % faster, within the noise,
  // and small first blocks keep a stage that adds a few objects to a large request's arena
  // (the assembler's normalization, on its own thread) from reserving a large block for them.
  Memory() = default;
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;
  virtual ~Memory() = default;

  google::protobuf::Arena* arena() { return &arena_; }
  // Lets go of up to `n` of the Memories kept (the last kept first); returns how many are
  // left. Freeing a batch of 4,096 entry spans at once took 2.3–5 ms on one core: an export lane
  // frees it in steps, with its pacer between them. Nothing may read this Memory's views after.
  std::size_t ReleaseKept(std::size_t n) {
    for (; n > 0 && !kept_.empty(); --n) kept_.pop_back();
    return kept_.size();
  }
  // Keeps `other` alive as long as this Memory (no-op for null or itself).
  void Keep(std::shared_ptr<Memory> other) {
    if (other == nullptr || other.get() == this) return;
    // Consecutive parts of one source are kept once.
    if (other == (kept_.empty() ? first_kept_ : kept_.back())) return;
    if (first_kept_ == nullptr) {
      first_kept_ = std::move(other);
    } else {
      kept_.push_back(std::move(other));
    }
  }

 protected:
  // An arena whose first block is the caller's `block` (which must outlive the arena), and
  // whose later blocks are up to `block_size` bytes.
  Memory(char* block, std::size_t block_size) : arena_(Options(block, block_size)) {}

 private:
  static google::protobuf::ArenaOptions Options(char* block, std::size_t block_size) {
    google::protobuf::ArenaOptions o;
    o.start_block_size = block_size;
    o.max_block_size = std::max(block_size, o.max_block_size);
    o.initial_block = block;
    o.initial_block_size = block_size;
    return o;
  }
  // Most Memories keep one other (an entry span its emitter's header, a split its source):
  // that one needs no vector, whose buffer was one more allocation per entry span.
  std::shared_ptr<Memory> first_kept_;
  std::vector<std::shared_ptr<Memory>> kept_;
  google::protobuf::Arena arena_;
};

namespace held_internal {
template <std::size_t N>
struct InlineBlock {
  alignas(std::max_align_t) char bytes[N];
};
}  // namespace held_internal

// A Memory whose arena's first block of N bytes is inside it, so that one allocation (with
// make_shared's, the shared_ptr's too) holds the Memory, its arena and a small request whole.
// An entry span is built on the gateway's thread and freed on an export lane's, and every
// allocation made on one thread and freed on another is a slow path for the allocator on
// both. The block is a base class so that it is built before the arena and outlives it.
template <std::size_t N>
class MemoryWithBlock final : private held_internal::InlineBlock<N>, public Memory {
 public:
  MemoryWithBlock() : Memory(held_internal::InlineBlock<N>::bytes, N) {}
};

// A request on `memory`'s arena (possibly a view; see above).
template <typename Request>
struct Held {
  Request* request = nullptr;
  std::shared_ptr<Memory> memory;

  // A new empty request on a new Memory.
  static Held Make() {
    Held h;
    h.memory = std::make_shared<Memory>();
    h.request = google::protobuf::Arena::CreateMessage<Request>(h.memory->arena());
    return h;
  }
  // A new empty request on a new MemoryWithBlock<N>.
  template <std::size_t N>
  static Held MakeWithBlock() {
    Held h;
    h.memory = std::make_shared<MemoryWithBlock<N>>();
    h.request = google::protobuf::Arena::CreateMessage<Request>(h.memory->arena());
    return h;
  }
};

namespace held_internal {

// A heap request owned by the Memory that holds its view.
template <typename Request>
class Owning final : public Memory {
 public:
  explicit Owning(Request&& r) : request(std::move(r)) {}
  Request request;
};

template <typename T>
using Field = google::protobuf::RepeatedPtrField<T>;

// Moves the pointers of the first `k` elements of `from` to the end of `to`. Both on arenas.
template <typename T>
void RelinkFront(Field<T>* from, int k, Field<T>* to) {
  if (k <= 0) return;
  std::vector<T*> taken(static_cast<std::size_t>(k));
  from->UnsafeArenaExtractSubrange(0, k, taken.data());
  to->Reserve(to->size() + k);
  for (T* e : taken) to->UnsafeArenaAddAllocated(e);
}

}  // namespace held_internal

// Drops the pointers of elements [start, start+n) of a field on an arena, without touching
// the elements (which stay where they are owned).
template <typename T>
void Unlink(google::protobuf::RepeatedPtrField<T>* field, int start, int n) {
  if (n > 0) field->UnsafeArenaExtractSubrange(start, n, nullptr);
}

// A view of a heap request, which the returned Memory then owns: the entry point for
// producers that build heap messages (the gateway's entry spans, tests).
template <typename Request>
Held<Request> Hold(Request&& request) {
  using T = SignalTraits<Request>;
  using namespace held_internal;
  auto owning = std::make_shared<Owning<Request>>(std::move(request));
  Held<Request> h;
  h.request = google::protobuf::Arena::CreateMessage<Request>(owning->arena());
  for (const auto& rs : T::Resources(owning->request)) {
    auto* out_rs = AddBorrowed(T::Resources(h.request), rs);
    for (const auto& ss : T::Scopes(rs))
      LinkAll(T::Items(ss), T::Items(AddBorrowed(T::Scopes(out_rs), ss)));
  }
  h.memory = std::move(owning);
  return h;
}

// A deep heap copy of a held request (for a second exporter lane, and for sinks that take
// heap requests only).
template <typename Request>
Request CopyOut(const Held<Request>& h) {
  return Request(*h.request);
}

// Moves the first `n` items of `src` (in order) into a new view, which borrows the resource
// and scope headers they hang under and keeps `src`'s Memory; emptied blocks leave `src`.
// Returns the new view; `*moved` gets how many items it holds.
template <typename Request>
Held<Request> TakeItems(Held<Request>* src, std::size_t n, std::size_t* moved) {
  using T = SignalTraits<Request>;
  using namespace held_internal;
  Held<Request> dst = Held<Request>::Make();
  dst.memory->Keep(src->memory);
  *moved = 0;
  auto* src_res = T::Resources(src->request);
  int drop_res = 0;
  for (int i = 0; i < src_res->size() && *moved < n; ++i) {
    auto* rs = src_res->Mutable(i);
    auto* out_rs = AddBorrowed(T::Resources(dst.request), *rs);
    auto* scopes = T::Scopes(rs);
    int drop_scopes = 0;
    for (int j = 0; j < scopes->size() && *moved < n; ++j) {
      auto* ss = scopes->Mutable(j);
      auto* items = T::Items(ss);
      const int k = static_cast<int>(std::min<std::size_t>(items->size(), n - *moved));
      RelinkFront(items, k, T::Items(AddBorrowed(T::Scopes(out_rs), *ss)));
      *moved += static_cast<std::size_t>(k);
      if (items->empty()) ++drop_scopes;
    }
    Unlink(scopes, 0, drop_scopes);
    if (scopes->empty()) ++drop_res;
  }
  Unlink(src_res, 0, drop_res);
  return dst;
}

// Builds one export batch from several held parts without copying: a view on a new Memory that
// keeps the parts' Memories. Equal resource and scope blocks are folded as Merger folds them.
template <typename Request>
class HeldMerger {
 public:
  HeldMerger() : batch_(Held<Request>::Make()), merger_(batch_.request) {}
  void Add(const Held<Request>& part) {
    batch_.memory->Keep(part.memory);
    merger_.Link(*part.request);
  }
  Held<Request> Finish() && { return std::move(batch_); }

 private:
  Held<Request> batch_;
  Merger<Request> merger_;
};

}  // namespace infertel::pipeline
