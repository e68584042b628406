#include "sim/vllm/vllm_metrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>

#include "core/clock.h"
#include "sim/engine/prometheus_text.h"

namespace infertel::sim {
namespace {

// Exposed names (facts/vllm.md §2.2, §2.3).
constexpr const char* kRunning = "vllm:num_requests_running";
constexpr const char* kWaiting = "vllm:num_requests_waiting";
constexpr const char* kSwapped = "vllm:num_requests_swapped";
constexpr const char* kSleepState = "vllm:engine_sleep_state";
constexpr const char* kGpuCacheUsage = "vllm:gpu_cache_usage_perc";
constexpr const char* kCpuCacheUsage = "vllm:cpu_cache_usage_perc";
constexpr const char* kKvCacheUsage = "vllm:kv_cache_usage_perc";
constexpr const char* kCpuPrefixHitRate = "vllm:cpu_prefix_cache_hit_rate";
constexpr const char* kGpuPrefixHitRate = "vllm:gpu_prefix_cache_hit_rate";
constexpr const char* kGpuPrefixQueries = "vllm:gpu_prefix_cache_queries";
constexpr const char* kGpuPrefixHits = "vllm:gpu_prefix_cache_hits";
constexpr const char* kPrefixQueries = "vllm:prefix_cache_queries";
constexpr const char* kPrefixHits = "vllm:prefix_cache_hits";
constexpr const char* kExternalPrefixQueries = "vllm:external_prefix_cache_queries";
constexpr const char* kExternalPrefixHits = "vllm:external_prefix_cache_hits";
constexpr const char* kMmCacheQueries = "vllm:mm_cache_queries";
constexpr const char* kMmCacheHits = "vllm:mm_cache_hits";
constexpr const char* kLoraInfo = "vllm:lora_requests_info";
constexpr const char* kPreemptions = "vllm:num_preemptions";
constexpr const char* kPromptTokens = "vllm:prompt_tokens";
constexpr const char* kGenerationTokens = "vllm:generation_tokens";
constexpr const char* kRequestSuccess = "vllm:request_success";
constexpr const char* kReqPromptTokens = "vllm:request_prompt_tokens";
constexpr const char* kReqKvComputedTokens = "vllm:request_prefill_kv_computed_tokens";
constexpr const char* kReqGenerationTokens = "vllm:request_generation_tokens";
constexpr const char* kIterationTokens = "vllm:iteration_tokens_total";
constexpr const char* kReqMaxGen = "vllm:request_max_num_generation_tokens";
constexpr const char* kReqParamsN = "vllm:request_params_n";
constexpr const char* kReqParamsMaxTokens = "vllm:request_params_max_tokens";
constexpr const char* kTtft = "vllm:time_to_first_token_seconds";
constexpr const char* kTpot = "vllm:time_per_output_token_seconds";
constexpr const char* kItl = "vllm:inter_token_latency_seconds";
constexpr const char* kReqTpot = "vllm:request_time_per_output_token_seconds";
constexpr const char* kE2e = "vllm:e2e_request_latency_seconds";
constexpr const char* kQueue = "vllm:request_queue_time_seconds";
constexpr const char* kInference = "vllm:request_inference_time_seconds";
constexpr const char* kPrefill = "vllm:request_prefill_time_seconds";
constexpr const char* kDecode = "vllm:request_decode_time_seconds";
constexpr const char* kCacheConfigInfo = "vllm:cache_config_info";

const std::vector<double> kTtftBuckets = {0.001, 0.005, 0.01, 0.02,  0.04,  0.06,  0.08, 0.1,
                                          0.25,  0.5,   0.75, 1.0,   2.5,   5.0,   7.5,  10.0,
                                          20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
const std::vector<double> kItlBuckets = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
                                         0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
const std::vector<double> kRequestLatencyBuckets = {
    0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
    30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
const std::vector<double> kNBuckets = {1, 2, 5, 10, 20};
const std::vector<double> kIterationBucketsV1 = {1,   8,    16,   32,   64,   128,  256,
                                                 512, 1024, 2048, 4096, 8192, 16384};

std::vector<double> IterationBucketsV0() {
  // V0 used the CUDA-graph capture sizes (1, 2, 4, then steps of 8).
  std::vector<double> b = {1, 2, 4};
  for (int i = 8; i <= 256; i += 8) b.push_back(i);
  return b;
}

std::vector<double> Buckets125(int max_value) {
  std::vector<double> out;
  for (double mantissa = 1;; mantissa *= 10) {
    for (double m : {1.0, 2.0, 5.0}) {
      double v = m * mantissa;
      if (v > max_value) return out;
      out.push_back(v);
    }
  }
}

double NowSeconds() { return static_cast<double>(WallNanos()) / 1e9; }

using Labels = PromLabels;

class Writer {
 public:
  explicit Writer(Labels base) : base_(std::move(base)) {}
  void Header(const std::string& name, std::string_view help, std::string_view type) {
    out_ += "# HELP " + name + " " + std::string(help) + "\n";
    out_ += "# TYPE " + name + " " + std::string(type) + "\n";
  }
  void Sample(const std::string& name, const Labels& extra, double v, bool with_base = true) {
    Labels l = with_base ? base_ : Labels{};
    l.insert(l.end(), extra.begin(), extra.end());
    out_ += name + PromLabelText(std::move(l)) + " " + PromFloat(v) + "\n";
  }
  void Gauge(const std::string& name, std::string_view help, double v, const Labels& extra = {}) {
    Header(name, help, "gauge");
    Sample(name, extra, v);
  }
  // A counter family with one or more children (label sets), plus its _created family.
  void Counter(const std::string& base, std::string_view help,
               const std::vector<std::pair<Labels, std::pair<double, double>>>& children) {
    Header(base + "_total", help, "counter");
    for (const auto& [l, vc] : children) Sample(base + "_total", l, vc.first);
    Header(base + "_created", help, "gauge");
    for (const auto& [l, vc] : children) Sample(base + "_created", l, vc.second);
  }
  void Counter1(const std::string& base, std::string_view help, double value, double created) {
    Counter(base, help, {{Labels{}, {value, created}}});
  }
  template <typename H>
  void Histogram(const std::string& name, std::string_view help, const H& h, bool lazy) {
    Header(name, help, "histogram");
    if (lazy && !h.touched) return;
    std::uint64_t cum = 0;
    for (std::size_t i = 0; i <= h.bounds.size(); ++i) {
      cum += h.counts[i];
      std::string le = i < h.bounds.size() ? PromFloat(h.bounds[i]) : "+Inf";
      Sample(name + "_bucket", {{"le", le}}, static_cast<double>(cum));
    }
    Sample(name + "_count", {}, static_cast<double>(h.count));
    Sample(name + "_sum", {}, h.sum);
    Header(name + "_created", help, "gauge");
    Sample(name + "_created", {}, h.created);
  }
  std::string& out() { return out_; }

 private:
  Labels base_;
  std::string out_;
};

std::uint64_t ReadStatmPages(int field) {
  std::ifstream f("/proc/self/statm");
  std::uint64_t v = 0;
  for (int i = 0; i <= field && f >> v; ++i) {
  }
  return v;
}

int CountOpenFds() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d) != nullptr) ++n;
    closedir(d);
    n -= 3;  // ".", ".." and the directory's own descriptor
  }
  return std::max(n, 0);
}

