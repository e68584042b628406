#include "sim/sglang/sglang_metrics.h"

#include <algorithm>
#include <cmath>

#include "core/clock.h"
#include "sim/engine/prometheus_text.h"

namespace infertel::sim {
namespace {

using Era = SglangEra::Metrics;
using Labels = PromLabels;

constexpr std::uint64_t kIdleLogNs = 30'000'000'000ull;  // "During idle time … every 30 seconds"

// Bucket sets (facts §2.3, §2.4; the 0.3.5 and 0.4 sets as their documented scrapes show).
const std::vector<double> kTtft035 = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25, 0.5,
                                      0.75,  1.0,   2.5,  5.0,  7.5,  10.0, 15.0, 20.0, 25.0, 30.0};
const std::vector<double> kTpot035 = {0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075,
                                      0.1,   0.15, 0.2,   0.3,  0.4,   0.5,  0.75, 1.0,  2.5};
const std::vector<double> kLong035 = {1,   2,    5,    10,   20,    50,    100,   200,
                                      500, 1000, 2000, 5000, 10000, 20000, 50000, 100000};
const std::vector<double> kE2e04 = {0.3, 0.5,  0.8,  1.0,  1.5,  2.0,  2.5, 5.0,
                                    10,  15.0, 20.0, 30.0, 40.0, 50.0, 60.0};
const std::vector<double> kTtftNew = {0.1, 0.2, 0.4, 0.6, 0.8, 1,  2,   4,   6,
                                      8,   10,  20,  40,  60,  80, 100, 200, 400};
const std::vector<double> kItlNew = {0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025,
                                     0.030, 0.035, 0.040, 0.060, 0.080, 0.100, 0.200, 0.400,
                                     0.600, 0.800, 1.0,   2.0,   4.0,   6.0,   8.0};
const std::vector<double> kE2eNew = {0.1, 0.2, 0.4, 0.6, 0.8, 1,   2,   4,   6,    8,    10,
                                     20,  40,  60,  80,  100, 200, 400, 600, 1200, 1800, 2400};
const std::vector<double> kQueueNew = {0,   .001, .005, .01,  .05,  .1,   .2,   .5,   1,    2,
                                       3,   4,    5,    10,   15,   20,   30,   40,   50,   60,
                                       70,  80,   90,   100,  200,  300,  400,  500,  600,  700,
                                       800, 900,  1000, 1200, 1400, 1600, 1800, 2000, 2500, 3000};
const std::vector<double> kTokensNew = {100,   300,    500,    700,    1000,   1500,   2000,  3000,
                                        4000,  5000,   6000,   7000,   8000,   9000,   10000, 12000,
                                        15000, 20000,  22000,  25000,  30000,  35000,  40000, 66000,
                                        99000, 132000, 300000, 600000, 900000, 1100000};

// first * factor**i, as the Python bucket lists are written (not a running product, whose
// rounding differs in the last digit).
std::vector<double> Geometric(double first, double factor, int n) {
  std::vector<double> b;
  for (int i = 0; i < n; ++i) b.push_back(first * std::pow(factor, i));
  return b;
}

class Out {
 public:
  void Header(const std::string& name, std::string_view help, std::string_view type) {
    s_ += "# HELP " + name + " " + std::string(help) + "\n# TYPE " + name + " " +
          std::string(type) + "\n";
  }
  void Sample(const std::string& name, const Labels& labels, double v) {
    s_ += name + PromLabelText(labels) + " " + PromFloat(v) + "\n";
  }
  // One family, one sample per label set.
  void Family(const std::string& name, std::string_view help, std::string_view type,
              const std::vector<std::pair<Labels, double>>& samples) {
    if (samples.empty()) return;
    Header(name, help, type);
    for (const auto& [l, v] : samples) Sample(name, l, v);
  }
  template <typename H>
  void HistSamples(const std::string& name, const Labels& labels, const H& h) {
    Sample(name + "_sum", labels, h.sum);
    std::uint64_t cum = 0;
    for (std::size_t i = 0; i <= h.bounds.size(); ++i) {
      cum += h.counts[i];
      Labels l = labels;
      l.emplace_back("le", i < h.bounds.size() ? PromFloat(h.bounds[i]) : "+Inf");
      Sample(name + "_bucket", l, static_cast<double>(cum));
    }
    Sample(name + "_count", labels, static_cast<double>(h.count));
  }
  std::string& str() { return s_; }

