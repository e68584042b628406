#include "sim/engine/engine.h"

#include <algorithm>
#include <chrono>
#include <random>

#include "core/clock.h"

namespace infertel::sim {

const char* FinishReasonName(FinishReason r) {
  switch (r) {
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kAbort:
      return "abort";
    case FinishReason::kNone:
      break;
  }
  return "";
}

namespace {

std::uint64_t Mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

}  // namespace

struct Engine::Req {
  std::string id;
  std::vector<TokenId> tokens;  // prompt followed by generated tokens
  int prompt_len = 0;
  int computed = 0;  // tokens whose KV is in the cache
  std::vector<int> block_table;
  std::vector<std::uint64_t> block_hashes;  // chained hashes of the full blocks in block_table
  SamplingSpec sampling;
  std::shared_ptr<OutputCallback> cb;
  RequestRecord rec;
  std::mt19937_64 rng;
  int max_tokens = 0;
  int eos_after = 0;  // natural length; 0 with ignore_eos
  std::string text;   // generated text after stop handling
  bool ever_scheduled = false;
  std::vector<StepTrace> pending_steps;  // EngineConfig::record_steps
};

Engine::Engine(EngineConfig config) : config_(std::move(config)) {
  if (!config_.mono_now) config_.mono_now = [] { return MonoNanos(); };
  if (!config_.wall_now) config_.wall_now = [] { return WallNanos(); };
  if (config_.speed <= 0) config_.speed = 1.0;
  config_.spec_num_draft_tokens = std::max(0, config_.spec_num_draft_tokens);
  config_.spec_accept_prob = std::clamp(config_.spec_accept_prob, 0.0, 1.0);
  config_.block_size = std::max(1, config_.block_size);
  config_.num_kv_blocks = std::max(1, config_.num_kv_blocks);
  config_.max_num_seqs = std::max(1, config_.max_num_seqs);
  config_.max_num_batched_tokens = std::max(1, config_.max_num_batched_tokens);
  blocks_.resize(config_.num_kv_blocks);
  free_list_.reserve(config_.num_kv_blocks);
  for (int i = config_.num_kv_blocks - 1; i >= 0; --i) free_list_.push_back(i);
  stats_.kv_blocks_total = config_.num_kv_blocks;
}

Engine::~Engine() { Stop(); }

void Engine::SetObserver(EngineObserver* observer) {
  std::lock_guard lk(mu_);
  observer_ = observer;
}

bool Engine::Submit(const std::string& id, std::vector<TokenId> prompt, SamplingSpec sampling,
                    OutputCallback on_output) {
  auto r = std::make_unique<Req>();
  r->id = id;
  r->prompt_len = static_cast<int>(prompt.size());
  if (r->prompt_len == 0 || r->prompt_len >= config_.max_model_len) return false;
  std::uint64_t h = Mix(config_.seed, sampling.seed);
  h = Mix(h, static_cast<std::uint64_t>(sampling.choice_index));
  for (TokenId t : prompt) h = Mix(h, t);
  r->rng.seed(h);
  r->tokens = std::move(prompt);
  int room = config_.max_model_len - r->prompt_len;
  r->max_tokens = sampling.max_tokens < 0 ? room : std::min(sampling.max_tokens, room);
  r->eos_after = sampling.ignore_eos ? 0 : 8 + static_cast<int>(r->rng() % 56);
  r->sampling = std::move(sampling);
  r->cb = std::make_shared<OutputCallback>(std::move(on_output));
  r->rec.request_id = id;
  r->rec.arrival_wall_ns = config_.wall_now();
  r->rec.arrival_mono_ns = Now();
  r->rec.prompt_tokens = r->prompt_len;
  r->rec.max_tokens = r->max_tokens;
  {
    std::lock_guard lk(mu_);
    if (reqs_.count(id) != 0) return false;
    waiting_.push_back(id);
    reqs_.emplace(id, std::move(r));
    ++stats_.requests_received;
  }
  cv_.notify_all();
  return true;
}

bool Engine::Abort(const std::string& id, RequestRecord* record, std::vector<StepTrace>* pending,
                   bool* was_waiting) {
  RequestRecord rec;
  EngineObserver* observer = nullptr;
  {
    std::lock_guard lk(mu_);
    auto it = reqs_.find(id);
    if (it == reqs_.end()) return false;
    Req& r = *it->second;
    if (was_waiting)
      *was_waiting = std::find(running_.begin(), running_.end(), id) == running_.end();
    if (pending) *pending = std::move(r.pending_steps);
    waiting_.remove(id);
    running_.erase(std::remove(running_.begin(), running_.end(), id), running_.end());
    ReleaseBlocks(r);
    r.rec.finish_reason = FinishReason::kAbort;
    r.rec.finished_mono_ns = Now();
    rec = r.rec;
    reqs_.erase(it);
    ++stats_.aborted;
    observer = observer_;
  }
  if (record) *record = rec;
  if (observer) observer->OnRequestAborted(rec);
  return true;
}

std::optional<int> Engine::AllocateBlock() {
  int b;
  if (!free_list_.empty()) {
    b = free_list_.back();
    free_list_.pop_back();
  } else if (!lru_.empty()) {
    // Evict the least recently freed cached block.
    b = lru_.front();
    lru_.pop_front();
    blocks_[b].in_lru = false;
    auto it = cached_.find(blocks_[b].hash);
    if (it != cached_.end() && it->second == b) cached_.erase(it);
    blocks_[b].hash = 0;
  } else {
    return std::nullopt;
  }
  blocks_[b].ref = 1;
  return b;
}

void Engine::ReleaseBlocks(Req& r) {
  // Tail blocks first, so that when evicting, a prompt's later blocks go before its
  // earlier (more shareable) ones.
  for (auto it = r.block_table.rbegin(); it != r.block_table.rend(); ++it) {
    Block& b = blocks_[*it];
    if (--b.ref > 0) continue;
    if (b.hash != 0) {
      b.lru_it = lru_.insert(lru_.end(), *it);
      b.in_lru = true;
    } else {
      free_list_.push_back(*it);
    }
  }
  r.block_table.clear();
  r.block_hashes.clear();
  r.computed = 0;
}

bool Engine::EnsureBlocks(Req& r, int num_tokens) {
  int needed = (num_tokens + config_.block_size - 1) / config_.block_size -
               static_cast<int>(r.block_table.size());
  if (needed <= 0) return true;
  if (needed > FreeBlockCount()) return false;
  for (int i = 0; i < needed; ++i) r.block_table.push_back(*AllocateBlock());
  return true;
}

void Engine::PreemptLocked(Req& r, std::uint64_t now) {
  ReleaseBlocks(r);
  ++r.rec.preemptions;
  ++stats_.preemptions;
  if (config_.record_steps) {
    StepTrace t;
    t.kind = StepTrace::Kind::kRetract;
    t.start_mono_ns = t.end_mono_ns = now;
    r.pending_steps.push_back(t);
  }
}

void Engine::LookupPrefixLocked(Req& r) {
  const int bs = config_.block_size;
  const int len = static_cast<int>(r.tokens.size());
  // At least one token is always computed, so a full hit stops one block short.
  const int max_blocks = (len - 1) / bs;
  std::uint64_t h = 0;
  int hits = 0;
  for (int i = 0; i < max_blocks; ++i) {
    h = Mix(h, 0x51u);
    for (int k = 0; k < bs; ++k) h = Mix(h, r.tokens[i * bs + k]);
    auto it = cached_.find(h);
    if (it == cached_.end()) break;
    Block& b = blocks_[it->second];
    if (b.in_lru) {
      lru_.erase(b.lru_it);
      b.in_lru = false;
    }
    ++b.ref;
    r.block_table.push_back(it->second);
    r.block_hashes.push_back(h);
    ++hits;
  }
  r.computed = hits * bs;
}

void Engine::RegisterFullBlocksLocked(Req& r) {
  const int bs = config_.block_size;
  const std::size_t full = static_cast<std::size_t>(r.computed / bs);
  while (r.block_hashes.size() < full && r.block_hashes.size() < r.block_table.size()) {
    std::size_t i = r.block_hashes.size();
    std::uint64_t h = i == 0 ? 0 : r.block_hashes.back();
    h = Mix(h, 0x51u);
    for (int k = 0; k < bs; ++k) h = Mix(h, r.tokens[i * bs + k]);
    r.block_hashes.push_back(h);
    int b = r.block_table[i];
    if (blocks_[b].hash == 0 && cached_.count(h) == 0) {
      blocks_[b].hash = h;
      cached_[h] = b;
    }
  }
}

GeneratedToken Engine::SampleLocked(Req& r) {
  const auto& vocab = Vocabulary();
  GeneratedToken t;
  const std::string& word = vocab[r.rng() % vocab.size()];
  t.text = r.rec.generated_tokens == 0 ? word : " " + word;
  t.id = TokenIdOf(t.text);
  t.logprob = -static_cast<double>(r.rng() % 4000) / 1000.0;
  return t;
}

// What one step carries from its scheduling to its outputs.
struct Engine::StepState {
  std::vector<Scheduled> scheduled;
  std::uint64_t duration_ns = 0;
  std::uint64_t forward_ns = 0;
  std::uint64_t scheduler_ns = 0;
  std::uint64_t sched_mono = 0;
  std::uint32_t prefill_bid = 0, decode_bid = 0;
  IterationStats iter;
  BatchSummary batch;
  // Scheduling.
  int budget = 0;
  int prefill_tokens = 0, decodes = 0;
  bool preempted = false;
  // Outputs.
  std::vector<std::pair<std::shared_ptr<OutputCallback>, RequestOutput>> outputs;
  std::vector<RequestRecord> finished_records;
};

std::uint64_t Engine::Step(const std::function<void(std::uint64_t)>& sleep) {
  StepState st;
  {
    std::lock_guard lk(mu_);
    if (!ScheduleLocked(st)) return 0;
  }
  if (sleep && st.duration_ns > 0) sleep(st.duration_ns);
  EngineObserver* observer = nullptr;
  {
    std::lock_guard lk(mu_);
    observer = observer_;
    const std::uint64_t now = Now();
    st.iter.mono_ns = now;
    st.batch.mono_ns = now;
    for (const Scheduled& s : st.scheduled) RunScheduledLocked(st, s, now);
  }
  // The step's statistics are recorded before any output reaches its request, as in vLLM,
  // whose output handler records them in the same event-loop turn in which it queues the
  // outputs: a client that has its response can already scrape the tokens of it.
  if (observer) {
    for (const RequestRecord& rec : st.finished_records) observer->OnRequestFinished(rec);
    if (!st.outputs.empty() || st.iter.num_preempted > 0) observer->OnIteration(st.iter);
    observer->OnBatch(st.batch);
    EngineStats s = Stats();
    observer->OnStep(static_cast<int>(s.running), static_cast<int>(s.waiting),
                     static_cast<double>(s.kv_blocks_used) / s.kv_blocks_total);
  }
  for (auto& [cb, out] : st.outputs) {
    if (*cb) (*cb)(out);
  }
  return st.duration_ns;
}

// The step's batch: running requests, then waiting ones, within the token budget; its price.
// False when there is nothing to run and nothing was retracted.
bool Engine::ScheduleLocked(StepState& st) {
  const std::uint64_t sched_start = MonoNanos();
  const std::uint64_t preemptions_before = stats_.preemptions;
  st.budget = config_.max_num_batched_tokens;
  const std::uint64_t now = Now();
  st.sched_mono = now;
  ScheduleRunningLocked(st, now);
  ScheduleWaitingLocked(st, now);
  if (st.scheduled.empty()) {
    if (st.batch.num_retracted == 0) return false;
  } else {
    // Speculative decoding makes a decode step dearer: the draft model runs and the target
    // verifies every draft token.
    const double decode_factor = 1.0 + 0.25 * config_.spec_num_draft_tokens;
    double ms = config_.step_fixed_ms + config_.prefill_ms_per_token * st.prefill_tokens +
                config_.decode_ms_per_token * st.decodes * decode_factor;
    st.duration_ns = static_cast<std::uint64_t>(ms / config_.speed * 1e6);
    st.forward_ns = static_cast<std::uint64_t>((ms - config_.step_fixed_ms) / config_.speed * 1e6);
    ++stats_.steps;
    if (config_.record_steps) {
      // Batch ids: stable per step, distinct for the prefill and the decode part.
      st.prefill_bid = static_cast<std::uint32_t>(Mix(config_.seed ^ 0xb1d, stats_.steps * 2));
      st.decode_bid = static_cast<std::uint32_t>(Mix(config_.seed ^ 0xb1d, stats_.steps * 2 + 1));
    }
  }
  st.iter.num_preempted = static_cast<int>(stats_.preemptions - preemptions_before);
  st.scheduler_ns = MonoNanos() - sched_start;
  return true;
}

// A request in the batch: its new tokens, counted as a decode or as prefill.
void Engine::Account(StepState& st, Req& r, int num_new) {
  const bool decode = num_new == 1 && static_cast<int>(r.tokens.size()) > r.prompt_len;
  st.scheduled.push_back({r.id, num_new, decode});
  st.budget -= num_new;
  if (decode) {
    ++st.decodes;
    ++st.batch.num_decode_reqs;
    st.batch.decode_sum_seq_lens += static_cast<std::int64_t>(r.tokens.size());
  } else {
    st.prefill_tokens += num_new;
    ++st.batch.num_prefill_reqs;
    st.batch.num_prefill_tokens += num_new;
  }
}

// Running requests first, oldest first; the newest is preempted when blocks run out.
void Engine::ScheduleRunningLocked(StepState& st, std::uint64_t now) {
  for (std::size_t i = 0; i < running_.size() && st.budget > 0;) {
    Req& r = *reqs_.at(running_[i]);
    int num_new = std::min(static_cast<int>(r.tokens.size()) - r.computed, st.budget);
    bool self_preempted = false;
    while (!EnsureBlocks(r, r.computed + num_new)) {
      std::string victim = running_.back();
      running_.pop_back();
      Req& v = *reqs_.at(victim);
      ++st.batch.num_retracted;
      st.batch.num_retracted_input_tokens += v.prompt_len;
      st.batch.num_retracted_output_tokens += v.rec.generated_tokens;
      PreemptLocked(v, now);
      waiting_.push_front(victim);
      st.preempted = true;
      if (victim == r.id) {
        self_preempted = true;
        break;
      }
    }
    if (self_preempted) break;
    Account(st, r, num_new);
    ++i;
  }
}

// Then waiting requests, FIFO, while there is room (none after a preemption this step).
void Engine::ScheduleWaitingLocked(StepState& st, std::uint64_t now) {
  while (!st.preempted && !waiting_.empty() && st.budget > 0 &&
         static_cast<int>(running_.size()) < config_.max_num_seqs) {
    Req& r = *reqs_.at(waiting_.front());
    LookupPrefixLocked(r);
    if (!r.ever_scheduled) r.rec.cached_tokens = r.computed;
    int num_new = std::min(static_cast<int>(r.tokens.size()) - r.computed, st.budget);
    if (!EnsureBlocks(r, r.computed + num_new)) {
      ReleaseBlocks(r);
      break;
    }
    waiting_.pop_front();
    running_.push_back(r.id);
    if (!r.ever_scheduled) {
      // Like vLLM's PrefixCacheStats: new requests only, not re-queries after preemption.
      stats_.prefix_cache_queries += r.tokens.size();
      stats_.prefix_cache_hits += r.computed;
      r.ever_scheduled = true;
      r.rec.scheduled_mono_ns = now;
      ++st.batch.num_new_reqs;
      st.batch.num_new_cached_tokens += r.computed;
      st.batch.num_new_input_tokens += r.prompt_len;
    }
    Account(st, r, num_new);
  }
}

// One scheduled request once the step ran: a prefill chunk is noted; otherwise its tokens are
// sampled (with the drafts a verify step accepted), and its output and end recorded.
void Engine::RunScheduledLocked(StepState& st, const Scheduled& s, std::uint64_t now) {
  auto it = reqs_.find(s.id);
  if (it == reqs_.end()) return;  // aborted while the step ran
  Req& r = *it->second;
  r.computed += s.num_new;
  r.rec.execute_ns += st.duration_ns;
  r.rec.forward_ns += st.forward_ns;
  r.rec.scheduler_ns += st.scheduler_ns;
  RegisterFullBlocksLocked(r);
  StepTrace trace;
  if (config_.record_steps) {
    trace.kind = s.decode ? StepTrace::Kind::kDecode : StepTrace::Kind::kPrefill;
    trace.start_mono_ns = st.sched_mono;
    trace.end_mono_ns = now;
    trace.batch_id = s.decode ? st.decode_bid : st.prefill_bid;
    trace.batch_size = s.decode ? st.batch.num_decode_reqs : st.batch.num_prefill_reqs;
    trace.num_tokens = s.num_new;
  }
  if (r.computed < static_cast<int>(r.tokens.size())) {  // prefill chunk
    if (config_.record_steps) r.pending_steps.push_back(trace);
    return;
  }
  const int accepted = s.decode ? VerifyDraftsLocked(st, r, trace) : 0;
  if (r.rec.first_token_mono_ns == 0) {
    r.rec.first_token_mono_ns = now;
    st.iter.num_prompt_tokens += r.prompt_len;
  } else {
    st.iter.inter_token_s.push_back(static_cast<double>(now - r.rec.last_token_mono_ns) / 1e9);
  }
  r.rec.last_token_mono_ns = now;

  RequestOutput out;
  const std::size_t emitted = r.text.size();
  const FinishReason reason = SampleTokensLocked(st, r, accepted, &out);
  // The verify pass computed the KV of every accepted token; the newest one is computed
  // by the next step, as after a plain decode step.
  r.computed = static_cast<int>(r.tokens.size()) - 1;
  if (config_.record_steps) {
    if (s.decode) trace.num_tokens = static_cast<int>(out.tokens.size());
    trace.prefill_done = !s.decode;
    r.pending_steps.push_back(trace);
    out.steps = std::move(r.pending_steps);
    r.pending_steps.clear();
  }
  out.text_delta = r.text.size() > emitted ? r.text.substr(emitted) : std::string();
  out.cached_tokens = r.rec.cached_tokens;
  if (reason != FinishReason::kNone) {
    out.finished = true;
    out.finish_reason = reason;
    r.rec.finish_reason = reason;
    r.rec.finished_mono_ns = now;
    running_.erase(std::remove(running_.begin(), running_.end(), r.id), running_.end());
    ReleaseBlocks(r);
    ++stats_.finished;
    st.finished_records.push_back(r.rec);
  }
  out.record = r.rec;
  st.outputs.emplace_back(r.cb, std::move(out));
  if (reason != FinishReason::kNone) reqs_.erase(it);
}

// A verify step keeps an accepted prefix of the drafts, plus the bonus token: how many.
int Engine::VerifyDraftsLocked(StepState& st, Req& r, StepTrace& trace) {
  if (config_.spec_num_draft_tokens <= 0) return 0;
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int accepted = 0;
  while (accepted < config_.spec_num_draft_tokens && unit(r.rng) < config_.spec_accept_prob)
    ++accepted;
  ++r.rec.spec_verify_ct;
  r.rec.spec_proposed += config_.spec_num_draft_tokens;
  r.rec.spec_accepted += accepted;
  st.batch.spec_proposed += config_.spec_num_draft_tokens;
  st.batch.spec_accepted += accepted;
  ++st.batch.spec_verify_reqs;
  trace.spec_proposed = config_.spec_num_draft_tokens;
  trace.spec_accepted = accepted;
  return accepted;
}

// The step's tokens of one request (1 + the accepted drafts) into *out, cut at a stop string;
// why the request ends, if it does.
FinishReason Engine::SampleTokensLocked(StepState& st, Req& r, int accepted, RequestOutput* out) {
  FinishReason reason = FinishReason::kNone;
  for (int k = 0; k <= accepted && reason == FinishReason::kNone; ++k) {
    GeneratedToken tok = SampleLocked(r);
    r.tokens.push_back(tok.id);
    ++r.rec.generated_tokens;
    ++st.iter.num_generation_tokens;
    ++st.batch.num_generation_tokens;
    const std::size_t before = r.text.size();
    std::string candidate = r.text + tok.text;
    for (const std::string& stop : r.sampling.stop) {
      if (stop.empty()) continue;
      std::size_t from = before >= stop.size() ? before - stop.size() + 1 : 0;
      std::size_t pos = candidate.find(stop, from);
      if (pos != std::string::npos) {
        candidate.resize(pos + (r.sampling.include_stop_str_in_output ? stop.size() : 0));
        reason = FinishReason::kStop;
        out->stop_reason = stop;
        break;
      }
    }
    if (reason == FinishReason::kNone) {
      if (r.rec.generated_tokens >= r.max_tokens ||
          static_cast<int>(r.tokens.size()) >= config_.max_model_len) {
        reason = FinishReason::kLength;
      } else if (r.eos_after > 0 && r.rec.generated_tokens >= r.eos_after) {
        reason = FinishReason::kStop;
      }
    }
    r.text = std::move(candidate);
    out->tokens.push_back(std::move(tok));
  }
  return reason;
}

void Engine::Start() {
  std::lock_guard lk(mu_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] {
    for (;;) {
      {
        std::unique_lock lk(mu_);
        cv_.wait(lk, [&] { return stopping_ || !waiting_.empty() || !running_.empty(); });
        if (stopping_) return;
      }
      std::uint64_t d = Step([this](std::uint64_t ns) {
        std::unique_lock lk(mu_);
        cv_.wait_for(lk, std::chrono::nanoseconds(ns), [&] { return stopping_; });
      });
      if (d == 0) {
        // Work is queued but none fits (e.g. KV full with nothing running); poll gently.
        std::unique_lock lk(mu_);
        cv_.wait_for(lk, std::chrono::milliseconds(5), [&] { return stopping_; });
      }
    }
  });
}

void Engine::Stop() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

EngineStats Engine::Stats() const {
  std::lock_guard lk(mu_);
  EngineStats s = stats_;
  s.running = running_.size();
  s.waiting = waiting_.size();
  s.kv_blocks_used = static_cast<std::uint64_t>(config_.num_kv_blocks - FreeBlockCount());
  return s;
}

}  // namespace infertel::sim
