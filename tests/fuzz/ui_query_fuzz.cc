// libFuzzer target for the query strings of the store's JSON API (ui/query.h).
// Built and run by scripts/fuzz.sh (`make fuzz`), from the seeds in
// tests/fuzz/corpus/ui_query_fuzz/.
//
// Besides memory errors it checks the bounds: never more than kMaxQueryParams parameters, and
// every decoded key and value no longer than the text it came from.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <variant>

#include "ui/query.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto r = infertel::ui::ParseQuery(text);
  if (const auto* p = std::get_if<infertel::ui::QueryParams>(&r)) {
    if (p->items.size() > infertel::ui::kMaxQueryParams) std::abort();
    for (const auto& [k, v] : p->items)
      if (k.size() + v.size() > size) std::abort();
  } else if (std::get<std::string>(r).empty()) {
    std::abort();
  }
  return 0;
}
