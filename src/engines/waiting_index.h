#pragma once
// The assembler's index of waiting engine spans: join-key hash → the span's sequence number.
//
// Every engine span that waits is indexed once per join key when it arrives and unindexed
// when it leaves, and most leave unmatched at the end of their window, so the index sees an
// insert and an erase per key for every span, on the receiver's and the assembler's threads
// under the assembler's lock. As a node-based std::unordered_multimap these were two cache
// misses each and a node allocation per insert: 6.5 % of the agent's CPU in the OTLP
// benchmark (docs/performance.md). This is one flat table, open addressing with linear
// probing and backward-shift deletion (no tombstones), so a lookup touches one or two cache
// lines and an insert allocates nothing until the table grows.
//
// A multimap: one key may map to several sequence numbers (a hash collision, or several spans
// of one request id); (key, seq) pairs are unique.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace infertel::engines {

class WaitingIndex {
 public:
  void Insert(std::uint64_t key, std::uint64_t seq);
  // Removes the pair (key, seq); false if it was not there.
  bool Erase(std::uint64_t key, std::uint64_t seq);
  // Calls fn(seq) for every pair with this key, in no particular order. fn must not change
  // the index.
  template <typename Fn>
  void ForEach(std::uint64_t key, Fn&& fn) const {
    if (size_ == 0) return;
    for (std::size_t i = Home(key);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.seq == kEmpty) return;
      if (s.key == key) fn(s.seq);
    }
  }
  // Empties the index and keeps its slots. The table never shrinks; it doubles when half
  // full, so it is at least a quarter full after growing: at most four 16-byte slots per join
  // key, two keys per span, 6.4 MB at the assembler's bound of 50,000 waiting spans.
  void Clear();
  std::size_t size() const { return size_; }
  std::size_t capacity() const { return slots_.size(); }

 private:
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};
  struct Slot {
    std::uint64_t key = 0;
    std::uint64_t seq = kEmpty;
  };
  // Keys are already hashes of request ids; the multiply spreads them over the high bits, of
  // which the table uses as many as it has slots.
  std::size_t Home(std::uint64_t key) const {
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  void Grow();

  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  unsigned shift_ = 64;
  std::size_t size_ = 0;
};

}  // namespace infertel::engines
