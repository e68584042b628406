#include "engines/waiting_index.h"

#include <algorithm>
#include <utility>

namespace infertel::engines {

void WaitingIndex::Insert(std::uint64_t key, std::uint64_t seq) {
  if (generations_.empty() || generations_.back().size >= kGenerationEntries) {
    if (!spares_.empty()) {
      generations_.push_back(std::move(spares_.back()));
      spares_.pop_back();
    } else {
      generations_.emplace_back().slots.assign(kSlots, Slot{});
    }
  }
  Generation& g = generations_.back();
  std::size_t i = Home(key);
  while (g.slots[i].seq != kEmpty) i = (i + 1) & kMask;
  g.slots[i] = {key, seq};
  ++g.size;
  g.last_seq = seq;
}

void WaitingIndex::DropBefore(std::uint64_t seq) {
  while (generations_.size() > 1 && generations_.front().last_seq < seq) RetireOldest();
}

void WaitingIndex::Clear() {
  while (!generations_.empty()) RetireOldest();
}

std::size_t WaitingIndex::size() const {
  std::size_t n = 0;
  for (const Generation& g : generations_) n += g.size;
  return n;
}

void WaitingIndex::RetireOldest() {
  Generation& g = generations_.front();
  if (spares_.size() < kMaxSpares) {
    std::fill(g.slots.begin(), g.slots.end(), Slot{});
    g.size = 0;
    g.last_seq = 0;
    spares_.push_back(std::move(g));
  }
  generations_.pop_front();  // freed here when there are spares enough
}

}  // namespace infertel::engines
