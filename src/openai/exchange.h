#pragma once
// One observed OpenAI-API exchange: what the gateway saw of a request, its response and its
// timing. The gateway fills it on the data path and hands it, finished, to its listeners
// (the entry-span builder now; request metrics and the engine-span join later).

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/engine_id.h"
#include "core/genai_dialect.h"
#include "core/ids.h"
#include "core/latency_buckets.h"
#include "openai/openai.h"

namespace infertel::openai {

// How an exchange ended, from the client's point of view.
enum class Outcome {
  kOk,                   // the engine answered with a 2xx and the client got all of it
  kEngineError,          // the engine answered with a non-2xx status or a stream error event,
                         // or a 2xx body on a JSON endpoint that is not JSON
  kClientAborted,        // the client went away before the response was complete
  kUpstreamUnavailable,  // connecting to or talking with the engine failed
  kUpstreamTimeout,      // the engine did not answer in time
  kRejected,             // the gateway refused the request (e.g. body too large)
  kShutdown,             // still in flight when the agent's drain timeout ran out: cut
};

// When a stream's content deltas arrived, in constant memory whatever the stream's length
// (the first is Exchange::first_token_mono_ns): the latest, and the gaps between consecutive
// deltas (deltas read together are gaps of zero after the first of them), whose sum is
// latest − first.
struct DeltaTimes {
  std::uint64_t last_mono_ns = 0;  // 0: none yet
  std::int64_t gaps = 0;           // deltas − 1 once there is one
  std::uint64_t gap_max_ns = 0;    // the longest gap
  // The gaps counted into the latency histograms' buckets (core/latency_buckets.h), and
  // their sum in seconds, for the inter-token latency distribution.
  std::array<std::uint32_t, kLatencyBuckets> gap_buckets{};
  double gap_sum_s = 0;
  // `n` deltas arrived at `now` (monotonic, so never 0 nor earlier than the last).
  void Add(std::uint64_t now, std::int64_t n) {
    if (n <= 0) return;
    if (last_mono_ns != 0) {
      const std::uint64_t gap = now > last_mono_ns ? now - last_mono_ns : 0;
      gap_max_ns = std::max(gap_max_ns, gap);
      const double s = static_cast<double>(gap) / 1e9;
      ++gap_buckets[LatencyBucket(s)];
      gap_sum_s += s;
    }
    const std::int64_t zeros = n - 1;  // read together: no time between them
    gap_buckets[0] += static_cast<std::uint32_t>(zeros);
    gaps += last_mono_ns == 0 ? zeros : n;
    last_mono_ns = now;
  }
};

// Which latency objectives a request missed (analytics/slo.h judges; the names are
// semconv::kSloObjective*).
enum SloMiss : std::uint8_t {
  kSloMissTtft = 1 << 0,
  kSloMissTpot = 1 << 1,
  kSloMissE2e = 1 << 2,
  kSloMissError = 1 << 3,
};
// The request's verdict, judged once when it ended, read by the entry span, the metrics and
// the engine-span join alike (one verdict per request).
struct SloVerdict {
  bool judged = false;      // at least one objective applied to the request
  std::uint8_t missed = 0;  // SloMiss bits
  bool met() const { return judged && missed == 0; }
};

struct Exchange {
  // Which upstream, and its engine.
  std::string upstream_name;
  EngineId engine;

  openai::Operation op = openai::Operation::kNone;
  openai::RequestInfo request;
  openai::ResponseInfo response;

  // Trace context: the entry span's ids and the client's parent, if it sent one.
  TraceId trace_id{};
  SpanId span_id{};
  std::optional<SpanId> parent_span_id;
  std::string trace_state;
  std::string request_id;  // the X-Request-Id the engine saw (the client's, or ours)

  // The tenant the request was attributed to (INFERTEL_TENANT_FROM, analytics/tenant.h),
  // already bounded (INFERTEL_TENANT_MAX: `other` past it); empty: no rule, or none matched.
  std::string tenant;
  SloVerdict slo;  // set when the exchange ended

