#pragma once
// infertel's own metrics. Each component declares a stats struct of atomics and registers
// its fields here once; the admin /metrics endpoint renders them in the Prometheus text
// format. Names start with `infertel_`.

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace infertel {

// Appends `value` as a label value of the Prometheus text format (0.0.4), escaped: backslash,
// double quote and line feed become \\, \" and \n. Every label value the agent writes goes
// through here, its own series' (StatsLabel) and the engine metrics' (metrics/exposition.cc).
void AppendLabelValue(std::string* out, std::string_view value);

// `name="value"`, the value escaped: how a value that comes from outside the code (an upstream's
// name from the agent file, an exporter's name) enters the `labels` text of StatsRegistry::Add.
std::string StatsLabel(std::string_view name, std::string_view value);

class StatsRegistry {
 public:
  enum class Type { kCounter, kGauge };

  // `labels` is the Prometheus label text without braces, e.g. `exporter="otlp_grpc"`, or
  // empty; values not written literally in the code are made with StatsLabel. The pointee must
  // outlive the registry.
  void Add(std::string name, std::string help, Type type, std::string labels,
           const std::atomic<std::uint64_t>* value);
  void AddFn(std::string name, std::string help, Type type, std::string labels,
             std::function<double()> value);
  // The Prometheus text exposition (format 0.0.4) of everything registered.
  std::string Render() const;

 private:
  struct Series {
    std::string name, help, labels;
    Type type;
    std::function<double()> read;
  };
  mutable std::mutex mu_;  // guards series_
  std::vector<Series> series_;
};

}  // namespace infertel
