#pragma once
// infertel's own metrics. Each component declares a stats struct of atomics and registers
// its fields here once; the admin /metrics endpoint renders them in the Prometheus text
// format. Names start with `infertel_`.

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace infertel {

class StatsRegistry {
 public:
  enum class Type { kCounter, kGauge };

  // `labels` is the Prometheus label text without braces, e.g. `exporter="otlp_grpc"`, or
  // empty. The pointee must outlive the registry.
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
