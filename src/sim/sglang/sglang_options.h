#pragma once
// What `infertel sim --engine sglang` imitates: SGLang's server arguments that shape its
// observable surface (facts/sglang.md), and the release whose behaviour to copy.

#include <string>
#include <string_view>

namespace infertel::sim {

// An SGLang release, MAJOR.MINOR.PATCH (a `.postN`/`.devN` tail is ignored).
struct SglangVersion {
  int major = 0, minor = 5, patch = 20;
  bool AtLeast(int ma, int mi, int pa) const {
    if (major != ma) return major > ma;
    if (minor != mi) return minor > mi;
    return patch >= pa;
  }
};
// False when `text` is not MAJOR.MINOR[.PATCH…].
bool ParseSglangVersion(std::string_view text, SglangVersion* out);

// The release-dependent shapes, in one place. Boundaries the facts date only roughly are
// estimates (noted per field); the defaults are those of the newest release imitated.
struct SglangEra {
  explicit SglangEra(const SglangVersion& v);
  // Native tracing exists (PR #9962, first in ≈0.5.3).
  bool tracing = true;
  // The observability package (≈0.5.9): trace levels, /set_trace_level, gen_ai.* root
  // attributes, decode_forward.
  bool trace_levels = true;
  // SGLANG_TRACE_LEVEL is read at start-up (PR #24716, 0.5.12).
  bool trace_level_env = true;
  // `api_server_dispatch`/`dpc_dispatch` (older `dispatch`/`dc_dispatch`); undated, taken
  // as 0.5.12 [est].
  bool api_server_dispatch_name = true;
  // `[PP n]` on thread spans and the root's `module` attribute (mid-2026) [est 0.5.13].
  bool pp_rank = true;
  // spec_draft/spec_verify/spec_draft_extend (PR #19545) [est 0.5.10].
  bool spec_stages = true;
  // PD: a `Bootstrap Room 0x…` span parents the Req span (before the observability era).
  bool bootstrap_room_span = false;
  // /metrics label and name generations.
  enum class Metrics {
    k035,    // 0.3.x: `name=` label, first-generation names
    k04,     // 0.4.x: `model_name` label only
    kMid,    // 0.5.0–0.5.8 [est]: scheduler gauges per process (`pid`), engine_type/tp/pp
    kNewest  // 0.5.9+ [est]: + moe_ep_rank, no pid; tokenizer engine_type, is_streaming
  };
  Metrics metrics = Metrics::kNewest;
  // The log-requests level default (very old releases defaulted to 0).
  int default_log_requests_level = 2;
};

struct SglangSimOptions {
  std::string version = "0.5.20";  // --sglang-version
  std::string served_model_name;   // --served-model-name; empty: the model path
  bool enable_trace = false;       // --enable-trace
  // --otlp-traces-endpoint for SGLang; empty: SGLang's default "localhost:4317".
  std::string otlp_traces_endpoint;
  std::string trace_modules = "request";  // --trace-modules
  bool enable_metrics = false;            // --enable-metrics
  bool enable_metrics_for_all_schedulers = false;
  int decode_log_interval = 40;      // --decode-log-interval
  bool enable_cache_report = false;  // --enable-cache-report
  int tp_size = 1;                   // --tp-size / --tp
  int stream_interval = 1;           // --stream-interval
  bool stream_response_default_include_usage = false;
  bool incremental_streaming_output = false;
  bool log_requests = false;    // --log-requests
  int log_requests_level = -1;  // --log-requests-level; -1: the release's default
  std::string log_requests_format = "text";
  std::string log_level = "info";
  std::string disaggregation_mode = "null";  // --disaggregation-mode: null, prefill, decode
  std::string speculative_algorithm;         // --speculative-algorithm (EAGLE, NGRAM, …)
  int speculative_num_steps = 3;
  int speculative_eagle_topk = 1;
  int speculative_num_draft_tokens = 4;
  std::string tool_call_parser;  // --tool-call-parser: tool calls need one
  std::string reasoning_parser;  // --reasoning-parser: output starts with reasoning
  bool disable_overlap_schedule = false;
  std::string weight_version = "default";
  // Simulator knobs: the delay before a streamed request whose client left is aborted
  // (SGLang's background task sleeps 2 s), and the non-streaming disconnect check period
  // (SGLANG_REQUEST_STATE_WAIT_TIMEOUT, default 4 s; the environment wins).
  int stream_abort_delay_ms = 2000;
};

}  // namespace infertel::sim