 private:
  std::string s_;
};

// The scheduler gauges' label sets (0.5 on): one per TP rank that writes metrics.
std::vector<Labels> SchedulerLabelSets(const SglangMetricsOptions& o_) {
  const bool newest = o_.era == Era::kNewest;
  std::vector<Labels> sched;
  const int ranks = o_.all_schedulers ? o_.tp_size : 1;
  for (int r = 0; r < ranks; ++r) {
    Labels l = {{"engine_type", o_.engine_type},
                {"model_name", o_.model_name},
                {"pp_rank", "0"},
                {"tp_rank", std::to_string(r)}};
    if (newest) {
      l.emplace_back("moe_ep_rank", "0");
    } else {
      // Per-process gauges of the multiprocess collector carry the writer's pid.
      int pid = r < static_cast<int>(o_.scheduler_pids.size()) ? o_.scheduler_pids[r] : 0;
      l.emplace_back("pid", std::to_string(pid));
    }
    sched.push_back(std::move(l));
  }
  return sched;
}

// The label set of the scheduler's counters and histograms, summed across processes.
Labels SharedSchedulerLabels(const SglangMetricsOptions& o_) {
  const bool newest = o_.era == Era::kNewest;
  Labels sched_shared = {{"engine_type", o_.engine_type},
                         {"model_name", o_.model_name},
                         {"pp_rank", "0"},
                         {"tp_rank", "0"}};
  if (newest) sched_shared.emplace_back("moe_ep_rank", "0");
  return sched_shared;
}

}  // namespace

void SglangMetrics::Hist::Observe(double v, std::uint64_t n, double sum_add) {
  std::size_t i = 0;
  while (i < bounds.size() && v > bounds[i]) ++i;
  counts[i] += n;
  sum += sum_add >= 0 ? sum_add : v * static_cast<double>(n);
  count += n;
}

SglangMetrics::Hist SglangMetrics::NewHist(std::vector<double> bounds) const {
  Hist h;
  h.bounds = std::move(bounds);
  h.counts.assign(h.bounds.size() + 1, 0);
  return h;
}

SglangMetrics::SglangMetrics(const Engine* engine, SglangMetricsOptions options)
    : engine_(engine), o_(std::move(options)) {
  o_.decode_log_interval = std::max(1, o_.decode_log_interval);
  o_.tp_size = std::max(1, o_.tp_size);
  const bool old = o_.era == Era::k035 || o_.era == Era::k04;
  itl_ = NewHist(old ? kTpot035 : kItlNew);
  queue_ = NewHist(o_.era == Era::k035 ? kLong035 : kQueueNew);
  prompt_hist_ = NewHist(o_.era == Era::k035 ? kLong035 : kTokensNew);
  gen_hist_ = NewHist(o_.era == Era::k035 ? kLong035 : kTokensNew);
  func_ = NewHist(Geometric(0.05, 1.5, 18));
  last_log_ns_ = last_decode_log_ns_ = MonoNanos();
}

