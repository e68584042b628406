#pragma once
// SGLang's Prometheus /metrics (facts/sglang.md §2) for the simulator, by release: the 0.3.x
// names with a `name=` label, the 0.4.x set with `model_name`, and the 0.5 sets with the
// scheduler's engine_type/tp_rank/pp_rank labels (per-process `pid` in the middle releases,
// `moe_ep_rank` in the newest) and the tokenizer's `is_streaming`/`cache_source`. Rendered as
// prometheus_client's multiprocess collector does (no `_created`, `_sum` before the buckets).
//
// Scheduler gauges follow SGLang's refresh rule: a prefill batch refreshes them, a decode batch
// every --decode-log-interval batches, an idle server every 30 s. Tokenizer counters and
// histograms are fed by the front end (facts §2.4 semantics: TTFT at the first output batch the
// tokenizer sees, ITL spread over the tokens of an output batch).
//
// Thread-safety: every method may be called from any thread.

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "sim/engine/engine.h"
#include "sim/sglang/sglang_options.h"

namespace infertel::sim {

struct SglangMetricsOptions {
  SglangEra::Metrics era = SglangEra::Metrics::kNewest;
  std::string model_name = "demo-model";
  std::string engine_type = "unified";  // unified, prefill, decode
  int tp_size = 1;
  bool all_schedulers = false;  // --enable-metrics-for-all-schedulers
  int decode_log_interval = 40;
  int max_total_num_tokens = 65536;
  int max_prefill_tokens = 16384;
  int max_running_requests = 64;
  int context_len = 8192;
  int page_size = 1;
  bool spec = false;
  std::vector<int> scheduler_pids = {0};  // `pid` label of the middle releases
};

// A request as the tokenizer's metrics collector sees it at the end.
struct SglangFinishedRequest {
  int prompt_tokens = 0;
  int completion_tokens = 0;
  int cached_tokens = 0;
  double e2e_s = 0;
  bool streaming = false;
};

class SglangMetrics : public EngineObserver {
 public:
  // `engine` is read at each refresh; not owned, must outlive this object.
  SglangMetrics(const Engine* engine, SglangMetricsOptions options);

  void OnBatch(const BatchSummary& batch) override;

  // Tokenizer side.
  void ObserveFirstToken(double ttft_s, bool streaming);
  // An output batch after the first: `interval_s` since the previous one, `num_tokens` new.
  void ObserveOutputBatch(double interval_s, int num_tokens);
  void ObserveFinished(const SglangFinishedRequest& r);
  void ObserveAborted();
  void ObserveFuncLatency(double seconds);  // generate_request
  // Scheduler side, per request.
  void ObserveQueueTime(double seconds);
  void ObserveStageLatency(const std::string& stage, double seconds);
  // PD queue lengths (bootstrap/prealloc, inflight/transfer), kept by the front end.
  void SetPdQueues(int first, int second);

  std::string Render() const;

 private:
  // Render's parts by generation (mu_ held; `out` is the text format's writer).
  void Render035(auto& out) const;
  void Render04(auto& out) const;
  void RenderSchedulerGauges(auto& out) const;
  void RenderSchedulerTotals(auto& out) const;
  void RenderTokenizer(auto& out) const;

  struct Hist {
    std::vector<double> bounds;
    std::vector<std::uint64_t> counts;  // per bound, not cumulative; +Inf last
    double sum = 0;
    std::uint64_t count = 0;
    void Observe(double v, std::uint64_t n = 1, double sum_add = -1);
  };
  struct Gauges {
    double running = 0, queue = 0, used_tokens = 0, token_usage = 0, gen_throughput = 0,
           cache_hit_rate = 0, decode_sum_seq_lens = 0, retracted = 0, spec_accept_length = 0,
           spec_accept_rate = 0, new_seq = 0, new_token = 0, cached_token = 0;
  };
  void RefreshLocked(std::uint64_t now, bool prefill, const BatchSummary* batch);
  Hist NewHist(std::vector<double> bounds) const;

  const Engine* engine_;
  SglangMetricsOptions o_;
  mutable std::mutex mu_;
  mutable Gauges g_;
  mutable std::uint64_t last_log_ns_ = 0;
  std::uint64_t last_decode_log_ns_ = 0;
  std::uint64_t decode_batches_ = 0;
  std::uint64_t tokens_since_decode_log_ = 0;
  std::uint64_t spec_proposed_ = 0, spec_accepted_ = 0, spec_verify_ = 0;
  int pd_first_ = 0, pd_second_ = 0;
  // Counters.
  double retracted_reqs_total_ = 0, retracted_in_total_ = 0, retracted_out_total_ = 0;
  double rt_prefill_compute_ = 0, rt_prefill_cache_ = 0, rt_decode_ = 0;
  double aborted_total_ = 0;
  // Tokenizer counters/histograms by is_streaming ("true"/"false"; one key in older eras).
  std::map<std::string, double> prompt_total_, gen_total_, requests_total_;
  double cached_total_ = 0;
  bool cached_seen_ = false;
  std::map<std::string, Hist> ttft_, e2e_;
  Hist itl_, queue_, prompt_hist_, gen_hist_, func_;
  bool itl_seen_ = false, queue_seen_ = false, func_seen_ = false, hist_tokens_seen_ = false;
  std::map<std::string, Hist> stage_;
};

}  // namespace infertel::sim
