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
// error.type values the gateway sets for failures on the engine's side (docs/operations.md).
inline constexpr std::string_view kErrorTimeout = "timeout";
inline constexpr std::string_view kErrorUpstreamConnection = "upstream_connection_error";
inline constexpr std::string_view kErrorUpstreamClosed = "upstream_closed";
// The engine answered outside HTTP: a status outside 100–599, a framing error (client: 502), or
// a 2xx body that is not JSON on a JSON endpoint (client: the body as it came).
inline constexpr std::string_view kErrorUpstreamInvalidStatus = "upstream_invalid_status";
inline constexpr std::string_view kErrorUpstreamMalformed = "upstream_malformed_response";
inline constexpr std::string_view kErrorUpstreamInvalidJson = "upstream_invalid_json";
// A stream that ended (its [DONE], or the engine's end of the body) with a choice that never
// got a finish_reason: cut short.
inline constexpr std::string_view kErrorStreamUnfinished = "stream_unfinished";

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
// infertel's own (not in the spec): on each level-2 event, which of its fields the engine's
// own data gave (measured) and which the agent worked out from what the gateway saw (derived):
// the event's time is always derived (when the gateway saw the dispatch, the first token, the
// delta, not when the engine's iteration ran); token texts and count are measured from the
// engine's token detail (logprobs) and derived from the delta's content without it.
inline constexpr std::string_view kInfertelEventMeasured = "infertel.event.measured";
inline constexpr std::string_view kInfertelEventDerived = "infertel.event.derived";
inline constexpr std::string_view kEventFieldTime = "time";

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

// ---- M4.4: SGLang stage spans (RequestStage names), their attributes and events.
inline constexpr std::string_view kSglStageTokenize = "tokenize";
inline constexpr std::string_view kSglStageApiServerDispatch = "api_server_dispatch";
inline constexpr std::string_view kSglStageDispatchOld = "dispatch";  // before the rename
inline constexpr std::string_view kSglStageDpcDispatch = "dpc_dispatch";
inline constexpr std::string_view kSglStageRequestProcess = "request_process";
inline constexpr std::string_view kSglStagePrefillWaiting = "prefill_waiting";
inline constexpr std::string_view kSglStagePrefillForward = "prefill_forward";
inline constexpr std::string_view kSglStageChunkedPrefill = "chunked_prefill";
inline constexpr std::string_view kSglStageDecodeWaiting = "decode_waiting";
inline constexpr std::string_view kSglStageDecodeForward = "decode_forward";
inline constexpr std::string_view kSglStageDecodeLoop = "decode_loop";
inline constexpr std::string_view kSglStageSpecDraft = "spec_draft";
inline constexpr std::string_view kSglStageSpecVerify = "spec_verify";
inline constexpr std::string_view kSglStageSpecDraftExtend = "spec_draft_extend";
inline constexpr std::string_view kSglStageRunBatchCpu = "run_batch_cpu";
inline constexpr std::string_view kSglStagePrefillPrepare = "prefill_prepare";
inline constexpr std::string_view kSglStagePrefillBootstrap = "prefill_bootstrap";
inline constexpr std::string_view kSglStagePrefillTransferKvCache = "prefill_transfer_kv_cache";
inline constexpr std::string_view kSglStageDecodePrepare = "decode_prepare";
inline constexpr std::string_view kSglStageDecodeBootstrap = "decode_bootstrap";
inline constexpr std::string_view kSglStageDecodeTransferred = "decode_transferred";
inline constexpr std::string_view kSglStageFakeOutput = "fake_output";
inline constexpr std::string_view kSglStageQuickFinish = "quick_finish";
inline constexpr std::string_view kSglDecodeCt = "decode_ct";
inline constexpr std::string_view kSglNumCorrectDrafts = "num_correct_drafts";
inline constexpr std::string_view kSglAcceptedTokens = "accepted_tokens";
inline constexpr std::string_view kSglPpMbId = "pp_mb_id";
inline constexpr std::string_view kSglEventRetract = "retract";
inline constexpr std::string_view kSglEventSchedule = "schedule";
inline constexpr std::string_view kSglBid = "bid";
inline constexpr std::string_view kSglBatchSize = "batch_size";
inline constexpr std::string_view kSglForwardMode = "forward_mode";
// SGLang's request and thread span names: "{role} Req {rid[:8]}", "Bootstrap Room 0x…".
inline constexpr std::string_view kSglReqSpanInfix = " Req ";
inline constexpr std::string_view kSglBootstrapRoomSpanPrefix = "Bootstrap Room ";

