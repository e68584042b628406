#pragma once
// A continuous-batching engine model, independent of any HTTP surface. It reproduces the
// scheduling behaviour that shapes an inference server's telemetry: a cap on running
// sequences, a paged KV cache with a prefix cache, chunked prefill bounded by a per-step token
// budget, preemption by recomputation when KV blocks run out, and a step time made of a fixed
// cost plus per-token costs. No model runs: generated tokens come from a seeded RNG.
//
// Thread-safety: every public method may be called from any thread. Step() is normally driven
// by the engine's own thread (Start()); tests call Step() directly with an injected clock.
// Request callbacks are invoked on the stepping thread, never under the engine's lock, and
// must not block.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "sim/engine/tokenizer.h"

namespace infertel::sim {

struct EngineConfig {
  int max_num_seqs = 64;
  int num_kv_blocks = 4096;  // x block_size tokens: ~48 requests of 1k tokens plus slack
  int block_size = 16;
  int max_num_batched_tokens = 2048;
  int max_model_len = 8192;
  double step_fixed_ms = 2.0;
  double prefill_ms_per_token = 0.02;
  double decode_ms_per_token = 0.3;  // per running decode sequence
  double speed = 1.0;                // all step times are divided by this
  std::uint64_t seed = 0;
  // Per-request step traces (RequestOutput::steps), for engines whose native spans have one
  // span per scheduling stage (SGLang). Off by default: it costs a little per step.
  bool record_steps = false;
  // Speculative decoding: each decode step drafts this many tokens and keeps an accepted
  // prefix of them plus one bonus token. 0: off.
  int spec_num_draft_tokens = 0;
  double spec_accept_prob = 0.7;  // chance that each successive draft token is accepted
  // Monotonic clock in nanoseconds; tests inject a fake one.
  std::function<std::uint64_t()> mono_now;
  // Wall clock in nanoseconds since the Unix epoch.
  std::function<std::uint64_t()> wall_now;
};

enum class FinishReason { kNone, kStop, kLength, kAbort };
const char* FinishReasonName(FinishReason r);

// What a request asks of the engine. One engine request is one sequence; an API request
// with n > 1 submits n of them.
struct SamplingSpec {
  int max_tokens = -1;  // -1: up to max_model_len
  std::vector<std::string> stop;
  bool include_stop_str_in_output = false;
  bool ignore_eos = false;
  std::uint64_t seed = 0;  // mixed with the engine seed and the prompt
  int choice_index = 0;
};

// Timing and accounting of one request, for native spans and metrics (monotonic ns unless
// named wall). Zero means "not reached".
struct RequestRecord {
  std::string request_id;
  std::uint64_t arrival_wall_ns = 0;
  std::uint64_t arrival_mono_ns = 0;    // queued
  std::uint64_t scheduled_mono_ns = 0;  // first scheduled
  std::uint64_t first_token_mono_ns = 0;
  std::uint64_t last_token_mono_ns = 0;
  std::uint64_t finished_mono_ns = 0;
  int prompt_tokens = 0;
  int cached_tokens = 0;  // prefix-cache hit at first scheduling
  int generated_tokens = 0;
  int preemptions = 0;
  int max_tokens = 0;
  // Speculative decoding (EngineConfig::spec_num_draft_tokens > 0): verify steps, drafts
  // proposed and drafts accepted.
  int spec_verify_ct = 0;
  int spec_proposed = 0;
  int spec_accepted = 0;
  // Modelled time of the steps this request took part in, and the real time the scheduler
  // spent on them (vLLM V0's detailed traces: model execute/forward and scheduler time).
  std::uint64_t execute_ns = 0;
  std::uint64_t forward_ns = 0;
  std::uint64_t scheduler_ns = 0;
  FinishReason finish_reason = FinishReason::kNone;
};

// What one engine step produced, the way vLLM's IterationStats sees an output batch.
struct IterationStats {
  std::uint64_t mono_ns = 0;          // when the outputs were produced
  int num_prompt_tokens = 0;          // prompt lengths of requests that got their first token
  int num_generation_tokens = 0;      // tokens generated this step
  int num_preempted = 0;              // requests preempted while scheduling this step
  std::vector<double> inter_token_s;  // per non-first output: time since the previous output
};

// What one scheduling step did, the way SGLang's scheduler logs a batch.
struct BatchSummary {
  std::uint64_t mono_ns = 0;             // when the step's results were applied
  int num_prefill_reqs = 0;              // requests in the prefill part of the step
  int num_prefill_tokens = 0;            // tokens computed for them (excluding prefix-cache hits)
  int num_new_reqs = 0;                  // requests scheduled for the first time
  int num_new_cached_tokens = 0;         // prefix-cache hits of those, in tokens
  int num_new_input_tokens = 0;          // their prompt lengths
  int num_decode_reqs = 0;               // requests in the decode part of the step
  int num_generation_tokens = 0;         // tokens generated this step
  std::int64_t decode_sum_seq_lens = 0;  // sum of sequence lengths in the decode part
  int num_retracted = 0;                 // requests preempted (retracted) this step
  int num_retracted_input_tokens = 0;
  int num_retracted_output_tokens = 0;
  int spec_proposed = 0;  // speculative drafts proposed and accepted this step
  int spec_accepted = 0;
  int spec_verify_reqs = 0;  // requests that ran a verify step
};

// One scheduling event of one request, recorded with EngineConfig::record_steps.
struct StepTrace {
  enum class Kind { kPrefill, kDecode, kRetract };
  Kind kind = Kind::kPrefill;
  std::uint64_t start_mono_ns = 0;  // the batch was scheduled (retract: when it happened)
  std::uint64_t end_mono_ns = 0;    // its results were applied
  std::uint32_t batch_id = 0;       // one per batch (prefill and decode batches apart)
  int batch_size = 0;               // requests in that batch
  int num_tokens = 0;               // prefill: tokens computed; decode: tokens generated
  bool prefill_done = false;        // prefill: this chunk completed the prompt
  int spec_proposed = 0;            // decode with speculative decoding: drafts proposed
  int spec_accepted = 0;            // and accepted
};

struct GeneratedToken {
  TokenId id = 0;
  std::string text;
  double logprob = 0;
};

// One step's output for one request.
struct RequestOutput {
  std::vector<GeneratedToken> tokens;  // new this step
  std::string text_delta;              // after stop-string handling
  bool finished = false;
  FinishReason finish_reason = FinishReason::kNone;
  std::string stop_reason;  // the stop string that matched, empty otherwise
  int cached_tokens = 0;
  RequestRecord record;  // snapshot
  // With EngineConfig::record_steps: the steps since the previous output of this request
  // (prefill chunks that produced no token are delivered with the next output).
  std::vector<StepTrace> steps;
};

using OutputCallback = std::function<void(const RequestOutput&)>;

// Engine-wide hooks (metrics, native spans) for later. Called on the stepping thread.
class EngineObserver {
 public:
  virtual ~EngineObserver() = default;
  virtual void OnRequestFinished(const RequestRecord& record) {}
  // A client abort; vLLM records no stats or span for these (facts §3.6).
  virtual void OnRequestAborted(const RequestRecord& record) {}
  virtual void OnStep(int num_running, int num_waiting, double kv_usage) {}
  // After every step that produced outputs, before the request callbacks of that step.
  virtual void OnIteration(const IterationStats& stats) {}
  // After every non-empty step, before OnStep.
  virtual void OnBatch(const BatchSummary& batch) {}
};

struct EngineStats {
  std::uint64_t running = 0, waiting = 0, finished = 0, aborted = 0, preemptions = 0;
  std::uint64_t prefix_cache_queries = 0, prefix_cache_hits = 0;  // in tokens, like vLLM
  std::uint64_t kv_blocks_used = 0, kv_blocks_total = 0, requests_received = 0;
  std::uint64_t steps = 0;
};

class Engine {
 public:
  explicit Engine(EngineConfig config);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Queues a request. `id` must be unique among live requests. Returns false (and does not
  // queue) if the prompt cannot fit max_model_len.
  bool Submit(const std::string& id, std::vector<TokenId> prompt, SamplingSpec sampling,
              OutputCallback on_output);
  // Removes a live request, freeing its KV blocks. No further callback for it. Returns false
  // if it is unknown (already finished). `record` gets its final record, `pending` the step
  // traces not yet delivered, and `was_waiting` whether it was queued (not running).
  bool Abort(const std::string& id, RequestRecord* record = nullptr,
             std::vector<StepTrace>* pending = nullptr, bool* was_waiting = nullptr);

  // Runs one scheduling step: schedules, waits the step's modelled duration through `sleep`
  // (nothing when null), then applies results and delivers callbacks. Returns the modelled
  // step duration in ns (0 when idle).
  std::uint64_t Step(const std::function<void(std::uint64_t)>& sleep = nullptr);

  // Starts/stops the stepping thread. Stop() is idempotent; the destructor calls it.
  void Start();
  void Stop();

  EngineStats Stats() const;
  const EngineConfig& config() const { return config_; }
  void SetObserver(EngineObserver* observer);  // not owned; must outlive the engine

 private:
  struct Req;
  struct Block {
    int ref = 0;
    std::uint64_t hash = 0;  // 0: not registered in the prefix cache
    std::list<int>::iterator lru_it;
    bool in_lru = false;
  };
  struct Scheduled {
    std::string id;
    int num_new = 0;
    bool decode = false;
  };

  struct StepState;  // engine.cc
  bool ScheduleLocked(StepState& st);
  void Account(StepState& st, Req& r, int num_new);
  void ScheduleRunningLocked(StepState& st, std::uint64_t now);
  void ScheduleWaitingLocked(StepState& st, std::uint64_t now);
  void RunScheduledLocked(StepState& st, const Scheduled& s, std::uint64_t now);
  int VerifyDraftsLocked(StepState& st, Req& r, StepTrace& trace);
  FinishReason SampleTokensLocked(StepState& st, Req& r, int accepted, RequestOutput* out);

  int FreeBlockCount() const { return static_cast<int>(free_list_.size() + lru_.size()); }
  std::optional<int> AllocateBlock();
  void ReleaseBlocks(Req& r);
  bool EnsureBlocks(Req& r, int num_tokens);
  void PreemptLocked(Req& r, std::uint64_t now);
  void LookupPrefixLocked(Req& r);
  void RegisterFullBlocksLocked(Req& r);
  GeneratedToken SampleLocked(Req& r);
  std::uint64_t Now() const { return config_.mono_now(); }

  EngineConfig config_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
  EngineObserver* observer_ = nullptr;

  std::unordered_map<std::string, std::unique_ptr<Req>> reqs_;
  std::list<std::string> waiting_;    // FIFO
  std::vector<std::string> running_;  // oldest first
  std::vector<Block> blocks_;
  std::vector<int> free_list_;  // uncached free blocks
  std::list<int> lru_;          // free blocks that still hold a cached prefix, oldest first
  std::unordered_map<std::uint64_t, int> cached_;  // block hash -> block
  EngineStats stats_;
};

}  // namespace infertel::sim