// The Python runtime's and the process's collectors, as prometheus_client registers them.
std::string ProcessCollectors(double start_time) {
  Writer p(Labels{});
  p.Header("python_gc_objects_collected_total", "Objects collected during gc", "counter");
  for (const char* g : {"0", "1", "2"})
    p.Sample("python_gc_objects_collected_total", {{"generation", g}}, 0, false);
  p.Header("python_gc_objects_uncollectable_total", "Uncollectable objects found during GC",
           "counter");
  for (const char* g : {"0", "1", "2"})
    p.Sample("python_gc_objects_uncollectable_total", {{"generation", g}}, 0, false);
  p.Header("python_gc_collections_total", "Number of times this generation was collected",
           "counter");
  for (const char* g : {"0", "1", "2"})
    p.Sample("python_gc_collections_total", {{"generation", g}}, 0, false);
  p.Header("python_info", "Python platform information", "gauge");
  p.Sample("python_info",
           {{"implementation", "CPython"},
            {"major", "3"},
            {"minor", "12"},
            {"patchlevel", "3"},
            {"version", "3.12.3"}},
           1, false);
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  p.Gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.",
          static_cast<double>(ReadStatmPages(0)) * page);
  p.Gauge("process_resident_memory_bytes", "Resident memory size in bytes.",
          static_cast<double>(ReadStatmPages(1)) * page);
  p.Gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.",
          std::floor(start_time * 100) / 100);
  p.Header("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
           "counter");
  p.Sample("process_cpu_seconds_total", {}, static_cast<double>(std::clock()) / CLOCKS_PER_SEC,
           false);
  p.Gauge("process_open_fds", "Number of open file descriptors.", CountOpenFds());
  struct rlimit rl {};
  getrlimit(RLIMIT_NOFILE, &rl);
  p.Gauge("process_max_fds", "Maximum number of open file descriptors.",
          static_cast<double>(rl.rlim_cur));
  return p.out();
}

