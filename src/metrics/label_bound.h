#pragma once
// A bound on the values of one metric label that outside input chooses: the model a gateway
// client names (an engine such as SGLang answers any name), and later the tenant. Without it
// every client could create series at will.
//
// Values known to be real (the models the engine serves, from its GET /v1/models) always keep
// their own series. Up to `cap` other values are admitted, first come, and keep theirs for
// the agent's lifetime (a series never flips between its own value and `other`). Every later
// value, and every value longer than `max_length`, is folded into kLabelValueOther and
// counted by reason.
//
// Thread-safety: thread-safe. Admit takes a shared lock when the value is already known or
// admitted (the usual case), an exclusive one only to admit a new value.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

namespace infertel::metrics {

// The value a folded label takes.
inline constexpr std::string_view kLabelValueOther = "other";

struct LabelBoundOptions {
  std::size_t cap = 100;         // values admitted beyond the known ones
  std::size_t max_length = 256;  // longer values are folded whatever the room
  std::size_t max_known = 1024;  // known values kept (the rest of a longer list is ignored)
};

// Why a value was folded into `other`.
struct LabelFoldStats {
  std::atomic<std::uint64_t> cap{0};     // no room left among the admitted values
  std::atomic<std::uint64_t> length{0};  // longer than max_length
};

class BoundedLabelValues {
 public:
  explicit BoundedLabelValues(LabelBoundOptions options = {}) : options_(options) {}

  // True when `value` may label a series as it is; false when the caller must use
  // kLabelValueOther (counted). Never throws: a failed allocation folds the value.
  bool Admit(std::string_view value) noexcept;

  // Replaces the known values (e.g. after every answer of the engine's /v1/models).
  void SetKnown(const std::vector<std::string>& values);

  std::size_t admitted() const;
  std::size_t known() const;
  const LabelFoldStats& folded() const { return folded_; }
  const LabelBoundOptions& options() const { return options_; }

 private:
  using Set = std::set<std::string, std::less<>>;
  const LabelBoundOptions options_;
  mutable std::shared_mutex mu_;
  Set known_;     // guarded by mu_
  Set admitted_;  // guarded by mu_
  LabelFoldStats folded_;
};

}  // namespace infertel::metrics
