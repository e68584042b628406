#include "config/keys.h"

#include <array>

namespace infertel::config {
namespace {

using enum ValueType;
using enum Apply;

constexpr std::array<KeySpec, kKeyCount> kTable{{
    {Key::kVllmEnabled,
     "otel.instrumentation.vllm.enabled",
     "OTEL_INSTRUMENTATION_VLLM_ENABLED",
     kBool,
     "true",
     kRestart,
     Engine::kVllm,
     0,
     0,
     {},
     false,
     "C1",
     "vLLM plugin on/off. Off: no traces and no metrics for vLLM upstreams; the gateway only "
     "forwards."},
    {Key::kSglangEnabled,
     "otel.instrumentation.sglang.enabled",
     "SGLANG_INSTRUMENTATION_ENABLED",
     kBool,
     "true",
     kRestart,
     Engine::kSglang,
     0,
     0,
     {},
     false,
     "C1",
     "SGLang plugin on/off. Off: no traces and no metrics for SGLang upstreams; the gateway only "
     "forwards."},
    {Key::kCaptureMessageContent,
     "otel.instrumentation.genai.capture-message-content",
     "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
     kBool,
     "true",
     kLive,
     Engine::kAny,
     0,
     0,
     {},
     false,
     "C2",
     "Capture input and output content (gen_ai.input.messages / gen_ai.output.messages)."},
    {Key::kMessageContentMaxLength,
     "otel.instrumentation.genai.message-content.max-length",
     "OTEL_INSTRUMENTATION_GENAI_MESSAGE_CONTENT_MAX_LENGTH",
     kInt,
     "8192",
     kLive,
     Engine::kAny,
     1,
     16 * 1024 * 1024,
     {},
     false,
     "C2",
     "Content length limit in characters; each longer content item is truncated."},
    {Key::kMessageContentCaptureStrategy,
     "otel.instrumentation.genai.message-content.capture-strategy",
     "OTEL_INSTRUMENTATION_GENAI_MESSAGE_CONTENT_CAPTURE_STRATEGY", kEnum, "span", kLive,
     Engine::kAny, 0, 0, "span|event|span_and_event", false, "C2",
     "Where captured content goes: span attributes (span), a "
     "gen_ai.client.inference.operation.details log event (event), or both. Also accepts "
     "SPAN_ONLY, EVENT_ONLY, SPAN_AND_EVENT."},
    {Key::kCaptureMultimodal,
     "infertel.genai.capture-multimodal",
     "INFERTEL_GENAI_CAPTURE_MULTIMODAL",
     kBool,
     "false",
     kLive,
     Engine::kAny,
     0,
     0,
     {},
     false,
     "infertel",
     "Record image and audio parts as references (URI, or mime type, size and hash of inline "
     "data). The spec names no key for this switch (C2: client frameworks only), so this one is "
     "infertel's own."},
    {Key::kVllmMetricsEnabled,
     "otel.instrumentation.vllm.metrics.enabled",
     "OTEL_INSTRUMENTATION_VLLM_METRICS_ENABLED",
     kBool,
     "true",
     kLive,
     Engine::kVllm,
     0,
     0,
     {},
     false,
     "C3",
     "Collect and report vLLM metrics (infertel's own reporting only)."},
    {Key::kVllmTracingLevel,
     "otel.instrumentation.vllm.tracing.level",
     "OTEL_INSTRUMENTATION_VLLM_TRACING_LEVEL",
     kInt,
     "1",
     kLive,
     Engine::kVllm,
     0,
     2,
     {},
     false,
     "C3",
     "0: llm_request only; 1: + wait/prefill/decode/kv_transfer; 2: + per-iteration events with "
     "token detail (forces logprobs upstream)."},
    {Key::kVllmLogRequests,
     "apsara.apm.inference.vllm.log_requests.enabled",
     "",
     kBool,
     "",
     kLive,
     Engine::kVllm,
     0,
     0,
     {},
     true,
     "C3",
     "Request logs: received, added, aborted, failed (engine default off)."},
    {Key::kVllmLogIterationDetails,
     "apsara.apm.inference.vllm.log_iteration_details.enabled",
     "",
     kBool,
     "",
     kLive,
     Engine::kVllm,
     0,
     0,
     {},
     true,
     "C3",
     "Per-iteration detail logs (engine default off)."},
    {Key::kVllmLogTraceContext,
     "apsara.apm.inference.vllm.log_trace_context.enabled",
     "",
     kBool,
     "false",
     kLive,
     Engine::kVllm,
     0,
     0,
     {},
     true,
     "C3",
     "Inject TraceId and SpanId into log line prefixes."},
    {Key::kVllmLoggingLevel, "apsara.apm.inference.vllm.logging.level", "", kEnum, "", kLive,
     Engine::kVllm, 0, 0, "DEBUG|INFO|WARNING|ERROR|CRITICAL", true, "C3",
     "Log level (engine default INFO)."},
    {Key::kSglangMetricsEnabled,
     "otel.instrumentation.sglang.metrics.enabled",
     "OTEL_INSTRUMENTATION_SGLANG_METRICS_ENABLED",
     kBool,
     "true",
     kLive,
     Engine::kSglang,
     0,
     0,
     {},
     false,
     "C4",
     "Collect and report SGLang metrics, request-level metrics included without --enable-metrics "
     "(infertel's own reporting only)."},
    {Key::kSglangTracingLevel,
     "otel.instrumentation.sglang.tracing.level",
     "",
     kInt,
     "3",
     kLive,
     Engine::kSglang,
     0,
     4,
     {},
     true,
     "C4",
     "Depth of SGLang's native span tree (0 off, 1 important stages, 2 all but nested, 3 all, 4 "
     "+ run_batch_cpu); new requests only."},
    {Key::kSglangLogRequests,
     "apsara.apm.inference.sglang.log_requests.enabled",
     "",
     kBool,
     "",
     kLive,
     Engine::kSglang,
     0,
     0,
     {},
     true,
     "C4",
     "TokenizerManager request logs (engine default off)."},
    {Key::kSglangLogRequestsLevel,
     "apsara.apm.inference.sglang.log_requests.level",
     "",
     kInt,
     "",
     kLive,
     Engine::kSglang,
     0,
     3,
     {},
     true,
     "C4",
     "Request log detail, higher is more (engine default 2)."},
    {Key::kSglangLoggingLevel, "apsara.apm.inference.sglang.logging.level", "", kEnum, "", kLive,
     Engine::kSglang, 0, 0, "DEBUG|INFO|WARNING|ERROR|CRITICAL", true, "C4",
     "Level of the `sglang` logger (engine default INFO)."},
    {Key::kUpstreamConnectTimeoutMs, "infertel.upstream.connect-timeout-ms",
     "INFERTEL_UPSTREAM_CONNECT_TIMEOUT_MS", kInt, "10000", kLive, Engine::kAny, 1,
     24 * 3600 * 1000, {}, false, "infertel",
     "Milliseconds to open a connection to the engine. On expiry the client gets a 504 in "
     "OpenAI's error shape and the entry span an ERROR status."},
    {Key::kUpstreamFirstByteTimeoutMs, "infertel.upstream.first-byte-timeout-ms",
     "INFERTEL_UPSTREAM_FIRST_BYTE_TIMEOUT_MS", kInt, "600000", kLive, Engine::kAny, 1,
     24 * 3600 * 1000, {}, false, "infertel",
     "Milliseconds from the request sent to the engine's first answer: its response header, and "
     "for a stream its first event (engines send a stream's header before the request leaves "
     "their queue). Long: a request may wait minutes in the queue. On expiry: 504 in OpenAI's "
     "error shape (an SSE error event once a stream's header went out), ERROR span."},
    {Key::kUpstreamIdleTimeoutMs, "infertel.upstream.idle-timeout-ms",
     "INFERTEL_UPSTREAM_IDLE_TIMEOUT_MS", kInt, "300000", kLive, Engine::kAny, 1,
     24 * 3600 * 1000, {}, false, "infertel",
     "Milliseconds the engine may stay silent between two pieces of a response body or stream, "
     "once it began. On expiry a stream ends with an SSE error event and [DONE], a body not yet "
     "sent gets a 504; ERROR span."},
    {Key::kDrainTimeoutMs, "infertel.shutdown.drain-timeout-ms", "INFERTEL_DRAIN_TIMEOUT_MS",
     kInt, "30000", kLive, Engine::kAny, 0, 24 * 3600 * 1000, {}, false, "infertel",
     "On SIGTERM or SIGINT: milliseconds in-flight requests may take to finish after the agent "
     "stops accepting, before they are cut; then every exporter is flushed."},
}};

constexpr bool TableInOrder() {
  for (std::size_t i = 0; i < kTable.size(); ++i)
    if (static_cast<std::size_t>(kTable[i].key) != i) return false;
  return true;
}
static_assert(TableInOrder(), "kTable rows must follow the order of enum Key");

}  // namespace

std::span<const KeySpec> AllKeys() { return kTable; }
const KeySpec& Spec(Key key) { return kTable[static_cast<std::size_t>(key)]; }

std::optional<Key> FindByConsoleKey(std::string_view console_key) {
  for (const auto& s : kTable)
    if (s.console_key == console_key) return s.key;
  return std::nullopt;
}

std::string_view EngineName(Engine e) {
  switch (e) {
    case Engine::kVllm:
      return "vllm";
    case Engine::kSglang:
      return "sglang";
    case Engine::kAny:
      break;
  }
  return "any";
}

}  // namespace infertel::config