void SglangMetrics::RefreshLocked(std::uint64_t now, bool prefill, const BatchSummary* batch) {
  const EngineStats s = engine_->Stats();
  const double block = static_cast<double>(engine_->config().block_size);
  g_.running = static_cast<double>(s.running);
  g_.queue = static_cast<double>(s.waiting);
  g_.used_tokens = static_cast<double>(s.kv_blocks_used) * block;
  g_.token_usage = s.kv_blocks_total == 0 ? 0.0
                                          : static_cast<double>(s.kv_blocks_used) /
                                                static_cast<double>(s.kv_blocks_total);
  if (batch) {
    g_.retracted = batch->num_retracted;
    if (prefill) {
      // The hit rate of the newly admitted requests of this prefill batch.
      g_.cache_hit_rate = batch->num_new_input_tokens > 0
                              ? static_cast<double>(batch->num_new_cached_tokens) /
                                    static_cast<double>(batch->num_new_input_tokens)
                              : 0.0;
      g_.new_seq = batch->num_new_reqs;
      g_.new_token = batch->num_new_input_tokens - batch->num_new_cached_tokens;
      g_.cached_token = batch->num_new_cached_tokens;
    } else {
      g_.decode_sum_seq_lens = static_cast<double>(batch->decode_sum_seq_lens);
    }
  }
  last_log_ns_ = now;
}

void SglangMetrics::OnBatch(const BatchSummary& b) {
  std::lock_guard lk(mu_);
  const std::uint64_t now = MonoNanos();
  retracted_reqs_total_ += b.num_retracted;
  retracted_in_total_ += b.num_retracted_input_tokens;
  retracted_out_total_ += b.num_retracted_output_tokens;
  rt_prefill_compute_ += b.num_prefill_tokens;
  rt_prefill_cache_ += b.num_new_cached_tokens;
  if (b.num_prefill_reqs > 0) RefreshLocked(now, true, &b);
  if (b.num_decode_reqs > 0) {
    ++decode_batches_;
    tokens_since_decode_log_ += static_cast<std::uint64_t>(b.num_generation_tokens);
    rt_decode_ += b.num_generation_tokens;
    spec_proposed_ += static_cast<std::uint64_t>(b.spec_proposed);
    spec_accepted_ += static_cast<std::uint64_t>(b.spec_accepted);
    spec_verify_ += static_cast<std::uint64_t>(b.spec_verify_reqs);
    if (decode_batches_ % static_cast<std::uint64_t>(o_.decode_log_interval) == 0) {
      const double gap = static_cast<double>(now - last_decode_log_ns_) / 1e9;
      g_.gen_throughput = gap > 0 ? static_cast<double>(tokens_since_decode_log_) / gap : 0.0;
      if (spec_verify_ > 0) {
        // Accepted drafts plus the bonus token, per verify step.
        g_.spec_accept_length =
            static_cast<double>(spec_accepted_ + spec_verify_) / static_cast<double>(spec_verify_);
        g_.spec_accept_rate =
            spec_proposed_ ? static_cast<double>(spec_accepted_) / spec_proposed_ : 0.0;
      }
      tokens_since_decode_log_ = spec_proposed_ = spec_accepted_ = spec_verify_ = 0;
      last_decode_log_ns_ = now;
      RefreshLocked(now, false, &b);
    }
  }
}

void SglangMetrics::ObserveFirstToken(double ttft_s, bool streaming) {
  std::lock_guard lk(mu_);
  const bool newest = o_.era == Era::kNewest;
  std::string key = newest ? (streaming ? "true" : "false") : "";
  auto it = ttft_.find(key);
  if (it == ttft_.end())
    it = ttft_.emplace(key, NewHist(o_.era == Era::kMid || newest ? kTtftNew : kTtft035)).first;
  it->second.Observe(ttft_s);
}

void SglangMetrics::ObserveOutputBatch(double interval_s, int num_tokens) {
  if (num_tokens <= 0) return;
  std::lock_guard lk(mu_);
  // Each token gets interval/k; the count grows by k, the sum by the whole interval.
  itl_.Observe(interval_s / num_tokens, static_cast<std::uint64_t>(num_tokens), interval_s);
  itl_seen_ = true;
}

