#include "receiver/grpc_framing.h"

#include <zlib.h>

#include <algorithm>
#include <array>

namespace infertel::receiver::internal {

std::optional<std::chrono::nanoseconds> ParseGrpcTimeout(std::string_view value) {
  if (value.size() < 2 || value.size() > 9) return std::nullopt;
  std::int64_t n = 0;
  for (char c : value.substr(0, value.size() - 1)) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  // At most 8 digits, so the largest (99999999 H) still fits in nanoseconds as hours of
  // 3.6e12 ns: 3.6e20 does not; cap each unit's product to the representable range.
  using std::chrono::nanoseconds;
  constexpr std::int64_t kMaxNs = std::chrono::nanoseconds::max().count();
  auto scaled = [&](std::int64_t ns_per_unit) -> nanoseconds {
    if (n > kMaxNs / ns_per_unit) return nanoseconds::max();
    return nanoseconds(n * ns_per_unit);
  };
  switch (value.back()) {
    case 'H':
      return scaled(3'600'000'000'000);
    case 'M':
      return scaled(60'000'000'000);
    case 'S':
      return scaled(1'000'000'000);
    case 'm':
      return scaled(1'000'000);
    case 'u':
      return scaled(1'000);
    case 'n':
      return scaled(1);
    default:
      return std::nullopt;
  }
}

std::string PercentEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (c >= 0x20 && c <= 0x7e && c != '%') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::string Base64Unpadded(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() * 4 + 2) / 3);
  std::size_t i = 0;
  auto at = [&](std::size_t k) { return static_cast<unsigned char>(bytes[k]); };
  for (; i + 3 <= bytes.size(); i += 3) {
    const std::uint32_t v = (at(i) << 16) | (at(i + 1) << 8) | at(i + 2);
    for (int shift : {18, 12, 6, 0}) out.push_back(kAlphabet[(v >> shift) & 63]);
  }
  const std::size_t rest = bytes.size() - i;
  if (rest == 1) {
    const std::uint32_t v = at(i) << 16;
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
  } else if (rest == 2) {
    const std::uint32_t v = (at(i) << 16) | (at(i + 1) << 8);
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(kAlphabet[(v >> 6) & 63]);
  }
  return out;
}

MessageReader::State MessageReader::Feed(std::string_view bytes) {
  while (!bytes.empty()) {
    switch (state_) {
      case State::kPrefix: {
        const std::size_t n = std::min(bytes.size(), sizeof(prefix_) - prefix_read_);
        std::copy_n(bytes.data(), n, prefix_ + prefix_read_);
        prefix_read_ += n;
        bytes.remove_prefix(n);
        if (prefix_read_ < sizeof(prefix_)) return state_;
        if (prefix_[0] > 1) return state_ = State::kBadFlag;
        compressed_ = prefix_[0] == 1;
        length_ = (std::uint64_t{prefix_[1]} << 24) | (std::uint64_t{prefix_[2]} << 16) |
                  (std::uint64_t{prefix_[3]} << 8) | prefix_[4];
        if (length_ > max_bytes_) return state_ = State::kTooLarge;
        state_ = length_ == 0 ? State::kComplete : State::kBody;
        break;
      }
      case State::kBody: {
        // Grown as bytes arrive, never from the announced length alone; once the first bytes
        // came, the rest is reserved (at most the limit) so that the body is copied once.
        if (body_.empty()) body_.reserve(static_cast<std::size_t>(length_));
        const std::size_t n = std::min<std::size_t>(bytes.size(), length_ - body_.size());
        body_.append(bytes.data(), n);
        bytes.remove_prefix(n);
        if (body_.size() == length_) state_ = State::kComplete;
        break;
      }
      case State::kComplete:
        return state_ = State::kExtra;
      default:
        return state_;
    }
  }
  return state_;
}

void MessageReader::Release() { std::string().swap(body_); }

InflateResult InflateBounded(std::string_view in, std::size_t max_out, std::string* out) {
  out->clear();
  z_stream zs{};
  // windowBits 15 + 16: gzip only, as grpc-encoding: gzip says.
  if (inflateInit2(&zs, 15 + 16) != Z_OK) return InflateResult::kCorrupt;
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  std::array<char, 16384> chunk;
  InflateResult result = InflateResult::kCorrupt;
  while (true) {
    zs.next_out = reinterpret_cast<Bytef*>(chunk.data());
    zs.avail_out = static_cast<uInt>(chunk.size());
    const int rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) break;  // corrupt, or truncated (Z_BUF_ERROR)
    const std::size_t produced = chunk.size() - zs.avail_out;
    if (out->size() + produced > max_out) {
      result = InflateResult::kTooLarge;
      break;
    }
    out->append(chunk.data(), produced);
    if (rc == Z_STREAM_END) {
      if (zs.avail_in == 0) result = InflateResult::kOk;
      break;
    }
    if (zs.avail_in == 0 && produced == 0) break;  // truncated
  }
  inflateEnd(&zs);
  return result;
}

}  // namespace infertel::receiver::internal
