#pragma once
// What the gateway learns from OpenAI-compatible traffic, without changing it: the request
// (operation, model, sampling parameters, content), the response or the SSE stream (ids,
// finish reasons, usage, content, tool calls), and the few rewrites the gateway makes for
// its own needs (asking for usage or logprobs) together with their exact undoing.
//
// Pure functions and per-request objects: no I/O, no globals, safe on any thread.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace simdjson::dom {
class array;
class object;
}  // namespace simdjson::dom

namespace infertel::openai {

enum class Operation { kNone, kChat, kTextCompletion, kEmbeddings, kRerank };

// Which operation a request path is: /v1/chat/completions → kChat, /v1/completions →
// kTextCompletion, /v1/embeddings → kEmbeddings, /v1/rerank, /rerank, /v2/rerank, /v1/score,
// /score → kRerank; anything else kNone (forwarded, not observed). Only POST is observed.
// A query string is ignored.
Operation OperationForPath(std::string_view method, std::string_view target);
std::string_view OperationName(Operation op);  // chat | text_completion | embeddings | rerank
std::string_view SpanKindFor(Operation op);    // LLM | EMBEDDING | RERANKER

// Ids, model names, roles, finish reasons and tool names are identifiers, not content: the
// content length limit does not apply to them, only this sanity bound.
inline constexpr std::size_t kMaxIdentifierChars = 1024;

struct CaptureOptions {
  bool capture_content = true;      // build input/output messages at all
  std::size_t max_length = 8192;    // per content item, in characters (UTF-8 code points)
  bool capture_multimodal = false;  // media parts as references instead of placeholders
};

struct ToolCall {
  std::string id, name, arguments;
};

struct RequestInfo {
  Operation op = Operation::kNone;
  bool parsed = false;      // false: body was not a JSON object; see parse_error
  std::string parse_error;  // why there is less detail (goes on the span as error text)

  std::optional<std::string> model;
  std::optional<std::int64_t> n;
  std::optional<double> temperature, top_p;
  std::optional<std::int64_t> top_k;
  std::optional<std::int64_t> max_tokens;  // max_tokens, else max_completion_tokens
  bool stream = false;
  std::optional<std::string> user;
  bool include_usage = false;           // stream_options.include_usage as the client sent it
  bool continuous_usage_stats = false;  // stream_options.continuous_usage_stats as sent
  bool has_stream_options = false;
  bool logprobs = false;                        // chat: logprobs true; completions: logprobs >= 0
  bool has_tools = false;                       // non-empty `tools`
  std::optional<std::string> request_id;        // body `request_id` (vLLM) or `rid` (SGLang)
  std::optional<std::int64_t> stream_interval;  // SGLang per-request stream_interval

