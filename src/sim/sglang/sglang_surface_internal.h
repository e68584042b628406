#pragma once
// What the SGLang simulator's files share and nothing else sees (private to src/sim/sglang):
// the in-flight request and job, the parsed request (SglIntake), and small helpers. The
// surface's files, by concern: sglang_surface.cc (the class, routing, small helpers),
// sglang_control.cc (health, trace level, logging, server info), sglang_inflight.cc (requests
// in the engine: submit, outputs, aborts, PD queues, the end of a request),
// sglang_request.cc (body to job, the request log), sglang_openai.cc (/v1/chat/completions,
// /v1/completions) and sglang_generate.cc (the native /generate).

#include <simdjson.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/engine/engine.h"
#include "sim/http_server.h"
#include "sim/json_writer.h"
#include "sim/sglang/sglang_surface.h"
#include "sim/sglang/sglang_tracing.h"

namespace infertel::sim {

// The end-of-sequence token reported in matched_stop when generation stops by itself
// (Qwen's <|im_end|>, matching the ChatML-style template the simulator renders).
constexpr std::int64_t kEosTokenId = 151645;

// One batch of output the scheduler hands to the tokenizer.
struct SglEmission {
  int idx = 0;
  std::vector<GeneratedToken> tokens;
  std::string text;
  bool finished = false;
  FinishReason reason = FinishReason::kNone;
  std::string stop_reason;
  RequestRecord record;
  std::uint64_t sent_ns = 0;
};

// How the generated tokens of one choice are split into reasoning, content and tool calls.
struct SglRouter {
  int reasoning_len = 0;  // leading reasoning tokens (0: no reasoning parser)
  int num_calls = 0;      // tool calls (0: no tool parser, or tools not used)
  // Which part token `i` (0-based) belongs to: -2 reasoning, -1 content, k ≥ 0 tool call k.
  int Route(int i) const {
    if (i < reasoning_len) return -2;
    if (num_calls == 0) return -1;
    // The first tool token opens call 0, the next ones go to the last call.
    return std::min(num_calls - 1, i - reasoning_len);
  }
};

// One engine sequence (one rid).
struct SglReq {
  std::string rid;
  int idx = 0;
  int prompt_index = 0;
  std::vector<TokenId> prompt;
  SamplingSpec spec;
  bool stream = false;
  int stream_interval = 1;
  bool log_metrics = true;
  SglRouter router;
  SglangSpanInput span;
  SglangRootAttrs params;
  std::string log_obj_text, log_obj_json;  // rendered at receive time
  // Engine thread (and the abort path), guarded by mu.
  std::mutex mu;
  bool done = false;
  int total_tokens = 0;
  std::vector<GeneratedToken> pend_tokens;
  std::string pend_text;
  std::uint64_t first_sent_ns = 0, last_sent_ns = 0;
  std::string text;
  std::vector<TokenId> ids;
  RequestRecord record;
  FinishReason reason = FinishReason::kNone;
  std::string stop_reason;
  bool defer_finalize = false;  // PD prefill: the KV transfer ends it, on the strand
};

struct SglJob {
  std::vector<std::unique_ptr<SglReq>> reqs;
  bool stream = false;
  std::mutex mu;
  std::deque<SglEmission> inbox;
  std::function<void()> waker;
  std::deque<SglEmission> ready;  // strand only
  int remaining = 0;              // strand only
  bool write_failed = false;      // strand only: the client is gone
};

// A request body as the OpenAI endpoints and /generate both read it.
struct SglIntake {
  std::vector<std::string> texts;             // prompt texts (empty entries for token prompts)
  std::vector<std::vector<TokenId>> prompts;  // tokenized
  int n = 1;
  std::optional<int> max_new_tokens;
  std::vector<std::string> stop;
  bool ignore_eos = false;
  std::uint64_t seed = 0;
  double temperature = 1.0, top_p = 1.0;
  int top_k = -1;
  bool stream = false;
  int stream_interval = 1;
  std::vector<std::string> user_rids;  // "rid" of the body
  bool rid_is_list = false;
  std::string traceparent, tracestate;
  std::uint64_t bootstrap_room = 0;
  bool batch = false;
  // How the job's requests are set up and logged.
  bool reasoning = false;            // a reasoning parser splits off the leading tokens
  int tool_calls = 0;                // tool calls of each choice (0: none)
  bool log_stream_interval = false;  // the request log prints sampling_params.stream_interval
  bool log_rid_list = false;         // the JSON request log lists a batch's rids
};

std::string RandomHex(int n);
std::string_view PathOf(std::string_view target);
// A string or a list of strings; other values are left out.
std::vector<std::string> GetStrList(const simdjson::dom::object& o, std::string_view key);
// Token ids of a JSON array (other values left out).
std::vector<TokenId> TokenIds(const simdjson::dom::array& arr);
// Python's repr() of a str (the request log prints dataclasses), of a float, and of a long str
// the way _dataclass_to_string_truncated shortens it.
std::string PyRepr(std::string_view s);
std::string PyFloat(double v);
std::string PyReprTruncated(std::string_view s, std::size_t max_length);
double WallSeconds(std::uint64_t ns);
// The request body as a JSON object; nullopt when it is not one (the caller answers 400).
std::optional<simdjson::dom::object> BodyObject(simdjson::dom::parser& parser,
                                                const HttpRequest& req);
// SGLang answers FastAPI's RequestValidationError with 400 and an ErrorResponse.
std::string ValidationMessage(std::string_view type, std::string_view loc, std::string_view msg,
                              std::string_view input = "None");
// meta_info.finish_reason of the native API.
void FinishReasonObject(JsonWriter& w, FinishReason r, const std::string& stop, int tokens);

// The request log's renderings of a request (GenerateReqInput), by log level.
std::string SamplingRepr(const SglIntake& in, bool with_interval);
std::string ObjText(int level, const std::vector<std::string>& texts, bool batch,
                    const std::string& sampling, const std::vector<std::string>& rids, bool stream);
std::string ObjJson(int level, const std::vector<std::string>& texts, bool batch,
                    const SglIntake& in, const std::vector<std::string>& rids);
// Fills job with one SglReq per (prompt, sample) and names their rids. Returns an error message
// (SGLang's ValueError text) when a prompt does not fit the context.
std::optional<std::string> BuildJob(const SglIntake& in, int context_len, SglJob* job,
                                    std::vector<std::string>* rids_out);

}  // namespace infertel::sim
