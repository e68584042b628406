#pragma once
// Latency objectives (SLOs) and the verdict of each request against them.
//
// The objectives come from the key table (config/keys.cc): a general objective per measure
// (infertel.slo.ttft-ms, .tpot-ms, .e2e-ms; unset: none) and per-model overrides
// (infertel.slo.models, a mapping in the console document) that replace the general objective
// field by field. A request is judged when at least one objective applies to its model:
//
//   ttft   time to first token, for a streamed response (a response not streamed shows its
//          client nothing before its end: the e2e objective covers it)
//   tpot   time per output token: (last token − first token) / (output tokens − 1), a stream
//          with at least two output tokens
//   e2e    the whole request at the gateway
//   error  the request failed on the server's side (the engine's 5xx or error event, the
//          engine unreachable or silent, cut by shutdown): a miss whatever its latency
//
// Requests that never were the server's to serve are not judged: refused by the gateway, a 4xx
// from the engine, or given up by their client.

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/settings.h"
#include "openai/exchange.h"

namespace infertel::analytics {

struct Objectives {
  std::optional<std::int64_t> ttft_ms, tpot_ms, e2e_ms;
  bool empty() const { return !ttft_ms && !tpot_ms && !e2e_ms; }
};

// The objectives of every model, read from one settings snapshot.
class SloPolicy {
 public:
  SloPolicy() = default;
  explicit SloPolicy(const config::Settings& settings);
  const Objectives& For(std::string_view model) const;
  bool empty() const { return general_.empty() && by_model_.empty(); }

 private:
  Objectives general_;
  std::map<std::string, Objectives, std::less<>> by_model_;
};

// What the gateway measured of one request, in seconds (nullopt: not measured).
struct MeasuredLatency {
  std::optional<double> ttft_s, tpot_s, e2e_s;
};
// The one place these are computed from an exchange: the verdict and the latency histograms
// read the same figures.
MeasuredLatency MeasureLatency(const openai::Exchange& ex);

// Whether the request was the server's to serve: not when the gateway refused it, its client
// gave it up, or it was the client's mistake (a 4xx from the engine, such as an unknown model).
// Only these are judged, and counted among the overview's requests.
bool ServersToServe(const openai::Exchange& ex);

// The verdict of `ex` against `objectives` (not judged when none applies, or when the request
// was not the server's to serve).
openai::SloVerdict Judge(const openai::Exchange& ex, const Objectives& objectives);

// The names of the objectives a verdict missed, in the order ttft, tpot, e2e, error.
std::vector<std::string_view> MissedNames(std::uint8_t missed);

// SLO attainment over sliding windows (the last 1 and 5 minutes), per series (model and
// tenant): requests met over requests judged, in 10-second slots. Bounded: at most max_series
// series; a verdict for a new series beyond it is dropped and counted.
// Thread-safety: thread-safe, one mutex held for one verdict or one read.
class AttainmentWindows {
 public:
  static constexpr std::int64_t kSlotSeconds = 10;
  static constexpr std::size_t kSlots = 30;  // 5 minutes
  struct Window {
    std::string_view name;  // the `window` label value
    std::int64_t seconds;
  };
  static constexpr std::array<Window, 2> kWindows{{{"1m", 60}, {"5m", 300}}};

  explicit AttainmentWindows(std::size_t max_series = 4096) : max_series_(max_series) {}
  void Add(const std::string& model, const std::string& tenant, bool met, std::int64_t now_unix_s);

  struct Point {
    std::string model, tenant;
    std::string_view window;
    double ratio;
    std::uint64_t judged;
  };
  // One point per series and window with at least one verdict in it.
  std::vector<Point> Read(std::int64_t now_unix_s) const;
  std::uint64_t dropped() const;

 private:
  struct Slot {
    std::int64_t epoch = -1;  // now / kSlotSeconds when it was filled
    std::uint32_t met = 0, judged = 0;
  };
  using Series = std::array<Slot, kSlots>;
  const std::size_t max_series_;
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, Series> series_;
  std::uint64_t dropped_ = 0;
};

}  // namespace infertel::analytics