// Each finished_reason's counter, in the order vLLM creates them, then any other seen.
template <typename Map>
std::vector<std::pair<Labels, std::pair<double, double>>> SuccessChildren(const Map& success_) {
  std::vector<std::pair<Labels, std::pair<double, double>>> children;
  // Fixed label order as vLLM creates them, then any other reason seen.
  std::vector<std::string> order = {"stop", "length", "abort", "error", "repetition"};
  for (const auto& [k, c] : success_)
    if (std::find(order.begin(), order.end(), k) == order.end()) order.push_back(k);
  for (const auto& k : order) {
    auto it = success_.find(k);
    if (it == success_.end()) continue;
    children.push_back({{{"finished_reason", k}}, {it->second.value, it->second.created}});
  }
  return children;
}

// The cache_config_info family: one sample whose labels are the cache config's fields.
std::string CacheConfigInfo(const Labels& fields) {
  Writer c(Labels{});
  c.Header(kCacheConfigInfo, "Information of the LLMEngine CacheConfig", "gauge");
  c.Sample(kCacheConfigInfo, fields, 1, false);
  return c.out();
}

std::string CacheConfigInfoV0(const VllmMetricsOptions& o_) {
  return CacheConfigInfo({{"block_size", std::to_string(o_.block_size)},
                          {"cache_dtype", "auto"},
                          {"calculate_kv_scales", "False"},
                          {"cpu_offload_gb", "0"},
                          {"enable_prefix_caching", "True"},
                          {"gpu_memory_utilization", "0.9"},
                          {"is_attention_free", "False"},
                          {"num_cpu_blocks", "0"},
                          {"num_gpu_blocks", std::to_string(o_.num_gpu_blocks)},
                          {"num_gpu_blocks_override", "None"},
                          {"sliding_window", "None"},
                          {"swap_space_bytes", "4294967296"}});
}

std::string CacheConfigInfoV1(const VllmMetricsOptions& o_) {
  return CacheConfigInfo({{"block_size", std::to_string(o_.block_size)},
                          {"cache_dtype", "auto"},
                          {"calculate_kv_scales", "False"},
                          {"cpu_kvcache_space_bytes", "None"},
                          {"cpu_offload_gb", "0.0"},
                          {"enable_prefix_caching", "True"},
                          {"engine", "0"},
                          {"gpu_memory_utilization", "0.9"},
                          {"is_attention_free", "False"},
                          {"kv_sharing_fast_prefill", "False"},
                          {"mamba_cache_dtype", "auto"},
                          {"mamba_page_size_padded", "None"},
                          {"mamba_ssm_cache_dtype", "auto"},
                          {"num_cpu_blocks", "None"},
                          {"num_gpu_blocks", std::to_string(o_.num_gpu_blocks)},
                          {"num_gpu_blocks_override", "None"},
                          {"prefix_caching_hash_algo", "sha256"},
                          {"sliding_window", "None"},
                          {"swap_space", "4.0"},
                          {"swap_space_bytes", "4294967296.0"}});
}

}  // namespace

