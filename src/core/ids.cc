#include "core/ids.h"

#include <algorithm>
#include <random>

#include "core/hex.h"

namespace infertel {
namespace {

std::mt19937_64& Rng() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return rng;
}

template <std::size_t N>
void Fill(std::array<std::uint8_t, N>& out) {
  do {
    for (std::size_t i = 0; i < N; i += 8) {
      std::uint64_t v = Rng()();
      for (std::size_t j = 0; j < 8 && i + j < N; ++j)
        out[i + j] = static_cast<std::uint8_t>(v >> (8 * j));
    }
  } while (std::all_of(out.begin(), out.end(), [](auto b) { return b == 0; }));
}

template <std::size_t N>
std::optional<std::array<std::uint8_t, N>> FromHex(std::string_view hex) {
  if (hex.size() != 2 * N) return std::nullopt;
  std::string bytes;
  if (!HexToBytes(hex, &bytes)) return std::nullopt;
  std::array<std::uint8_t, N> out{};
  for (std::size_t i = 0; i < N; ++i) out[i] = static_cast<std::uint8_t>(bytes[i]);
  return out;
}

}  // namespace

TraceId NewTraceId() {
  TraceId id;
  Fill(id);
  return id;
}
SpanId NewSpanId() {
  SpanId id;
  Fill(id);
  return id;
}
bool IsZero(const TraceId& id) {
  return std::all_of(id.begin(), id.end(), [](auto b) { return b == 0; });
}
bool IsZero(const SpanId& id) {
  return std::all_of(id.begin(), id.end(), [](auto b) { return b == 0; });
}
std::string ToHex(const TraceId& id) { return BytesToHex(AsBytes(id)); }
std::string ToHex(const SpanId& id) { return BytesToHex(AsBytes(id)); }
std::optional<TraceId> TraceIdFromHex(std::string_view hex) { return FromHex<16>(hex); }
std::optional<SpanId> SpanIdFromHex(std::string_view hex) { return FromHex<8>(hex); }

std::optional<TraceParent> TraceParent::Parse(std::string_view v) {
  // version "-" trace-id "-" parent-id "-" flags; future versions may append fields.
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  if (v.size() < 55 || v[2] != '-' || v[35] != '-' || v[52] != '-') return std::nullopt;
  std::string version;
  if (!HexToBytes(v.substr(0, 2), &version) || v.substr(0, 2) == "ff") return std::nullopt;
  if (v.substr(0, 2) == "00" && v.size() != 55) return std::nullopt;
  if (v.size() > 55 && v[55] != '-') return std::nullopt;
  auto tid = TraceIdFromHex(v.substr(3, 32));
  auto sid = SpanIdFromHex(v.substr(36, 16));
  std::string flags;
  if (!tid || !sid || !HexToBytes(v.substr(53, 2), &flags)) return std::nullopt;
  if (IsZero(*tid) || IsZero(*sid)) return std::nullopt;
  TraceParent tp;
  tp.trace_id = *tid;
  tp.span_id = *sid;
  tp.flags = static_cast<std::uint8_t>(flags[0]);
  return tp;
}

std::string TraceParent::Format() const {
  // Written into one buffer of the header's final length (55): every forwarded request makes
  // one, and the pieces as strings of their own were four allocations.
  std::string out;
  out.reserve(55);
  out += "00-";
  AppendHex(&out, AsBytes(trace_id));
  out += '-';
  AppendHex(&out, AsBytes(span_id));
  out += '-';
  AppendHex(&out, std::string_view(reinterpret_cast<const char*>(&flags), 1));
  return out;
}

}  // namespace infertel
