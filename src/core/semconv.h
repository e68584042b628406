#pragma once
// Every span name and attribute key of the telemetry model (spec M1-M5), character for
// character, in one place. Code refers to these constants, never to string literals.

#include <string_view>

namespace infertel::semconv {

// ---- M1: span kinds the agent sets on its own spans (gen_ai.span.kind).
inline constexpr std::string_view kSpanKindLlm = "LLM";
inline constexpr std::string_view kSpanKindEmbedding = "EMBEDDING";
inline constexpr std::string_view kSpanKindReranker = "RERANKER";

// ---- M2: operation names; the entry span is named "{operation} {model}".
inline constexpr std::string_view kOpChat = "chat";
inline constexpr std::string_view kOpTextCompletion = "text_completion";
inline constexpr std::string_view kOpEmbeddings = "embeddings";
inline constexpr std::string_view kOpRerank = "rerank";

// ---- M2: vLLM engine span names.
inline constexpr std::string_view kSpanLlmRequest = "llm_request";
inline constexpr std::string_view kSpanWait = "wait";
inline constexpr std::string_view kSpanKvTransfer = "kv_transfer";
inline constexpr std::string_view kSpanPrefill = "prefill";
inline constexpr std::string_view kSpanDecode = "decode";

// ---- M2.1 / M4.1: entry span attributes.
inline constexpr std::string_view kGenAiSpanKind = "gen_ai.span.kind";
inline constexpr std::string_view kGenAiOperationName = "gen_ai.operation.name";
inline constexpr std::string_view kGenAiRequestModel = "gen_ai.request.model";
inline constexpr std::string_view kGenAiRequestChoiceCount = "gen_ai.request.choice.count";
inline constexpr std::string_view kGenAiRequestTemperature = "gen_ai.request.temperature";
inline constexpr std::string_view kGenAiRequestTopP = "gen_ai.request.top_p";
inline constexpr std::string_view kGenAiRequestTopK = "gen_ai.request.top_k";
inline constexpr std::string_view kGenAiRequestMaxTokens = "gen_ai.request.max_tokens";
inline constexpr std::string_view kGenAiRequestIsStream = "gen_ai.request.is_stream";
inline constexpr std::string_view kGenAiUserId = "gen_ai.user.id";
inline constexpr std::string_view kSessionId = "session.id";
inline constexpr std::string_view kGenAiResponseId = "gen_ai.response.id";
inline constexpr std::string_view kGenAiResponseModel = "gen_ai.response.model";
inline constexpr std::string_view kGenAiResponseFinishReasons = "gen_ai.response.finish_reasons";
inline constexpr std::string_view kGenAiUsageInputTokens = "gen_ai.usage.input_tokens";
inline constexpr std::string_view kGenAiUsageOutputTokens = "gen_ai.usage.output_tokens";
inline constexpr std::string_view kGenAiUsageTotalTokens = "gen_ai.usage.total_tokens";
inline constexpr std::string_view kGenAiInputMessages = "gen_ai.input.messages";
inline constexpr std::string_view kGenAiOutputMessages = "gen_ai.output.messages";
inline constexpr std::string_view kErrorType = "error.type";

// M4.1 (SGLang entry span) additions.
inline constexpr std::string_view kGenAiRequestId = "gen_ai.request.id";
inline constexpr std::string_view kGenAiUsageCacheReadInputTokens =
    "gen_ai.usage.cache_read.input_tokens";
inline constexpr std::string_view kGenAiLatencyE2e = "gen_ai.latency.e2e";
inline constexpr std::string_view kGenAiResponseTokensStreamed = "gen_ai.response.tokens_streamed";
inline constexpr std::string_view kGenAiRequestHasToolCalls = "gen_ai.request.has_tool_calls";
inline constexpr std::string_view kGenAiRequestToolCallDetected =
    "gen_ai.request.tool_call_detected";
inline constexpr std::string_view kGenAiRequestToolCallsCount = "gen_ai.request.tool_calls_count";
// gen_ai.completions.{i}.tool_calls.{j}.name / .arguments
inline constexpr std::string_view kGenAiCompletionsPrefix = "gen_ai.completions.";
inline constexpr std::string_view kToolCallsInfix = ".tool_calls.";
inline constexpr std::string_view kToolCallNameSuffix = ".name";
inline constexpr std::string_view kToolCallArgumentsSuffix = ".arguments";

// ---- M2.2 / M2.3: llm_request attributes.
inline constexpr std::string_view kGenAiRequestModelName = "gen_ai.request.model_name";
inline constexpr std::string_view kGenAiRequestN = "gen_ai.request.n";
inline constexpr std::string_view kGenAiUsageNumSequences = "gen_ai.usage.num_sequences";
inline constexpr std::string_view kGenAiUsagePromptTokens = "gen_ai.usage.prompt_tokens";
inline constexpr std::string_view kGenAiUsageCompletionTokens = "gen_ai.usage.completion_tokens";
inline constexpr std::string_view kGenAiLatencyTimeInQueue = "gen_ai.latency.time_in_queue";
inline constexpr std::string_view kGenAiLatencyTimeToFirstToken =
    "gen_ai.latency.time_to_first_token";
inline constexpr std::string_view kGenAiLatencyTimeInScheduler = "gen_ai.latency.time_in_scheduler";
inline constexpr std::string_view kGenAiLatencyTimeInModelForward =
    "gen_ai.latency.time_in_model_forward";
inline constexpr std::string_view kGenAiLatencyTimeInModelExecute =
    "gen_ai.latency.time_in_model_execute";
inline constexpr std::string_view kGenAiLatencyTimeInModelPrefill =
    "gen_ai.latency.time_in_model_prefill";
inline constexpr std::string_view kGenAiLatencyTimeInModelDecode =
    "gen_ai.latency.time_in_model_decode";
inline constexpr std::string_view kGenAiLatencyTimeInModelInference =
    "gen_ai.latency.time_in_model_inference";
inline constexpr std::string_view kGenAiLatencyTimeInTokenize = "gen_ai.latency.time_in_tokenize";
inline constexpr std::string_view kGenAiLatencyTimeInDetokenize =
    "gen_ai.latency.time_in_detokenize";
inline constexpr std::string_view kGenAiLatencyTimeInKvTransfer =
    "gen_ai.latency.time_in_kv_transfer";
inline constexpr std::string_view kGenAiRequestPreemptionCount = "gen_ai.request.preemption_count";
inline constexpr std::string_view kGenAiEngineIndex = "gen_ai.engine.index";
inline constexpr std::string_view kGenAiPdRole = "gen_ai.pd_role";

// ---- M2.4: kv_transfer attributes.
inline constexpr std::string_view kGenAiKvTransferDirection = "gen_ai.kv_transfer.direction";
inline constexpr std::string_view kGenAiKvTransferCachedTokens = "gen_ai.kv_transfer.cached_tokens";
inline constexpr std::string_view kGenAiKvTransferFailed = "gen_ai.kv_transfer.failed";

// ---- M2.5: llm_request events (level 2) and their attributes.
inline constexpr std::string_view kEventWait = "WAIT";
inline constexpr std::string_view kEventPrefill = "PREFILL";
inline constexpr std::string_view kEventDecode = "DECODE";
inline constexpr std::string_view kEventPreempted = "PREEMPTED";
inline constexpr std::string_view kGenAiTokenIds = "gen_ai.token.ids";
inline constexpr std::string_view kGenAiTokenTexts = "gen_ai.token.texts";
inline constexpr std::string_view kGenAiTokenCount = "gen_ai.token.count";
inline constexpr std::string_view kGenAiTokenLogprobs = "gen_ai.token.logprobs";

// ---- M4.3: SGLang request and thread span attributes (as SGLang names them).
inline constexpr std::string_view kSglRid = "rid";
inline constexpr std::string_view kSglModule = "module";
inline constexpr std::string_view kSglBootstrapRoom = "bootstrap_room";
inline constexpr std::string_view kGenAiUsageCachedTokens = "gen_ai.usage.cached_tokens";
inline constexpr std::string_view kSglHostId = "host_id";
inline constexpr std::string_view kSglPid = "pid";
inline constexpr std::string_view kSglThreadLabel = "thread_label";
inline constexpr std::string_view kSglTpRank = "tp_rank";
inline constexpr std::string_view kSglPpRank = "pp_rank";
inline constexpr std::string_view kSglDpRank = "dp_rank";

// ---- GenAI log event for content capture with strategy `event`.
inline constexpr std::string_view kEventInferenceOperationDetails =
    "gen_ai.client.inference.operation.details";

// ---- Resource attributes.
inline constexpr std::string_view kServiceName = "service.name";
inline constexpr std::string_view kTelemetrySdkName = "telemetry.sdk.name";

// infertel's own attribute (not in the spec): why an entry span has less detail than usual.
inline constexpr std::string_view kInfertelParseError = "infertel.request.parse_error";

// The instrumentation scope of spans the agent makes itself.
inline constexpr std::string_view kAgentScopeName = "infertel";

}  // namespace infertel::semconv
