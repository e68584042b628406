#include "export/sqlite/block.h"

#include <zdict.h>
#include <zstd.h>

#include <algorithm>
#include <memory>
#include <utility>

namespace infertel::exporting::block {

void Writer::Varint(std::uint64_t v) {
  while (v >= 0x80) {
    buf_.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  buf_.push_back(static_cast<char>(v));
}

void Writer::Bytes(std::string_view s) {
  Varint(s.size());
  buf_.append(s);
}

std::uint64_t Reader::Varint() {
  std::uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos_ >= data_.size()) {
      ok_ = false;
      return 0;
    }
    const auto b = static_cast<std::uint8_t>(data_[pos_++]);
    v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return v;
  }
  ok_ = false;
  return 0;
}

std::string_view Reader::Bytes() {
  const std::uint64_t n = Varint();
  if (!ok_ || n > data_.size() - pos_) {
    ok_ = false;
    return {};
  }
  std::string_view s = data_.substr(pos_, n);
  pos_ += n;
  return s;
}

Dictionary::Dictionary(std::string bytes) : bytes_(std::move(bytes)) {}

Dictionary::~Dictionary() {
  ZSTD_freeCDict(static_cast<ZSTD_CDict*>(cdict_));
  ZSTD_freeDDict(static_cast<ZSTD_DDict*>(ddict_));
}

const void* Dictionary::ForCompress(int level) {
  if (cdict_ != nullptr && cdict_level_ == level) return cdict_;
  ZSTD_freeCDict(static_cast<ZSTD_CDict*>(cdict_));
  cdict_ = ZSTD_createCDict(bytes_.data(), bytes_.size(), level);
  cdict_level_ = level;
  return cdict_;
}

const void* Dictionary::ForDecompress() {
  if (ddict_ == nullptr) ddict_ = ZSTD_createDDict(bytes_.data(), bytes_.size());
  return ddict_;
}

std::unique_ptr<Dictionary> Train(std::string_view samples, const std::vector<std::size_t>& sizes,
                                  std::size_t capacity) {
  std::string bytes(capacity, '\0');
  const std::size_t n = ZDICT_trainFromBuffer(bytes.data(), bytes.size(), samples.data(),
                                              sizes.data(), static_cast<unsigned>(sizes.size()));
  if (ZDICT_isError(n)) return nullptr;
  bytes.resize(n);
  return std::make_unique<Dictionary>(std::move(bytes));
}

// Frees a thread's zstd contexts when it ends.
struct ZstdFree {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

std::string Compress(std::string_view raw, int level, void (*between)(), Dictionary* dict) {
  // One context per thread: creating one costs more than compressing a small block. Freed
  // when the thread ends (a raw pointer leaked it: LeakSanitizer).
  thread_local const std::unique_ptr<ZSTD_CCtx, ZstdFree> owned(ZSTD_createCCtx());
  ZSTD_CCtx* const ctx = owned.get();
  ZSTD_CCtx_reset(ctx, ZSTD_reset_session_only);
  const void* cdict = dict != nullptr ? dict->ForCompress(level) : nullptr;
  if (dict != nullptr && cdict == nullptr) return {};
  // A dictionary carries its level; the parameter would be ignored beside it.
  if (cdict != nullptr)
    ZSTD_CCtx_refCDict(ctx, static_cast<const ZSTD_CDict*>(cdict));
  else
    ZSTD_CCtx_setParameter(ctx, ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(ctx, ZSTD_c_contentSizeFlag, 1);
  ZSTD_CCtx_setPledgedSrcSize(ctx, raw.size());
  std::string out(ZSTD_compressBound(raw.size()), '\0');
  ZSTD_outBuffer o{out.data(), out.size(), 0};
  constexpr std::size_t kPiece = 32 * 1024;
  std::size_t pos = 0;
  for (;;) {
    const std::size_t n = std::min(kPiece, raw.size() - pos);
    const bool last = pos + n == raw.size();
    ZSTD_inBuffer in{raw.data() + pos, n, 0};
    std::size_t left;
    do {
      left = ZSTD_compressStream2(ctx, &o, &in, last ? ZSTD_e_end : ZSTD_e_continue);
      if (ZSTD_isError(left)) return {};
    } while (in.pos < in.size || (last && left != 0));
    pos += n;
    if (last) break;
    if (between != nullptr) between();
  }
  out.resize(o.pos);
  if (cdict != nullptr) ZSTD_CCtx_refCDict(ctx, nullptr);  // not kept past this block
  return out;
}

bool Decompress(std::string_view packed, std::string* raw, std::size_t max_bytes,
                Dictionary* dict) {
  const unsigned long long size = ZSTD_getFrameContentSize(packed.data(), packed.size());
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN || size > max_bytes)
    return false;
  const void* ddict = dict != nullptr ? dict->ForDecompress() : nullptr;
  if (dict != nullptr && ddict == nullptr) return false;
  thread_local const std::unique_ptr<ZSTD_DCtx, ZstdFree> owned(ZSTD_createDCtx());
  ZSTD_DCtx* const ctx = owned.get();
  raw->resize(size);
  // A frame names the dictionary it needs; zstd refuses it without that one.
  const std::size_t n =
      ddict != nullptr
          ? ZSTD_decompress_usingDDict(ctx, raw->data(), raw->size(), packed.data(), packed.size(),
                                       static_cast<const ZSTD_DDict*>(ddict))
          : ZSTD_decompressDCtx(ctx, raw->data(), raw->size(), packed.data(), packed.size());
  return !ZSTD_isError(n) && n == size;
}

}  // namespace infertel::exporting::block