void SglangMetrics::ObserveFinished(const SglangFinishedRequest& r) {
  std::lock_guard lk(mu_);
  const bool newest = o_.era == Era::kNewest;
  std::string key = newest ? (r.streaming ? "true" : "false") : "";
  prompt_total_[key] += r.prompt_tokens;
  gen_total_[key] += r.completion_tokens;
  requests_total_[key] += 1;
  cached_total_ += r.cached_tokens;
  cached_seen_ = true;
  auto it = e2e_.find(key);
  if (it == e2e_.end()) {
    std::vector<double> b =
        o_.era == Era::k035 ? kLong035 : (o_.era == Era::k04 ? kE2e04 : kE2eNew);
    it = e2e_.emplace(key, NewHist(std::move(b))).first;
  }
  it->second.Observe(r.e2e_s);
  prompt_hist_.Observe(r.prompt_tokens);
  gen_hist_.Observe(r.completion_tokens);
  hist_tokens_seen_ = true;
}

void SglangMetrics::ObserveAborted() {
  std::lock_guard lk(mu_);
  aborted_total_ += 1;
}

void SglangMetrics::ObserveFuncLatency(double seconds) {
  std::lock_guard lk(mu_);
  func_.Observe(seconds);
  func_seen_ = true;
}

void SglangMetrics::ObserveQueueTime(double seconds) {
  std::lock_guard lk(mu_);
  queue_.Observe(seconds);
  queue_seen_ = true;
}

void SglangMetrics::ObserveStageLatency(const std::string& stage, double seconds) {
  std::lock_guard lk(mu_);
  auto it = stage_.find(stage);
  if (it == stage_.end()) it = stage_.emplace(stage, NewHist(Geometric(0.001, 1.62, 30))).first;
  it->second.Observe(seconds);
}

void SglangMetrics::SetPdQueues(int first, int second) {
  std::lock_guard lk(mu_);
  pd_first_ = first;
  pd_second_ = second;
}

std::string SglangMetrics::Render() const {
  std::lock_guard lk(mu_);
  const std::uint64_t now = MonoNanos();
  {
    // An idle scheduler still logs every 30 s, with no throughput.
    EngineStats s = engine_->Stats();
    if (s.running == 0 && s.waiting == 0 && now - last_log_ns_ >= kIdleLogNs) {
      const_cast<SglangMetrics*>(this)->RefreshLocked(now, false, nullptr);
      g_.gen_throughput = 0;
    }
  }
  Out out;
  if (o_.era == Era::k035) {
    Render035(out);
  } else if (o_.era == Era::k04) {
    Render04(out);
  } else {
    RenderSchedulerGauges(out);
    RenderSchedulerTotals(out);
    RenderTokenizer(out);
  }
  return out.str();
}