bool ParseVllmVersion(std::string_view text, int* major, int* minor) {
  auto dot = text.find('.');
  if (dot == std::string_view::npos) return false;
  std::string_view rest = text.substr(dot + 1);
  auto dot2 = rest.find_first_not_of("0123456789");
  std::string_view min = rest.substr(0, dot2);
  auto r1 = std::from_chars(text.data(), text.data() + dot, *major);
  auto r2 = std::from_chars(min.data(), min.data() + min.size(), *minor);
  return r1.ec == std::errc() && r1.ptr == text.data() + dot && r2.ec == std::errc() &&
         !min.empty() && (dot2 == std::string_view::npos || rest[dot2] == '.');
}

void VllmMetrics::Hist::Observe(double v) {
  std::size_t i = 0;
  while (i < bounds.size() && v > bounds[i]) ++i;
  ++counts[i];
  sum += v;
  ++count;
  if (!touched) created = NowSeconds();
  touched = true;
}

VllmMetrics::VllmMetrics(const Engine* engine, VllmMetricsOptions options)
    : engine_(engine), o_(std::move(options)) {
  start_time_ = NowSeconds();
  created_base_ = start_time_;
  auto init = [&](Hist& h, std::vector<double> bounds) {
    h.bounds = std::move(bounds);
    h.counts.assign(h.bounds.size() + 1, 0);
    h.created = start_time_;
  };
  const auto b125 = Buckets125(o_.max_model_len);
  init(ttft_, kTtftBuckets);
  init(itl_, kItlBuckets);
  init(tpot_req_, kItlBuckets);
  init(e2e_, kRequestLatencyBuckets);
  init(queue_, kRequestLatencyBuckets);
  init(prefill_, kRequestLatencyBuckets);
  init(decode_, kRequestLatencyBuckets);
  init(inference_, kRequestLatencyBuckets);
  init(prompt_hist_, b125);
  init(gen_hist_, b125);
  init(max_gen_hist_, b125);
  init(max_tokens_hist_, b125);
  init(kv_computed_hist_, b125);
  init(n_hist_, kNBuckets);
  init(iter_tokens_, o_.v0 ? IterationBucketsV0() : kIterationBucketsV1);
  prompt_tokens_.created = start_time_;
  generation_tokens_.created = start_time_;
  if (!o_.v0) {
    // V1 pre-creates every finished_reason child at 0 (V0 creates them on first use).
    std::vector<std::string> reasons = {"stop", "length", "abort"};
    if (AtLeast(0, 13)) reasons.push_back("error");
    if (AtLeast(0, 17)) reasons.push_back("repetition");
    for (const auto& r : reasons) success_[r].created = start_time_;
  }
}

bool VllmMetrics::AtLeast(int major, int minor) const {
  return o_.version_major > major || (o_.version_major == major && o_.version_minor >= minor);
}

bool VllmMetrics::Visible(int hidden_from_minor, int removed_from_minor,
                          std::string_view show_key) const {
  if (o_.version_major > 0 || o_.version_minor >= removed_from_minor) return false;
  if (o_.version_minor < hidden_from_minor) return true;
  return o_.show_hidden_metrics_for_version == show_key;
}

