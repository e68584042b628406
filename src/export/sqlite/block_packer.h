#pragma once
// Compresses the blocks of the partition being written, with a zstd dictionary once there is
// one (block.h, docs/store.md "Figures"). A partition's dictionary is trained from the records
// of its own first blocks; until then its blocks use the previous partition's, stored into it
// with the first block that needs it, so that every file reads on its own and the first blocks
// after a roll are not left without.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "export/sqlite/block.h"

namespace infertel::exporting {

class Partition;

class BlockPacker {
 public:
  // Record bytes a dictionary trains on, and its size: a demo block of a few dozen spans
  // compresses to about 60 % of its size without (docs/store.md).
  static constexpr std::size_t kTrainBytes = 128 * 1024;
  static constexpr std::size_t kDictionaryBytes = 16 * 1024;

  // zstd's level for blocks: a writer on one core keeps up with 100,000 spans a second.
  static constexpr int kLevel = 3;

  // The next blocks go into a new partition.
  void NewPartition();
  // The transaction that stored the dictionary in the partition was rolled back.
  void RolledBack() { stored_id_ = 0; }
  // Compresses `w`'s records for partition `p` into `packed`, with dictionary `*zdict` (0:
  // none), stored in `p` first when `p` does not have it yet. Records before `new_from` were
  // packed before (an open block packed again with more): a dictionary not trained yet
  // learns only from the others. SQLite result codes.
  int Pack(Partition* p, const block::Writer& w, std::uint32_t new_from, void (*between)(),
           std::string* packed, std::int64_t* zdict);
  // The dictionary in use (nullptr before the first is trained).
  const block::Dictionary* dictionary() const { return dict_.get(); }

 private:
  void Sample(const block::Writer& w, std::uint32_t from);

  std::unique_ptr<block::Dictionary> dict_;
  std::int64_t stored_id_ = 0;  // dict_'s id in the partition; 0: not stored there yet
  bool trained_ = false;        // dict_ trained from this partition's records
  std::string samples_;         // at most kTrainBytes
  std::vector<std::size_t> sizes_;
};

}  // namespace infertel::exporting
