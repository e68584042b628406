#include "engines/waiting_index.h"

#include <utility>

namespace infertel::engines {

namespace {
// The table is grown to keep at most half of its slots used, so probe runs stay short.
constexpr std::size_t kFirstCapacity = 64;
}  // namespace

void WaitingIndex::Insert(std::uint64_t key, std::uint64_t seq) {
  if ((size_ + 1) * 2 > slots_.size()) Grow();
  std::size_t i = Home(key);
  while (slots_[i].seq != kEmpty) i = (i + 1) & mask_;
  slots_[i] = {key, seq};
  ++size_;
}

bool WaitingIndex::Erase(std::uint64_t key, std::uint64_t seq) {
  if (size_ == 0) return false;
  std::size_t i = Home(key);
  for (;; i = (i + 1) & mask_) {
    if (slots_[i].seq == kEmpty) return false;
    if (slots_[i].key == key && slots_[i].seq == seq) break;
  }
  // Backward shift: each later entry of the run that may sit at the hole (its home is not
  // between the hole and itself) moves into it, so no lookup ever meets a gap in its run.
  for (std::size_t j = (i + 1) & mask_; slots_[j].seq != kEmpty; j = (j + 1) & mask_) {
    const std::size_t home = Home(slots_[j].key);
    const std::size_t from_home = (j - home) & mask_, from_hole = (j - i) & mask_;
    if (from_home >= from_hole) {
      slots_[i] = slots_[j];
      i = j;
    }
  }
  slots_[i] = Slot{};
  --size_;
  return true;
}

void WaitingIndex::Clear() {
  for (Slot& s : slots_) s = Slot{};
  size_ = 0;
}

void WaitingIndex::Grow() {
  std::vector<Slot> old = std::move(slots_);
  const std::size_t capacity = old.empty() ? kFirstCapacity : old.size() * 2;
  slots_.assign(capacity, Slot{});
  mask_ = capacity - 1;
  shift_ = 64;
  for (std::size_t c = capacity; c > 1; c >>= 1) --shift_;
  size_ = 0;
  for (const Slot& s : old)
    if (s.seq != kEmpty) Insert(s.key, s.seq);
}

}  // namespace infertel::engines
