#include "engines/waiting_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <utility>
#include <vector>

namespace infertel::engines {
namespace {

std::vector<std::uint64_t> Seqs(const WaitingIndex& index, std::uint64_t key) {
  std::vector<std::uint64_t> out;
  index.ForEach(key, [&](std::uint64_t seq) { out.push_back(seq); });
  std::sort(out.begin(), out.end());
  return out;
}

TEST(WaitingIndexTest, FindsEveryPairOfAKeyAndErasesOnlyTheOneNamed) {
  WaitingIndex index;
  EXPECT_TRUE(Seqs(index, 7).empty());
  EXPECT_FALSE(index.Erase(7, 1));
  index.Insert(7, 1);
  index.Insert(7, 2);
  index.Insert(8, 3);
  EXPECT_EQ(Seqs(index, 7), (std::vector<std::uint64_t>{1, 2}));
  EXPECT_EQ(Seqs(index, 8), (std::vector<std::uint64_t>{3}));
  EXPECT_FALSE(index.Erase(7, 3));  // the key's pairs only
  EXPECT_TRUE(index.Erase(7, 1));
  EXPECT_EQ(Seqs(index, 7), (std::vector<std::uint64_t>{2}));
  EXPECT_EQ(Seqs(index, 8), (std::vector<std::uint64_t>{3}));
  EXPECT_EQ(index.size(), 2u);
  index.Clear();
  EXPECT_EQ(index.size(), 0u);
  EXPECT_TRUE(Seqs(index, 8).empty());
  index.Insert(8, 4);
  EXPECT_EQ(Seqs(index, 8), (std::vector<std::uint64_t>{4}));
}

// Against std::multimap, with the assembler's pattern (inserts at the back, erases mostly at
// the front, some from the middle when a request matches) and keys drawn from a small set, so
// that runs of one key and runs of several keys meeting in one probe sequence are common,
// through growth and wrap-around at the end of the table. Then every pair is erased and the
// table must be empty again.
TEST(WaitingIndexTest, AgreesWithAMultimapThroughGrowthAndDeletion) {
  std::mt19937_64 rng(20261201);
  WaitingIndex index;
  std::multimap<std::uint64_t, std::uint64_t> model;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> live;
  std::vector<std::uint64_t> keys;
  for (int i = 0; i < 300; ++i) keys.push_back(rng());
  std::uint64_t next_seq = 0;
  auto erase_at = [&](std::size_t i) {
    auto [k, s] = live[i];
    ASSERT_TRUE(index.Erase(k, s));
    auto [lo, hi] = model.equal_range(k);
    for (auto it = lo; it != hi; ++it)
      if (it->second == s) {
        model.erase(it);
        break;
      }
    live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
  };
  for (int step = 0; step < 60000; ++step) {
    const unsigned op = static_cast<unsigned>(rng() % 10);
    if (op < 6 || live.empty()) {
      const std::uint64_t k = keys[rng() % keys.size()];
      index.Insert(k, next_seq);
      model.emplace(k, next_seq);
      live.emplace_back(k, next_seq++);
    } else if (op < 9) {
      erase_at(0);
    } else {
      erase_at(static_cast<std::size_t>(rng() % live.size()));
    }
    if (step % 997 == 0) {
      for (std::uint64_t k : keys) {
        std::vector<std::uint64_t> want;
        auto [lo, hi] = model.equal_range(k);
        for (auto it = lo; it != hi; ++it) want.push_back(it->second);
        std::sort(want.begin(), want.end());
        ASSERT_EQ(Seqs(index, k), want) << "step " << step;
      }
      ASSERT_EQ(index.size(), model.size());
    }
  }
  EXPECT_GT(index.capacity(), 64u);  // it grew
  while (!live.empty()) erase_at(live.size() - 1);
  EXPECT_EQ(index.size(), 0u);
  for (std::uint64_t k : keys) EXPECT_TRUE(Seqs(index, k).empty());
}

}  // namespace
}  // namespace infertel::engines