  // GenAI-convention JSON (an array of {role, parts:[...]}) of the input, content items
  // truncated to max_length; empty when capture is off or nothing could be read.
  std::string input_messages_json;
};

RequestInfo ParseRequest(Operation op, std::string_view body, const CaptureOptions& capture);

// The gateway's upstream rewrites. Each returns the new body, or nullopt when nothing needs
// to change. The JSON stays otherwise identical; added keys override the client's because
// the engines (Python json/pydantic) keep the last of duplicate keys.
struct RewriteOptions {
  bool force_include_usage = false;  // streaming: ask for the final usage chunk
  bool force_logprobs = false;       // level 2: ask for token logprobs
};
std::optional<std::string> RewriteRequest(const RequestInfo& info, std::string_view body,
                                          const RewriteOptions& options);

// The largest token count taken from an engine: 2^53, the largest integer every JSON reader
// (and a double-valued metric) holds exactly. No request comes near it.
inline constexpr std::int64_t kMaxTokenCount = std::int64_t{1} << 53;

struct Usage {
  // Only token counts: integers in [0, kMaxTokenCount]. Anything else the engine sent in their
  // place is left unset and named in `invalid`.
  std::optional<std::int64_t> input_tokens, output_tokens, total_tokens, cached_tokens;
  // The usage fields the engine sent that were not token counts (negative, fractional, above
  // kMaxTokenCount, not a number), comma-separated by their OpenAI names, e.g.
  // "prompt_tokens,total_tokens"; empty when every count was good.
  std::string invalid;
};

struct ResponseInfo {
  bool parsed = false;      // false: the body was not a JSON object (see parse_error)
  std::string parse_error;  // why there is less detail
  std::optional<std::string> id;
  std::optional<std::string> model;
  std::vector<std::string> finish_reasons;  // of the choices that gave one, in index order
  // Choices of a stream that ended without a finish_reason (cut short): absent from
  // finish_reasons, "error" in the output messages, and the exchange an error.
  std::size_t unfinished_choices = 0;
  Usage usage;
  std::string output_messages_json;  // GenAI output messages, one per choice (with finish_reason)
  // Tool calls per choice index (chat): outer index = choice index.
  std::vector<std::vector<ToolCall>> tool_calls;
  // Error body of the engine ({"error": {...}} or {"object":"error", ...}): its type/code.
  std::optional<std::string> error_type;
  std::optional<std::string> error_message;
};

// Parses a non-streaming response body (any operation, or an error body). Tool-call
// arguments and output messages are kept only when capture.capture_content.
ResponseInfo ParseResponse(Operation op, std::string_view body, const CaptureOptions& capture);

// Undoes RewriteRequest's force_logprobs on a non-streaming chat/completions response: every
// choice's `logprobs` becomes null (what the engine returns when none were asked for), all
// other bytes unchanged. nullopt when nothing changes or the body is not a JSON object.
std::optional<std::string> StripInjectedLogprobs(std::string_view body);

// One SSE stream, fed event by event. It accumulates a ResponseInfo and decides what the
// client receives for each event: the bytes unchanged, nothing (a usage chunk only the
// gateway asked for), or a rewritten data payload (usage or logprobs the client did not ask
// for removed).
class StreamObserver {
 public:
  struct Options {
    CaptureOptions capture;
    bool drop_injected_usage = false;      // the gateway added include_usage; client did not ask
    bool strip_injected_logprobs = false;  // the gateway added logprobs; client did not ask
  };
  enum class Verdict { kForward, kDrop, kRewrite };

  StreamObserver(Operation op, Options options);

  // `data` is the payload of one `data:` field (without the "data:" prefix and the leading
  // space), e.g. a JSON chunk or "[DONE]". When the verdict is kRewrite, *rewritten holds
  // the new payload.
  Verdict OnData(std::string_view data, std::string* rewritten);

  // Number of data events carrying a content, reasoning or tool-call delta (the spec's
  // "stream deltas"), and whether the first such delta has been seen.
  std::int64_t delta_count() const { return delta_count_; }
  bool saw_first_token() const { return delta_count_ > 0; }
  bool saw_done() const { return saw_done_; }
  // Per-event token detail for level-2 events: texts, logprobs and token ids of the last
  // event passed to OnData (cleared at each call).
  struct TokenDetail {
    std::vector<std::string> texts;  // from the logprobs' token detail
    std::vector<double> logprobs;
    std::vector<std::int64_t> ids;
    // The content the event's choices carried (chat content, completion text), each cut to the
    // content length limit, when content capture is on; and how many choices carried content
    // (whether or not captured). What stands in for the token detail when the engine sent none.
    std::vector<std::string> content;
    std::int64_t content_pieces = 0;
  };
  const TokenDetail& last_tokens() const { return last_tokens_; }

  // Builds the final ResponseInfo (output messages, tool calls, finish reasons, usage).
  ResponseInfo Finish();

 private:
  struct Choice {
    std::string role;
    std::string text;
    std::string reasoning;
    std::string finish_reason;
    std::vector<ToolCall> tool_calls;
    std::vector<std::size_t> argument_chars;  // code points in each tool call's arguments
    std::size_t text_chars = 0, reasoning_chars = 0;
    bool seen = false;
  };
  // OnData's stages over one parsed event (stream.cc says what each does).
  bool ReadChoices(const simdjson::dom::object& root, bool* choices_empty);
  bool ReadChoiceDelta(const simdjson::dom::object& delta, Choice& ch);
  bool ReadToolCalls(const simdjson::dom::array& calls, Choice& ch);
  bool ReadEventUsage(const simdjson::dom::object& root);
  Verdict Rewrite(std::string_view data, bool has_usage, bool choices_empty,
                  std::string* rewritten) const;

  Operation op_;
  Options options_;
  ResponseInfo info_;
  std::vector<Choice> choices_;
  std::int64_t delta_count_ = 0;
  bool saw_done_ = false;
  TokenDetail last_tokens_;
  void NoteContent(std::string_view s);
};

// Truncates to at most `max_chars` UTF-8 code points, never splitting a code point.
std::string_view TruncateUtf8(std::string_view s, std::size_t max_chars);

}  // namespace infertel::openai
