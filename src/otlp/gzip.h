#pragma once
// gzip (RFC 1952) compression for OTLP/HTTP bodies (Content-Encoding: gzip).

#include <cstddef>
#include <string>
#include <string_view>

namespace infertel::otlp {

// Returns false only on a zlib failure.
bool GzipCompress(std::string_view in, std::string* out);
// Inflates gzip or zlib data; fails when the output would exceed `max_out` bytes (a bound
// against decompression bombs) or the data are corrupt.
bool GzipDecompress(std::string_view in, std::string* out, std::size_t max_out);

}  // namespace infertel::otlp