void VllmMetrics::OnIteration(const IterationStats& s) {
  std::lock_guard lk(mu_);
  prompt_tokens_.value += s.num_prompt_tokens;
  generation_tokens_.value += s.num_generation_tokens;
  if (s.num_prompt_tokens + s.num_generation_tokens > 0)
    iter_tokens_.Observe(s.num_prompt_tokens + s.num_generation_tokens);
  for (double v : s.inter_token_s) itl_.Observe(v);
}

void VllmMetrics::ObserveFirstToken(double ttft_s) {
  std::lock_guard lk(mu_);
  ttft_.Observe(ttft_s);
}

void VllmMetrics::ObserveFinished(const RequestRecord& r, double e2e_s, int max_tokens_param) {
  auto secs = [](std::uint64_t a, std::uint64_t b) { return static_cast<double>(b - a) / 1e9; };
  std::lock_guard lk(mu_);
  auto& c = success_[FinishReasonName(r.finish_reason)];
  if (c.created == 0) c.created = NowSeconds();
  c.value += 1;
  e2e_.Observe(e2e_s);
  queue_.Observe(secs(r.arrival_mono_ns, r.scheduled_mono_ns));
  prefill_.Observe(secs(r.scheduled_mono_ns, r.first_token_mono_ns));
  decode_.Observe(secs(r.first_token_mono_ns, r.last_token_mono_ns));
  inference_.Observe(secs(r.scheduled_mono_ns, r.last_token_mono_ns));
  prompt_hist_.Observe(r.prompt_tokens);
  gen_hist_.Observe(r.generated_tokens);
  kv_computed_hist_.Observe(r.prompt_tokens - r.cached_tokens);
  tpot_req_.Observe(r.generated_tokens > 1 ? secs(r.first_token_mono_ns, r.last_token_mono_ns) /
                                                 (r.generated_tokens - 1)
                                           : 0.0);
  if (max_tokens_param > 0) max_tokens_hist_.Observe(max_tokens_param);
}

void VllmMetrics::ObserveParentFinished(int n, int max_generation_tokens) {
  std::lock_guard lk(mu_);
  n_hist_.Observe(n);
  max_gen_hist_.Observe(max_generation_tokens);
}

std::string VllmMetrics::Render() const {
  const EngineStats es = engine_->Stats();
  const double kv_usage = es.kv_blocks_total == 0 ? 0.0
                                                  : static_cast<double>(es.kv_blocks_used) /
                                                        static_cast<double>(es.kv_blocks_total);
  // Python runtime and process collectors, first, as prometheus_client registers them.
  std::string out = ProcessCollectors(start_time_);
  std::lock_guard lk(mu_);
  out += o_.v0 ? RenderV0(es, kv_usage) : RenderV1(es, kv_usage);
  return out;
}