// ---- M4: how the agent recognises SGLang's native spans (engines/sglang/sglang_spans.cc,
// which also holds the scope, service and module names SGLang's server uses): the request
// span's name marker, the PD roles, the thread span's host suffix; and older stage names.
inline constexpr std::string_view kSglReqMarker = "Req ";
inline constexpr std::string_view kSglRolePrefill = "prefill";
inline constexpr std::string_view kSglRoleDecode = "decode";
inline constexpr std::string_view kSglHostMarker = "(host:";
inline constexpr std::string_view kSglStageDcDispatchOld = "dc_dispatch";    // before the rename
inline constexpr std::string_view kSglStageMiniLbLaunch = "mini_lb_launch";  // older releases
inline constexpr std::string_view kSglStageWaitPdFinish = "wait_pd_finish";  // older releases

// infertel's own (not in the spec): on the resource of SGLang's native spans, which carry the
// agent's resource, the service.name the engine gave itself; on the PD link infertel adds
// between a prefill and a decode request span, the role of the span linked to.
inline constexpr std::string_view kInfertelEngineServiceName = "infertel.engine.service.name";
inline constexpr std::string_view kInfertelPdPeerRole = "infertel.pd.peer_role";

// ---- GenAI log event for content capture with strategy `event`.
inline constexpr std::string_view kEventInferenceOperationDetails =
    "gen_ai.client.inference.operation.details";
// The log attribute naming an event, for OTLP versions whose LogRecord has no event_name.
inline constexpr std::string_view kEventName = "event.name";
// GenAI-convention attributes the event carries beside the entry span's (structured on events).
inline constexpr std::string_view kGenAiRequestStream = "gen_ai.request.stream";
inline constexpr std::string_view kGenAiResponseTimeToFirstChunk =
    "gen_ai.response.time_to_first_chunk";

// ---- The latest OpenTelemetry GenAI conventions (OTEL_SEMCONV_STABILITY_OPT_IN,
// core/genai_dialect.h): the switch's values, the names the telemetry model spells differently
// (read from the conventions' text; docs/telemetry-reference.md, "GenAI conventions"), and their
// metrics.
inline constexpr std::string_view kOptInGenAiLatest = "gen_ai_latest_experimental";
inline constexpr std::string_view kOptInGenAiLatestDup = "gen_ai_latest_experimental/dup";
inline constexpr std::string_view kGenAiProviderName = "gen_ai.provider.name";
inline constexpr std::string_view kGenAiSystem = "gen_ai.system";  // its name before v1.37
inline constexpr std::string_view kGenAiUsageCacheCreationInputTokens =
    "gen_ai.usage.cache_creation.input_tokens";
inline constexpr std::string_view kGenAiUsageCacheWriteInputTokens =
    "gen_ai.usage.cache_write.input_tokens";
inline constexpr std::string_view kGenAiTokenType = "gen_ai.token.type";
inline constexpr std::string_view kTokenTypeInput = "input";
inline constexpr std::string_view kTokenTypeOutput = "output";
inline constexpr std::string_view kMetricClientTokenUsage = "gen_ai.client.token.usage";
inline constexpr std::string_view kMetricClientOperationDuration =
    "gen_ai.client.operation.duration";
inline constexpr std::string_view kMetricServerRequestDuration = "gen_ai.server.request.duration";
inline constexpr std::string_view kMetricServerTimeToFirstToken =
    "gen_ai.server.time_to_first_token";
inline constexpr std::string_view kMetricServerTimePerOutputToken =
    "gen_ai.server.time_per_output_token";

