#include "core/hex.h"

namespace infertel {
namespace {
constexpr char kDigits[] = "0123456789abcdef";
int Nibble(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

std::string BytesToHex(std::string_view bytes) {
  std::string out;
  AppendHex(&out, bytes);
  return out;
}

void AppendHex(std::string* out, std::string_view bytes) {
  const std::size_t at = out->size();
  out->resize(at + bytes.size() * 2);
  char* p = out->data() + at;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    auto b = static_cast<unsigned char>(bytes[i]);
    p[2 * i] = kDigits[b >> 4];
    p[2 * i + 1] = kDigits[b & 0xf];
  }
}

bool HexToBytes(std::string_view hex, std::string* out) {
  if (hex.size() % 2 != 0) return false;
  out->resize(hex.size() / 2);
  for (std::size_t i = 0; i < out->size(); ++i) {
    int hi = Nibble(hex[2 * i]), lo = Nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    (*out)[i] = static_cast<char>((hi << 4) | lo);
  }
  return true;
}

}  // namespace infertel