// 0.3.5: one label, `name`; the hit rate as a percentage.
void SglangMetrics::Render035(auto& out) const {
  const Gauges& g = g_;
  const Labels l = {{"name", o_.model_name}};
  auto gauge = [&](const char* n, std::string_view help, double v) {
    out.Family(n, help, "gauge", {{l, v}});
  };
  gauge("sglang:max_total_num_tokens", "Maximum total number of tokens", o_.max_total_num_tokens);
  gauge("sglang:max_prefill_tokens", "Maximum prefill tokens", o_.max_prefill_tokens);
  gauge("sglang:max_running_requests", "Maximum running requests", o_.max_running_requests);
  gauge("sglang:context_len", "Context length", o_.context_len);
  if (!prompt_total_.empty()) {
    out.Family("sglang:prompt_tokens_total", "Number of prefill tokens processed.", "counter",
               {{l, prompt_total_.begin()->second}});
    out.Family("sglang:generation_tokens_total", "Number of generation tokens processed.",
               "counter", {{l, gen_total_.begin()->second}});
  }
  gauge("sglang:num_requests_running", "Number of requests currently running on GPU", g.running);
  gauge("sglang:num_requests_waiting", "Number of requests waiting to be processed.", g.queue);
  gauge("sglang:gen_throughput", "Gen token throughput (token/s)", g.gen_throughput);
  gauge("sglang:token_usage", "Total token usage", g.token_usage);
  gauge("sglang:new_seq", "Number of new sequences", g.new_seq);
  gauge("sglang:new_token", "Number of new token", g.new_token);
  gauge("sglang:cached_token", "Number of cached token", g.cached_token);
  // This generation reported the hit rate as a percentage.
  gauge("sglang:cache_hit_rate", "Cache hit rate", std::round(g.cache_hit_rate * 10000) / 100);
  gauge("sglang:queue_req", "Number of queued requests", g.queue);
  auto hist = [&](const char* n, std::string_view help, const Hist& h, bool seen) {
    if (!seen) return;
    out.Header(n, help, "histogram");
    out.HistSamples(n, l, h);
  };
  hist("sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
       ttft_.empty() ? Hist{} : ttft_.begin()->second, !ttft_.empty());
  hist("sglang:time_per_output_token_seconds", "Histogram of time per output token in seconds.",
       itl_, itl_seen_);
  hist("sglang:request_prompt_tokens", "Number of prefill tokens processed", prompt_hist_,
       hist_tokens_seen_);
  hist("sglang:request_generation_tokens", "Number of generation tokens processed.", gen_hist_,
       hist_tokens_seen_);
  hist("sglang:e2e_request_latency_seconds", "Histogram of End-to-end request latency in seconds",
       e2e_.empty() ? Hist{} : e2e_.begin()->second, !e2e_.empty());
  hist("sglang:waiting_request_latency_seconds", "Histogram of request waiting time in seconds",
       queue_, queue_seen_);
}

// 0.4: `model_name`.
void SglangMetrics::Render04(auto& out) const {
  const Gauges& g = g_;
  const Labels l = {{"model_name", o_.model_name}};
  if (!prompt_total_.empty()) {
    out.Family("sglang:prompt_tokens_total", "Number of prefill tokens processed.", "counter",
               {{l, prompt_total_.begin()->second}});
    out.Family("sglang:generation_tokens_total", "Number of generation tokens processed.",
               "counter", {{l, gen_total_.begin()->second}});
  }
  out.Family("sglang:token_usage", "The token usage", "gauge", {{l, g.token_usage}});
  out.Family("sglang:cache_hit_rate", "The cache hit rate", "gauge", {{l, g.cache_hit_rate}});
  if (!ttft_.empty()) {
    out.Header("sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
               "histogram");
    out.HistSamples("sglang:time_to_first_token_seconds", l, ttft_.begin()->second);
  }
  if (!e2e_.empty()) {
    out.Header("sglang:e2e_request_latency_seconds",
               "Histogram of End-to-end request latency in seconds", "histogram");
    out.HistSamples("sglang:e2e_request_latency_seconds", l, e2e_.begin()->second);
  }
  if (itl_seen_) {
    out.Header("sglang:time_per_output_token_seconds",
               "Histogram of time per output token in seconds.", "histogram");
    out.HistSamples("sglang:time_per_output_token_seconds", l, itl_);
  }
  if (func_seen_) {
    out.Header("sglang:func_latency_seconds", "Function latency in seconds", "histogram");
    out.HistSamples("sglang:func_latency_seconds", {{"name", "generate_request"}}, func_);
  }
  out.Family("sglang:num_running_reqs", "The number of running requests", "gauge",
             {{l, g.running}});
  out.Family("sglang:num_used_tokens", "The number of used tokens", "gauge", {{l, g.used_tokens}});
  out.Family("sglang:gen_throughput", "The generate throughput (token/s)", "gauge",
             {{l, g.gen_throughput}});
  out.Family("sglang:num_queue_reqs", "The number of requests in the waiting queue", "gauge",
             {{l, g.queue}});
}

