#pragma once
// The label sets of an exchange's counter series (API-layer input tokens, output tokens,
// engine layer), built once per engine, operation, model and engine index and then shared by
// every exchange that has them. Building them was about a twentieth of the gateway's own CPU
// per request at saturation: some fifteen strings each time (docs/performance-history.md).

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>

#include "absl/container/flat_hash_map.h"

#include "core/engine_id.h"
#include "core/metric_families.h"
#include "openai/openai.h"

namespace infertel::metrics {

// The sets, in the order they are indexed.
enum ExchangeLabelSet : std::uint8_t { kInputTokenLabels, kOutputTokenLabels, kEngineLabels };
using ExchangeLabelSets = std::array<MetricLabels, kEngineLabels + 1>;

// The three sets, built.
std::shared_ptr<const ExchangeLabelSets> BuildExchangeLabels(
    EngineId engine, openai::Operation op, std::string_view model,
    std::optional<std::int64_t> engine_index);

// Thread-safe, bounded: past kMaxEntries (the model label's bound keeps far fewer) each
// further combination is built every time, as it was before, and not kept.
class ExchangeLabelCache {
 public:
  static constexpr std::size_t kMaxEntries = 1024;

  std::shared_ptr<const ExchangeLabelSets> Get(EngineId engine, openai::Operation op,
                                               std::string_view model,
                                               std::optional<std::int64_t> engine_index);
  std::size_t size() const;

 private:
  // engine, operation, has an index, the index, model.
  using Key = std::tuple<std::uint8_t, int, bool, std::int64_t, std::string>;
  using KeyView = std::tuple<std::uint8_t, int, bool, std::int64_t, std::string_view>;
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(const KeyView& k) const;
    std::size_t operator()(const Key& k) const;
  };
  struct Eq {
    using is_transparent = void;
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return std::get<0>(a) == std::get<0>(b) && std::get<1>(a) == std::get<1>(b) &&
             std::get<2>(a) == std::get<2>(b) && std::get<3>(a) == std::get<3>(b) &&
             std::string_view(std::get<4>(a)) == std::string_view(std::get<4>(b));
    }
  };

  mutable std::mutex mu_;
  absl::flat_hash_map<Key, std::shared_ptr<const ExchangeLabelSets>, Hash, Eq> sets_;
};

}  // namespace infertel::metrics