// The V0 set (vllm/engine/metrics.py before its removal): model_name only.
std::string VllmMetrics::RenderV0(const EngineStats& es, double kv_usage) const {
  Writer w(Labels{{"model_name", o_.model_name}});
  std::string& out = w.out();
  out += CacheConfigInfoV0(o_);
  w.Gauge(kRunning, "Number of requests currently running on GPU.", es.running);
  w.Gauge(kSwapped, "Number of requests swapped to CPU.", 0);
  w.Gauge(kWaiting, "Number of requests waiting to be processed.", es.waiting);
  w.Gauge(kGpuCacheUsage, "GPU KV-cache usage. 1 means 100 percent usage.", kv_usage);
  w.Gauge(kCpuCacheUsage, "CPU KV-cache usage. 1 means 100 percent usage.", 0);
  w.Gauge(kCpuPrefixHitRate, "CPU prefix cache block hit rate.", -1);
  w.Gauge(kGpuPrefixHitRate, "GPU prefix cache block hit rate.",
          es.prefix_cache_queries == 0 ? 0.0
                                       : static_cast<double>(es.prefix_cache_hits) /
                                             static_cast<double>(es.prefix_cache_queries));
  {
    Writer l(Labels{});
    l.Header(kLoraInfo, "Running stats on lora requests.", "gauge");
    l.Sample(kLoraInfo,
             {{"max_lora", "0"}, {"running_lora_adapters", ""}, {"waiting_lora_adapters", ""}},
             NowSeconds(), false);
    out += l.out();
  }
  w.Counter1(kPreemptions, "Cumulative number of preemption from the engine.",
             static_cast<double>(es.preemptions), created_base_);
  w.Counter1(kPromptTokens, "Number of prefill tokens processed.", prompt_tokens_.value,
             prompt_tokens_.created);
  w.Counter1(kGenerationTokens, "Number of generation tokens processed.", generation_tokens_.value,
             generation_tokens_.created);
  if (!success_.empty())
    w.Counter(kRequestSuccess, "Count of successfully processed requests.",
              SuccessChildren(success_));
  else
    w.Header(std::string(kRequestSuccess) + "_total", "Count of successfully processed requests.",
             "counter");
  w.Histogram(kIterationTokens, "Histogram of number of tokens per engine_step.", iter_tokens_,
              true);
  w.Histogram(kTtft, "Histogram of time to first token in seconds.", ttft_, true);
  w.Histogram(kTpot, "Histogram of time per output token in seconds.", itl_, true);
  w.Histogram(kE2e, "Histogram of end to end request latency in seconds.", e2e_, true);
  w.Histogram(kQueue, "Histogram of time spent in WAITING phase for request.", queue_, true);
  w.Histogram(kInference, "Histogram of time spent in RUNNING phase for request.", inference_,
              true);
  w.Histogram(kPrefill, "Histogram of time spent in PREFILL phase for request.", prefill_, true);
  w.Histogram(kDecode, "Histogram of time spent in DECODE phase for request.", decode_, true);
  w.Histogram(kReqPromptTokens, "Number of prefill tokens processed.", prompt_hist_, true);
  w.Histogram(kReqGenerationTokens, "Number of generation tokens processed.", gen_hist_, true);
  w.Histogram(kReqMaxGen, "Histogram of maximum number of requested generation tokens.",
              max_gen_hist_, true);
  w.Histogram(kReqParamsN, "Histogram of the n request parameter.", n_hist_, true);
  w.Histogram(kReqParamsMaxTokens, "Histogram of the max_tokens request parameter.",
              max_tokens_hist_, true);
  return out;
}

std::string VllmMetrics::RenderV1(const EngineStats& es, double kv_usage) const {
  Writer w(Labels{{"model_name", o_.model_name}, {"engine", "0"}});
  w.Gauge(kRunning, "Number of requests in model execution batches.", es.running);
  w.Gauge(kWaiting, "Number of requests waiting to be processed.", es.waiting);
  if (AtLeast(0, 12)) {
    w.Header(
        kSleepState,
        "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is awake; "
        "weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep level 2.",
        "gauge");
    w.Sample(kSleepState, {{"sleep_state", "awake"}}, 1);
    w.Sample(kSleepState, {{"sleep_state", "weights_offloaded"}}, 0);
    w.Sample(kSleepState, {{"sleep_state", "discard_all"}}, 0);
  }
  const bool old_cache_names = Visible(11, 12, "0.10");
  const double queries = static_cast<double>(es.prefix_cache_queries);
  const double hits = static_cast<double>(es.prefix_cache_hits);
  if (old_cache_names) {
    w.Gauge(kGpuCacheUsage,
            "GPU KV-cache usage. 1 means 100 percent usage.DEPRECATED: Use "
            "vllm:kv_cache_usage_perc instead.",
            kv_usage);
    w.Counter1(kGpuPrefixQueries,
               "GPU prefix cache queries, in terms of number of queriedtokens. DEPRECATED: Use "
               "vllm:prefix_cache_queries instead.",
               queries, created_base_);
    w.Counter1(kGpuPrefixHits,
               "GPU prefix cache hits, in terms of number of cached tokens. DEPRECATED: Use "
               "vllm:prefix_cache_hits instead.",
               hits, created_base_);
  }
  w.Gauge(kKvCacheUsage, "KV-cache usage. 1 means 100 percent usage.", kv_usage);
  w.Counter1(kPrefixQueries, "Prefix cache queries, in terms of number of queried tokens.", queries,
             created_base_);
  w.Counter1(kPrefixHits, "Prefix cache hits, in terms of number of cached tokens.", hits,
             created_base_);
  if (AtLeast(0, 12)) {
    w.Counter1(kExternalPrefixQueries,
               "External prefix cache queries from KV connector cross-instance cache sharing, in "
               "terms of number of queried tokens.",
               0, created_base_);
    w.Counter1(kExternalPrefixHits,
               "External prefix cache hits from KV connector cross-instance cache sharing, in "
               "terms of number of cached tokens.",
               0, created_base_);
    w.Counter1(kMmCacheQueries, "Multi-modal cache queries, in terms of number of queried items.",
               0, created_base_);
    w.Counter1(kMmCacheHits, "Multi-modal cache hits, in terms of number of cached items.", 0,
               created_base_);
  }
  w.Counter1(kPreemptions, "Cumulative number of preemption from the engine.",
             static_cast<double>(es.preemptions), created_base_);
  w.Counter1(kPromptTokens, "Number of prefill tokens processed.", prompt_tokens_.value,
             prompt_tokens_.created);
  w.Counter1(kGenerationTokens, "Number of generation tokens processed.", generation_tokens_.value,
             generation_tokens_.created);
  w.Counter(kRequestSuccess, "Count of successfully processed requests.",
            SuccessChildren(success_));
  RenderV1Histograms(w);
  w.out() += CacheConfigInfoV1(o_);
  return w.out();
}

