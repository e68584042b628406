// The Prometheus text parser on a real engine scrape (vLLM V1, 494 lines, 46 KiB).
// Run: build-*/bench/prometheus_parse_bench [--benchmark_filter=...]
// The fixture is read from $INFERTEL_FIXTURES_DIR, else from the directory compiled in.

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "scrape/prometheus_text.h"

namespace {

namespace sc = infertel::scrape;

const std::string& VllmV1Scrape() {
  static const std::string text = [] {
    const char* dir = std::getenv("INFERTEL_FIXTURES_DIR");
    const std::string path =
        std::string(dir != nullptr ? dir : INFERTEL_FIXTURES_DIR) + "/vllm-metrics-v1-ngc25.09.txt";
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }();
  return text;
}

void BM_ParseVllmV1Scrape(benchmark::State& state) {
  const std::string& text = VllmV1Scrape();
  if (text.empty()) {
    state.SkipWithError("fixture vllm-metrics-v1-ngc25.09.txt not found");
    return;
  }
  std::size_t samples = 0;
  for (auto _ : state) {
    sc::ParseResult r = sc::ParsePrometheusText(text);
    samples = 0;
    for (const auto& f : r.families) samples += f.samples.size();
    benchmark::DoNotOptimize(r);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * samples));
}
BENCHMARK(BM_ParseVllmV1Scrape);

}  // namespace

BENCHMARK_MAIN();