// 0.5 on: the scheduler's gauges, one label set per TP rank that writes metrics.
void SglangMetrics::RenderSchedulerGauges(auto& out) const {
  const Gauges& g = g_;
  const bool newest = o_.era == Era::kNewest;
  const std::vector<Labels> sched = SchedulerLabelSets(o_);
  auto sgauge = [&](const std::string& n, std::string_view help, double v) {
    std::vector<std::pair<Labels, double>> samples;
    for (const auto& l : sched) samples.emplace_back(l, v);
    out.Family(n, help, "gauge", samples);
  };
  sgauge("sglang:num_running_reqs", "The number of running requests.", g.running);
  sgauge("sglang:num_used_tokens", "The number of used tokens.", g.used_tokens);
  sgauge("sglang:token_usage", "The token usage.", g.token_usage);
  sgauge("sglang:gen_throughput", "The generation throughput (token/s).", g.gen_throughput);
  sgauge("sglang:num_queue_reqs", "The number of requests in the waiting queue.", g.queue);
  sgauge("sglang:num_grammar_queue_reqs", "The number of requests in the grammar waiting queue.",
         0);
  sgauge("sglang:cache_hit_rate", "The prefix cache hit rate.", g.cache_hit_rate);
  sgauge("sglang:decode_sum_seq_lens", "The sum of all sequence lengths in decode.",
         g.decode_sum_seq_lens);
  if (o_.spec) {
    sgauge("sglang:spec_accept_length",
           "The average acceptance length of speculative decoding (accepted drafts + bonus token "
           "per verify step).",
           g.spec_accept_length);
    sgauge("sglang:spec_accept_rate",
           "The acceptance rate of speculative decoding (accepted drafts / proposed drafts).",
           g.spec_accept_rate);
  }
  sgauge("sglang:num_retracted_reqs", "The number of retracted requests.", g.retracted);
  sgauge("sglang:num_paused_reqs", "The number of paused requests by async weight sync.", 0);
  if (o_.engine_type == "prefill") {
    sgauge(newest ? "sglang:num_prefill_bootstrap_queue_reqs"
                  : "sglang:num_prefill_prealloc_queue_reqs",
           "The number of requests in the prefill bootstrap queue.", pd_first_);
    sgauge("sglang:num_prefill_inflight_queue_reqs",
           "The number of requests in the prefill inflight queue.", pd_second_);
  } else if (o_.engine_type == "decode") {
    sgauge("sglang:num_decode_prealloc_queue_reqs",
           "The number of requests in the decode prealloc queue.", pd_first_);
    sgauge("sglang:num_decode_transfer_queue_reqs",
           "The number of requests in the decode transfer queue.", pd_second_);
  }
  if (newest) {
    sgauge("sglang:max_total_num_tokens", "Maximum total number of tokens in the KV cache pool.",
           o_.max_total_num_tokens);
    sgauge("sglang:page_size", "The page size of the KV cache.", o_.page_size);
    sgauge("sglang:context_len", "The context length of the model.", o_.context_len);
  }
}

