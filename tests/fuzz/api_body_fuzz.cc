// libFuzzer target for the admin API's PUT body ({"value": …}, console/api_body.h), against
// every key of the registry.
// Built and run by scripts/fuzz.sh (`make fuzz`), from the seeds in
// tests/fuzz/corpus/api_body_fuzz/.
//
// The first byte picks the key, the rest is the body. Besides memory errors it checks that a
// 400's message is bounded (a bad value is quoted cut) and printable, and that an accepted
// value is one ParseValue accepts for the key.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "config/keys.h"
#include "console/api_body.h"
#include "engine_keys.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  infertel::fuzz::RegisterEngineKeys();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace cfg = infertel::config;
  if (size == 0) return 0;
  const auto key = static_cast<cfg::Key>(data[0] % cfg::KeyCount());
  const cfg::KeySpec& spec = cfg::Spec(key);
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  const auto r = infertel::console::ValueFromBody(spec, body);
  if (const auto* err = std::get_if<std::string>(&r)) {
    if (err->empty() || err->size() > 2048) std::abort();
    for (char c : *err)
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) std::abort();
    return 0;
  }
  const cfg::Value& v = std::get<cfg::Value>(r);
  const auto again = cfg::ParseValue(spec, cfg::FormatValue(v));
  if (!std::holds_alternative<cfg::Value>(again) || std::get<cfg::Value>(again) != v) std::abort();
  return 0;
}
