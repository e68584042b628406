#include "engines/waiting_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <utility>
#include <vector>

namespace infertel::engines {
namespace {

constexpr std::uint64_t kGen = WaitingIndex::kGenerationEntries;

std::vector<std::uint64_t> Seqs(const WaitingIndex& index, std::uint64_t key) {
  std::vector<std::uint64_t> out;
  index.ForEach(key, [&](std::uint64_t seq) { out.push_back(seq); });
  std::sort(out.begin(), out.end());
  return out;
}

TEST(WaitingIndexTest, FindsEveryPairOfAKey) {
  WaitingIndex index;
  EXPECT_TRUE(Seqs(index, 7).empty());
  index.Insert(7, 1);
  index.Insert(7, 2);
  index.Insert(8, 3);
  EXPECT_EQ(Seqs(index, 7), (std::vector<std::uint64_t>{1, 2}));
  EXPECT_EQ(Seqs(index, 8), (std::vector<std::uint64_t>{3}));
  EXPECT_TRUE(Seqs(index, 9).empty());
  EXPECT_EQ(index.size(), 3u);
  index.Clear();
  EXPECT_EQ(index.size(), 0u);
  EXPECT_EQ(index.generations(), 0u);
  EXPECT_TRUE(Seqs(index, 8).empty());
  index.Insert(8, 4);  // into a table kept from before the Clear: it must be empty
  EXPECT_EQ(Seqs(index, 8), (std::vector<std::uint64_t>{4}));
  EXPECT_TRUE(Seqs(index, 7).empty());
}

// A generation goes only when its last pair's span has left, and never the newest one.
TEST(WaitingIndexTest, DropsAGenerationOnlyWhenAllOfItHasLeft) {
  WaitingIndex index;
  for (std::uint64_t seq = 0; seq < 2 * kGen + 10; ++seq) index.Insert(seq % 5, seq);
  EXPECT_EQ(index.generations(), 3u);
  index.DropBefore(kGen - 1);  // seq kGen - 1, the first generation's last, is still waiting
  EXPECT_EQ(index.generations(), 3u);
  EXPECT_EQ(Seqs(index, (kGen - 1) % 5).front(), (kGen - 1) % 5);  // stale pairs still found
  index.DropBefore(kGen);
  EXPECT_EQ(index.generations(), 2u);
  EXPECT_EQ(index.size(), kGen + 10);
  for (std::uint64_t k = 0; k < 5; ++k) EXPECT_GE(Seqs(index, k).front(), kGen);
  index.DropBefore(~std::uint64_t{0});  // everything left: the newest generation stays
  EXPECT_EQ(index.generations(), 1u);
  EXPECT_EQ(index.size(), 10u);
  // The next inserts go into it, and a new generation starts when it is full.
  for (std::uint64_t seq = 2 * kGen + 10; seq < 3 * kGen; ++seq) index.Insert(1, seq);
  EXPECT_EQ(index.generations(), 1u);
  index.Insert(2, 3 * kGen);
  EXPECT_EQ(index.generations(), 2u);
  // A dropped generation's table is reused cleared: nothing of it is found again.
  std::vector<std::uint64_t> want;  // key 2's pairs among the 10 left in the newest one
  for (std::uint64_t seq = 2 * kGen; seq < 2 * kGen + 10; ++seq)
    if (seq % 5 == 2) want.push_back(seq);
  want.push_back(3 * kGen);
  EXPECT_EQ(Seqs(index, 2), want);
}

// Against std::multimap, with the assembler's pattern: increasing sequence numbers, spans
// leaving from the front (DropBefore with the front's number) and keys drawn from a small
// set, so that long runs of one key and runs of several keys in one probe sequence are common.
// Every pair of a span still waiting is found; any other pair found belongs to a span that
// has left and to a generation not yet dropped; and the generations held stay within two of
// what the waiting spans need.
TEST(WaitingIndexTest, AgreesWithAMultimapAsSpansComeAndGo) {
  std::mt19937_64 rng(20261202);
  WaitingIndex index;
  std::multimap<std::uint64_t, std::uint64_t> waiting;  // key → seq of spans still waiting
  std::vector<std::pair<std::uint64_t, std::uint64_t>> fifo;
  std::size_t front = 0;  // index into fifo of the oldest waiting span
  std::vector<std::uint64_t> keys;
  for (int i = 0; i < 300; ++i) keys.push_back(rng());
  std::uint64_t next_seq = 0;
  for (int step = 0; step < 200000; ++step) {
    // Phases of growth and of draining, so the table both grows and empties.
    const bool growing = (step / 20000) % 2 == 0;
    if (front == fifo.size() || rng() % 100 < (growing ? 70u : 30u)) {
      const std::uint64_t k = keys[rng() % keys.size()];
      index.Insert(k, next_seq);
      waiting.emplace(k, next_seq);
      fifo.emplace_back(k, next_seq++);
    } else {
      auto [k, s] = fifo[front++];
      auto [lo, hi] = waiting.equal_range(k);
      for (auto it = lo; it != hi; ++it)
        if (it->second == s) {
          waiting.erase(it);
          break;
        }
      index.DropBefore(front < fifo.size() ? fifo[front].second : next_seq);
    }
    if (step % 997 == 0) {
      const std::uint64_t first_waiting = front < fifo.size() ? fifo[front].second : next_seq;
      for (std::uint64_t k : keys) {
        std::vector<std::uint64_t> found = Seqs(index, k), want;
        auto [lo, hi] = waiting.equal_range(k);
        for (auto it = lo; it != hi; ++it) want.push_back(it->second);
        std::sort(want.begin(), want.end());
        std::vector<std::uint64_t> live;
        for (std::uint64_t s : found) {
          if (s >= first_waiting) {
            live.push_back(s);
          } else {
            // A span that has left, in the generation of the oldest waiting span (or in the
            // newest, which is kept): less than a generation before it.
            ASSERT_LE(first_waiting - s, kGen) << "step " << step;
          }
        }
        ASSERT_EQ(live, want) << "step " << step;
      }
      const std::size_t need = (next_seq - first_waiting + kGen - 1) / kGen;
      ASSERT_LE(index.generations(), need + 2) << "step " << step;
    }
  }
  EXPECT_GT(next_seq, 10 * kGen);  // many generations came and went
}

}  // namespace
}  // namespace infertel::engines