// The scheduler's counters and histograms, summed across processes (no pid).
void SglangMetrics::RenderSchedulerTotals(auto& out) const {
  const Labels sched_shared = SharedSchedulerLabels(o_);
  out.Family("sglang:num_retracted_requests_total", "Total number of retracted requests.",
             "counter", {{sched_shared, retracted_reqs_total_}});
  out.Family("sglang:num_retracted_input_tokens_total", "Total number of retracted input tokens.",
             "counter", {{sched_shared, retracted_in_total_}});
  out.Family("sglang:num_retracted_output_tokens_total", "Total number of retracted output tokens.",
             "counter", {{sched_shared, retracted_out_total_}});
  {
    std::vector<std::pair<Labels, double>> rt;
    for (auto [mode, v] : {std::pair<const char*, double>{"prefill_compute", rt_prefill_compute_},
                           {"prefill_cache", rt_prefill_cache_},
                           {"decode", rt_decode_}}) {
      Labels l = sched_shared;
      l.emplace_back("mode", mode);
      rt.emplace_back(std::move(l), v);
    }
    out.Family("sglang:realtime_tokens_total", "Total number of tokens processed, by mode.",
               "counter", rt);
  }
  if (queue_seen_) {
    out.Header("sglang:queue_time_seconds", "Histogram of queueing time in seconds.", "histogram");
    out.HistSamples("sglang:queue_time_seconds", sched_shared, queue_);
  }
  if (!stage_.empty()) {
    out.Header("sglang:per_stage_req_latency_seconds", "The latency of each stage of requests.",
               "histogram");
    for (const auto& [stage, h] : stage_) {
      Labels l = sched_shared;
      l.emplace_back("stage", stage);
      out.HistSamples("sglang:per_stage_req_latency_seconds", l, h);
    }
  }
}

// The tokenizer's collector.
void SglangMetrics::RenderTokenizer(auto& out) const {
  const bool newest = o_.era == Era::kNewest;
  Labels tok = {{"model_name", o_.model_name}};
  if (newest) tok.emplace_back("engine_type", o_.engine_type);
  auto with_stream = [&](const std::string& key) {
    Labels l = tok;
    if (!key.empty()) l.emplace_back("is_streaming", key);
    return l;
  };
  auto by_stream = [&](const std::map<std::string, double>& m) {
    std::vector<std::pair<Labels, double>> v;
    for (const auto& [k, x] : m) v.emplace_back(with_stream(k), x);
    return v;
  };
  out.Family("sglang:prompt_tokens_total", "Number of prefill tokens processed.", "counter",
             by_stream(prompt_total_));
  out.Family("sglang:generation_tokens_total", "Number of generation tokens processed.", "counter",
             by_stream(gen_total_));
  if (cached_seen_) {
    Labels l = tok;
    if (newest) l.emplace_back("cache_source", "device");
    out.Family("sglang:cached_tokens_total", "Number of cached prompt tokens.", "counter",
               {{l, cached_total_}});
  }
  out.Family("sglang:num_requests_total", "Number of requests processed.", "counter",
             by_stream(requests_total_));
  if (aborted_total_ > 0)
    out.Family("sglang:num_aborted_requests_total", "Number of requests aborted.", "counter",
               {{tok, aborted_total_}});
  if (!ttft_.empty()) {
    out.Header("sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
               "histogram");
    for (const auto& [k, h] : ttft_)
      out.HistSamples("sglang:time_to_first_token_seconds", with_stream(k), h);
  }
  if (itl_seen_) {
    out.Header("sglang:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
               "histogram");
    out.HistSamples("sglang:inter_token_latency_seconds", tok, itl_);
  }
  if (!e2e_.empty()) {
    out.Header("sglang:e2e_request_latency_seconds",
               "Histogram of End-to-end request latency in seconds", "histogram");
    for (const auto& [k, h] : e2e_)
      out.HistSamples("sglang:e2e_request_latency_seconds", with_stream(k), h);
  }
  if (newest && hist_tokens_seen_) {
    out.Header("sglang:prompt_tokens_histogram", "Histogram of prompt token length.", "histogram");
    out.HistSamples("sglang:prompt_tokens_histogram", tok, prompt_hist_);
    out.Header("sglang:generation_tokens_histogram", "Histogram of generation token length.",
               "histogram");
    out.HistSamples("sglang:generation_tokens_histogram", tok, gen_hist_);
  }
  if (func_seen_) {
    out.Header("sglang:func_latency_seconds", "Function latency in seconds", "histogram");
    out.HistSamples("sglang:func_latency_seconds", {{"name", "generate_request"}}, func_);
  }
}

}  // namespace infertel::sim
