#pragma once
// The store's compressed blocks: the parts of many spans (or log records) that no query filters
// on (attributes, events, links, status message, ...) written one after another as records of
// varint-prefixed fields, then compressed with zstd as one block. Repeated keys and values
// across spans are what zstd removes, so a block of many spans compresses far better than each
// span alone (docs/store.md, "Figures").

#include <cstdint>
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
  std::uint32_t NextRecord() { return records_++; }
  std::uint32_t records() const { return records_; }
  std::size_t size() const { return buf_.size(); }
  const std::string& bytes() const { return buf_; }
  void Clear() {
    buf_.clear();
    records_ = 0;
  }

 private:
  std::string buf_;
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

// zstd at `level`, as one frame that records the uncompressed size. Compresses `raw` in pieces
// of 32 KiB and calls `between` after each, so that a writer can give the core up
// (pipeline/pacer.h) within a block; nullptr for none. "" on failure.
std::string Compress(std::string_view raw, int level, void (*between)() = nullptr);
// False when `packed` is not a zstd frame or inflates beyond `max_bytes`.
bool Decompress(std::string_view packed, std::string* raw, std::size_t max_bytes);

}  // namespace infertel::exporting::block