// ---- Resource attributes.
inline constexpr std::string_view kServiceName = "service.name";
inline constexpr std::string_view kTelemetrySdkName = "telemetry.sdk.name";

// infertel's own attribute (not in the spec): why an entry span has less detail than usual.
inline constexpr std::string_view kInfertelParseError = "infertel.request.parse_error";
// infertel's own attribute: the usage fields the engine sent that were not token counts
// (negative, fractional, above 2^53), comma-separated; their gen_ai.usage.* are left out.
inline constexpr std::string_view kInfertelInvalidUsage = "infertel.response.invalid_usage";
// infertel's own (not in the spec): on a received span whose times, kind or status the receiver
// set right, the reasons, comma-separated (receiver/ingest.h NormalizeSpans).
inline constexpr std::string_view kInfertelNormalized = "infertel.normalized";
// infertel's own (not in the spec): on an engine span joined to its exchange whose clock was
// evidently off (it started before the gateway sent the request, or ended after the gateway had
// the whole response), the nanoseconds its times were moved by to the gateway's clock.
inline constexpr std::string_view kInfertelClockCorrection = "infertel.clock.correction_ns";
// ---- infertel's own (not in the spec): tenants, latency objectives and latency causes
// (docs/telemetry-reference.md, "infertel's additions"; src/analytics/).
// The tenant a request was attributed to (INFERTEL_TENANT_FROM), on the entry span and on the
// engine spans of the same request.
inline constexpr std::string_view kInfertelTenant = "infertel.tenant";
// The request's verdict against its objectives (INFERTEL_SLO_*): whether it met every one that
// applied, and which it missed (a string array of the kSloObjective* names).
inline constexpr std::string_view kInfertelSloMet = "infertel.slo.met";
inline constexpr std::string_view kInfertelSloMissed = "infertel.slo.missed";
inline constexpr std::string_view kSloObjectiveTtft = "ttft";
inline constexpr std::string_view kSloObjectiveTpot = "tpot";
inline constexpr std::string_view kSloObjectiveE2e = "e2e";
inline constexpr std::string_view kSloObjectiveError = "error";
// Why a request was slow: the main cause, one of the kLatencyCause* values, and its evidence.
inline constexpr std::string_view kInfertelLatencyCause = "infertel.latency.cause";
inline constexpr std::string_view kLatencyCauseQueue = "queue";
inline constexpr std::string_view kLatencyCauseLongPrompt = "long_prompt";
inline constexpr std::string_view kLatencyCausePrefixCacheMiss = "prefix_cache_miss";
inline constexpr std::string_view kLatencyCauseInterference = "interference";
inline constexpr std::string_view kLatencyCausePreemption = "preemption";
inline constexpr std::string_view kLatencyCauseLongOutput = "long_output";
inline constexpr std::string_view kLatencyCauseClient = "client";
inline constexpr std::string_view kLatencyCauseGateway = "gateway";
inline constexpr std::string_view kLatencyCauseEngineError = "engine_error";
inline constexpr std::string_view kInfertelCacheHitRatio = "infertel.cache.hit_ratio";
inline constexpr std::string_view kInfertelInterferencePrefillTokens =
    "infertel.interference.prefill_tokens";
// The rest of a cause's evidence (analytics/latency_cause.h): the gateway's own time (request
// read → written to the engine) and the time it waited for the client to take the response, in
// seconds; the requests of the same engine still waiting when this one was queued; the
// engine's preemptions of the request, where the engine reports them per request.
inline constexpr std::string_view kInfertelLatencyGateway = "infertel.latency.gateway";
inline constexpr std::string_view kInfertelLatencyClient = "infertel.latency.client";
inline constexpr std::string_view kInfertelQueueRequestsAhead = "infertel.queue.requests_ahead";
inline constexpr std::string_view kInfertelPreemptions = "infertel.preemptions";

// error.type of a request cut because the agent's drain timeout ran out during a graceful stop.
inline constexpr std::string_view kErrorShutdown = "shutdown";

// The instrumentation scope of spans the agent makes itself.
inline constexpr std::string_view kAgentScopeName = "infertel";

}  // namespace infertel::semconv
