#pragma once
// vLLM's Prometheus /metrics (facts/vllm.md §2) for the simulator: the V1 set with the
// `model_name` and `engine` labels, the names of a chosen vLLM version (deprecated names
// shown, hidden or removed as that version did), or the V0 set; text format 0.0.4 as
// prometheus_client writes it (`_total` and `_created` samples, Go-style float rendering).
// Values follow the engine: gauges are read live, counters and histograms are fed by the
// engine's iteration stats (engine thread) and by the front end's finished requests.
//
// Thread-safety: every method may be called from any thread.

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "sim/engine/engine.h"

namespace infertel::sim {

struct VllmMetricsOptions {
  std::string model_name = "demo-model";
  bool v0 = false;
  int version_major = 0;  // V1: the vLLM version whose metric names to expose
  int version_minor = 11;
  // --show-hidden-metrics-for-version: "X.Y" re-enables metrics hidden since X.Y+1.
  std::string show_hidden_metrics_for_version;
  int max_model_len = 8192;
  int block_size = 16;
  int num_gpu_blocks = 4096;
};

// Parses "MAJOR.MINOR[.PATCH…]"; false when malformed.
bool ParseVllmVersion(std::string_view text, int* major, int* minor);

class VllmMetrics : public EngineObserver {
 public:
  // `engine` is read for the live gauges; not owned, must outlive this object.
  VllmMetrics(const Engine* engine, VllmMetricsOptions options);

  void OnIteration(const IterationStats& stats) override;

  // Front-end events (wall clock, seconds).
  void ObserveFirstToken(double ttft_s);
  // One finished (not client-aborted) sequence.
  void ObserveFinished(const RequestRecord& record, double e2e_s, int max_tokens_param);
  // A parent request all of whose sequences finished.
  void ObserveParentFinished(int n, int max_generation_tokens);

  std::string Render() const;

 private:
  struct Hist {
    std::vector<double> bounds;
    std::vector<std::uint64_t> counts;  // per bound, not cumulative; +Inf last
    double sum = 0;
    std::uint64_t count = 0;
    double created = 0;
    bool touched = false;  // V0 creates histogram children on first observation
    void Observe(double v);
  };
  struct Counter {
    double value = 0;
    double created = 0;
  };

  // Render's parts (mu_ held).
  std::string RenderV0(const EngineStats& es, double kv_usage) const;
  std::string RenderV1(const EngineStats& es, double kv_usage) const;
  template <typename W>
  void RenderV1Histograms(W& w) const;

  bool AtLeast(int major, int minor) const;
  // A metric deprecated and hidden from version `hidden_from`, removed at `removed_from`, and
  // shown while hidden with --show-hidden-metrics-for-version = `show_key`.
  bool Visible(int hidden_from_minor, int removed_from_minor, std::string_view show_key) const;

  const Engine* engine_;
  VllmMetricsOptions o_;
  double start_time_ = 0;
  mutable std::mutex mu_;
  Counter prompt_tokens_, generation_tokens_;
  std::map<std::string, Counter> success_;  // by finished_reason
  Hist ttft_, itl_, e2e_, queue_, prefill_, decode_, inference_, tpot_req_;
  Hist prompt_hist_, gen_hist_, max_gen_hist_, n_hist_, max_tokens_hist_, iter_tokens_,
      kv_computed_hist_;
  double created_base_ = 0;
};

}  // namespace infertel::sim
