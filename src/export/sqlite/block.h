#pragma once
// The store's compressed blocks: the parts of many spans (or log records) that no query filters
// on (attributes, events, links, status message, ...) written one after another as records of
// varint-prefixed fields, then compressed with zstd as one block. Repeated keys and values
// across spans are what zstd removes, so a block of many spans compresses far better than each
// span alone (docs/store.md, "Figures").

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace infertel::exporting::block {

// Appends fields of one record to a block's uncompressed bytes.
class Writer {
 public:
  void Varint(std::uint64_t v);
  void Signed(std::int64_t v) {
    Varint((static_cast<std::uint64_t>(v) << 1) ^ (v < 0 ? ~0ull : 0));
  }
  void Bytes(std::string_view s);
  // Starts a record; returns its slot (index in the block).
  std::uint32_t NextRecord() {
    starts_.push_back(buf_.size());
    return records_++;
  }
  std::uint32_t records() const { return records_; }
  std::size_t size() const { return buf_.size(); }
  const std::string& bytes() const { return buf_; }
  // Where record `slot` starts in bytes() (a dictionary trains on records one by one).
  std::size_t start(std::uint32_t slot) const { return starts_[slot]; }
  void Clear() {
    buf_.clear();
    starts_.clear();
    records_ = 0;
  }

 private:
  std::string buf_;
  std::vector<std::size_t> starts_;
  std::uint32_t records_ = 0;
};

// Reads fields back, in the order they were written; a field past the end reads as 0 / "" and
// sets ok() false (a damaged block never reads out of bounds).
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  std::uint64_t Varint();
  std::int64_t Signed() {
    const std::uint64_t v = Varint();
    return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1);
  }
  std::string_view Bytes();
  bool ok() const { return ok_; }
  bool done() const { return pos_ >= data_.size(); }
  std::size_t Remaining() const { return data_.size() - pos_; }

 private:
  std::string_view data_;
  std::size_t pos_ = 0;
  bool ok_ = true;
};

// A zstd dictionary: the strings that blocks of one kind of traffic share (attribute keys,
// common values), so that a block of a few dozen spans need not spell them out once each (a
// demo block compresses to about half with one, docs/store.md). Prepared once for compressing
// and once for decompressing, on first use of each.
class Dictionary {
 public:
  explicit Dictionary(std::string bytes);
  ~Dictionary();
  Dictionary(const Dictionary&) = delete;
  Dictionary& operator=(const Dictionary&) = delete;
  const std::string& bytes() const { return bytes_; }
  // The prepared forms; nullptr when zstd refuses the bytes (then blocks go without).
  const void* ForCompress(int level);
  const void* ForDecompress();

 private:
  std::string bytes_;
  void* cdict_ = nullptr;
  int cdict_level_ = 0;
  void* ddict_ = nullptr;
};

// A dictionary of at most `capacity` bytes trained from `samples` (records one after another,
// their sizes in `sizes`); nullptr when zstd finds too little to train on.
std::unique_ptr<Dictionary> Train(std::string_view samples, const std::vector<std::size_t>& sizes,
                                  std::size_t capacity);

// zstd at `level`, as one frame that records the uncompressed size, with `dict` when not null.
// Compresses `raw` in pieces of 32 KiB and calls `between` after each, so that a writer can
// give the core up (pipeline/pacer.h) within a block; nullptr for none. "" on failure.
std::string Compress(std::string_view raw, int level, void (*between)() = nullptr,
                     Dictionary* dict = nullptr);
// False when `packed` is not a zstd frame, needs a dictionary other than `dict`, or inflates
// beyond `max_bytes`.
bool Decompress(std::string_view packed, std::string* raw, std::size_t max_bytes,
                Dictionary* dict = nullptr);

}  // namespace infertel::exporting::block