template <typename W>
void VllmMetrics::RenderV1Histograms(W& w) const {
  w.Histogram(kReqPromptTokens, "Number of prefill tokens processed.", prompt_hist_, false);
  if (AtLeast(0, 13))
    w.Histogram(kReqKvComputedTokens,
                "Histogram of new KV tokens computed during prefill (excluding cached tokens).",
                kv_computed_hist_, false);
  w.Histogram(kReqGenerationTokens, "Number of generation tokens processed.", gen_hist_, false);
  w.Histogram(kIterationTokens, "Histogram of number of tokens per engine_step.", iter_tokens_,
              false);
  w.Histogram(kReqMaxGen, "Histogram of maximum number of requested generation tokens.",
              max_gen_hist_, false);
  w.Histogram(kReqParamsN, "Histogram of the n request parameter.", n_hist_, false);
  w.Histogram(kReqParamsMaxTokens, "Histogram of the max_tokens request parameter.",
              max_tokens_hist_, false);
  w.Histogram(kTtft, "Histogram of time to first token in seconds.", ttft_, false);
  // Until 0.11 this was the per-iteration ITL; deprecated in 0.11, hidden in 0.12.
  if (Visible(12, 14, "0.11")) {
    w.Histogram(kTpot,
                AtLeast(0, 11) ? "Histogram of time per output token in seconds.DEPRECATED: Use "
                                 "vllm:inter_token_latency_seconds instead."
                               : "Histogram of time per output token in seconds.",
                itl_, false);
  }
  if (AtLeast(0, 11)) {
    w.Histogram(kItl, "Histogram of inter-token latency in seconds.", itl_, false);
    w.Histogram(kReqTpot, "Histogram of time_per_output_token_seconds per request.", tpot_req_,
                false);
  }
  w.Histogram(kE2e, "Histogram of e2e request latency in seconds.", e2e_, false);
  w.Histogram(kQueue, "Histogram of time spent in WAITING phase for request.", queue_, false);
  w.Histogram(kInference, "Histogram of time spent in RUNNING phase for request.", inference_,
              false);
  w.Histogram(kPrefill, "Histogram of time spent in PREFILL phase for request.", prefill_, false);
  w.Histogram(kDecode, "Histogram of time spent in DECODE phase for request.", decode_, false);
}

}  // namespace infertel::sim