  // Timing: a start on both clocks, and monotonic readings of later moments.
  Stopwatch start;
  std::uint64_t end_mono_ns = 0;
  std::uint64_t upstream_sent_mono_ns = 0;    // request fully written to the engine
  std::uint64_t first_token_mono_ns = 0;      // first content delta (streams) or 0
  std::uint64_t response_header_mono_ns = 0;  // engine's response header arrived
  // How long the gateway waited for the client to take the response: writes the client's
  // socket could not take at once, awaited until it did (a slow reader holds the stream).
  std::uint64_t client_wait_ns = 0;

  // Stream detail.
  bool streamed = false;           // the response was an SSE stream
  std::int64_t stream_deltas = 0;  // data events that carried a delta
  // The arrival of the stream's content deltas, summed as they come (inter-token latency and
  // time per output token, exact for any length of stream).
  DeltaTimes delta_times;

  unsigned http_status = 0;  // status sent to the client
  Outcome outcome = Outcome::kOk;
  std::string error_type;     // for error.type when outcome != kOk
  std::string error_message;  // span status message

  bool capture_content = true;  // content capture was on for this exchange
  // The names its telemetry speaks (OTEL_SEMCONV_STABILITY_OPT_IN) when it began.
  GenAiDialect genai_dialect = GenAiDialect::kModel;
  // Where captured content goes (the capture strategy when the request arrived): entry-span
  // attributes, a gen_ai.client.inference.operation.details log event, or both.
  bool content_on_span = true;
  bool content_on_event = false;
  // The agent's own request log lines for this exchange (the engine's log_requests key) and
  // whether they carry the trace context (log_trace_context), decided when it arrived.
  bool log_requests = false;
  bool log_trace_context = false;

  // Engine-span inputs decided when the request arrived (a live change applies to new
  // requests only).
  // The engine's tracing level: otel.instrumentation.vllm.tracing.level (vLLM) or
  // otel.instrumentation.sglang.tracing.level (SGLang).
  int tracing_level = 1;
  std::string pd_role = "none";
  std::optional<std::int64_t> engine_index;  // EngineCore index, when known
  // Level 2: token detail of each stream delta, bounded by OTEL_SPAN_EVENT_COUNT_LIMIT.
  struct Delta {
    std::uint64_t mono_ns = 0;
    std::vector<std::string> texts;
    std::vector<double> logprobs;
    std::vector<std::int64_t> ids;
    // Tokens in the delta: the token detail's count, or, when the engine sent none (no
    // logprobs), one per choice that carried content, with its content as `texts`
    // (texts_derived).
    std::int64_t token_count = 0;
    bool texts_derived = false;
  };
  std::vector<Delta> deltas;
  std::size_t deltas_dropped = 0;  // deltas beyond the bound
  bool logprobs_forced = false;    // the gateway asked the engine for logprobs
};

// The model an exchange is measured and judged under: the engine's answer, else the client's
// request (empty when neither names one).
inline std::string_view ModelOf(const Exchange& ex) {
  return ex.response.model  ? std::string_view(*ex.response.model)
         : ex.request.model ? std::string_view(*ex.request.model)
                            : std::string_view();
}

// Receives exchanges. Called on a gateway worker thread: must not block.
class ExchangeListener {
 public:
  virtual ~ExchangeListener() = default;
  // The request was read and parsed and has its trace ids and request id; nothing was sent
  // to the engine yet. Response fields are empty.
  virtual void OnExchangeStarted(const Exchange& exchange) noexcept {}
  // The request was written to the engine in full (once per exchange, also after a retry on
  // a fresh connection).
  virtual void OnExchangeDispatched(const Exchange& exchange) noexcept {}
  // The exchange ended (answered, aborted, failed or refused).
  virtual void OnExchangeFinished(const Exchange& exchange) noexcept = 0;
};

}  // namespace infertel::openai
