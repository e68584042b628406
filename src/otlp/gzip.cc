#include "otlp/gzip.h"

#include <zlib.h>

#include <algorithm>

namespace infertel::otlp {

bool GzipCompress(std::string_view in, std::string* out) {
  z_stream zs{};
  // windowBits 15 + 16 selects the gzip wrapper.
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return false;
  out->resize(deflateBound(&zs, static_cast<uLong>(in.size())) + 32);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out->data());
  zs.avail_out = static_cast<uInt>(out->size());
  int rc = deflate(&zs, Z_FINISH);
  out->resize(zs.total_out);
  deflateEnd(&zs);
  return rc == Z_STREAM_END;
}

namespace {

// The size a gzip member says it inflates to (its ISIZE trailer, the size modulo 2^32), or
// 0 for zlib data: a hint, never trusted beyond `max_out`.
std::size_t InflatedSizeHint(std::string_view in) {
  if (in.size() < 18 || static_cast<unsigned char>(in[0]) != 0x1f ||
      static_cast<unsigned char>(in[1]) != 0x8b)
    return 0;
  std::size_t size = 0;
  for (int i = 1; i <= 4; ++i)
    size = (size << 8) | static_cast<unsigned char>(in[in.size() - static_cast<std::size_t>(i)]);
  return size;
}

}  // namespace

bool GzipDecompress(std::string_view in, std::string* out, std::size_t max_out) {
  z_stream zs{};
  // windowBits 15 + 32 detects gzip or zlib headers.
  if (inflateInit2(&zs, 15 + 32) != Z_OK) return false;
  out->clear();
  // Room for what the data announce, up to the bound plus one byte, in one allocation: grown by
  // doubling, a bomb stopped at 16 MiB cost 40 MiB at its peak (the old and the new buffer).
  out->reserve(std::min(InflatedSizeHint(in), max_out) + 1);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  char buf[16384];
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof(buf);
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) break;
    // Never more than one byte past the bound: enough to tell "too large" from "corrupt".
    out->append(buf, std::min(sizeof(buf) - zs.avail_out, max_out + 1 - out->size()));
    if (out->size() > max_out) {
      rc = Z_MEM_ERROR;
      break;
    }
    if (rc == Z_OK && zs.avail_in == 0 && zs.avail_out != 0) {
      rc = Z_DATA_ERROR;  // truncated input
      break;
    }
  }
  inflateEnd(&zs);
  return rc == Z_STREAM_END;
}

}  // namespace infertel::otlp
