#include "export/sqlite/block_packer.h"

#include <sqlite3.h>

#include <algorithm>

#include "export/sqlite/partition.h"

namespace infertel::exporting {

void BlockPacker::NewPartition() {
  stored_id_ = 0;
  trained_ = false;
  samples_.clear();
  sizes_.clear();
}

void BlockPacker::Sample(const block::Writer& w, std::uint32_t from) {
  const std::string& bytes = w.bytes();
  for (std::uint32_t slot = from; slot < w.records() && samples_.size() < kTrainBytes; ++slot) {
    const std::size_t end = slot + 1 < w.records() ? w.start(slot + 1) : bytes.size();
    const std::size_t n = std::min(end - w.start(slot), kTrainBytes - samples_.size());
    samples_.append(bytes, w.start(slot), n);
    sizes_.push_back(n);
  }
  if (samples_.size() < kTrainBytes) return;
  // Training takes a few milliseconds, once per partition. When zstd finds too little to
  // learn, the previous dictionary (or none) stays.
  if (auto dict = block::Train(samples_, sizes_, kDictionaryBytes)) {
    dict_ = std::move(dict);
    stored_id_ = 0;
  }
  trained_ = true;
  samples_.clear();
  samples_.shrink_to_fit();
  sizes_.clear();
  sizes_.shrink_to_fit();
}

int BlockPacker::Pack(Partition* p, const block::Writer& w, std::uint32_t new_from,
                      void (*between)(), std::string* packed, std::int64_t* zdict) {
  if (!trained_) Sample(w, new_from);
  *zdict = 0;
  if (dict_ != nullptr && stored_id_ == 0)
    if (int rc = p->AddDictionary(dict_->bytes(), &stored_id_); rc != SQLITE_OK) {
      stored_id_ = 0;
      return rc;
    }
  if (dict_ != nullptr) *zdict = stored_id_;
  *packed = block::Compress(w.bytes(), kLevel, between, dict_.get());
  return packed->empty() ? SQLITE_ERROR : SQLITE_OK;
}

}  // namespace infertel::exporting
