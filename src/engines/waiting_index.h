#pragma once
// The assembler's index of waiting engine spans: join-key hash → the span's sequence number.
//
// Every engine span that waits is indexed once per join key when it arrives, and most leave
// unmatched at the end of their window, in the order they came. A single hash table over all
// of them (1 MB and more at 170k spans/s) took a cache miss for every insert on the
// receiver's thread and another for the erase on the assembler's: about 5 % of the agent's
// CPU in the OTLP benchmark (docs/performance-history.md, "The waiting index in generations").
//
// So the index is a row of small tables, generations of kGenerationEntries pairs each, in
// arrival order. Inserts go into the newest, which is small enough to stay in cache. Nothing
// is erased one by one: a span that leaves (released or matched) stays in its generation, and
// a whole generation is dropped, its table cleared in one sweep and kept for reuse, once every
// span in it has left the waiting table (DropBefore). A lookup probes every generation (13 at
// the assembler's bound of 50,000 waiting spans with one key each, 25 with two), and may
// report sequence numbers that have already left: the caller checks each against its table.
//
// A multimap: one key may map to several sequence numbers (a hash collision, or several spans
// of one request id).

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

namespace infertel::engines {

class WaitingIndex {
 public:
  // Pairs per generation. Its table has twice as many 16-byte slots: 128 KiB.
  static constexpr std::size_t kGenerationEntries = 4096;

  // seq must not be below any seq inserted before (the assembler numbers spans in order).
  void Insert(std::uint64_t key, std::uint64_t seq);
  // Calls fn(seq) for every pair with this key that has not been dropped, in no particular
  // order, including pairs of spans that have left since; fn must not change the index.
  template <typename Fn>
  void ForEach(std::uint64_t key, Fn&& fn) const {
    for (const Generation& g : generations_) {
      for (std::size_t i = Home(key);; i = (i + 1) & kMask) {
        const Slot& s = g.slots[i];
        if (s.seq == kEmpty) break;
        if (s.key == key) fn(s.seq);
      }
    }
  }
  // Drops every generation whose pairs all have a seq below `seq` (their spans have left),
  // except the newest, which keeps taking inserts until it is full.
  void DropBefore(std::uint64_t seq);
  // Empties the index; the tables are kept for reuse.
  void Clear();
  // Pairs held, including those of spans that have left but whose generation is not dropped.
  std::size_t size() const;
  std::size_t generations() const { return generations_.size(); }

 private:
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};
  static constexpr std::size_t kSlots = kGenerationEntries * 2;  // at most half full
  static constexpr std::size_t kMask = kSlots - 1;
  static constexpr unsigned kShift = 64 - 13;  // log2(kSlots) == 13
  static_assert(kSlots == std::size_t{1} << (64 - kShift));
  struct Slot {
    std::uint64_t key = 0;
    std::uint64_t seq = kEmpty;
  };
  struct Generation {
    std::vector<Slot> slots;  // kSlots
    std::size_t size = 0;
    std::uint64_t last_seq = 0;  // the highest seq inserted
  };
  // Keys are already hashes of request ids; the multiply spreads them over the high bits.
  static std::size_t Home(std::uint64_t key) {
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> kShift);
  }
  // Drops the oldest generation: its table is cleared and kept as a spare, or freed.
  void RetireOldest();

  std::deque<Generation> generations_;  // oldest first; the last takes inserts
  std::vector<Generation> spares_;      // cleared tables, at most kMaxSpares
  static constexpr std::size_t kMaxSpares = 2;
};

}  // namespace infertel::engines
