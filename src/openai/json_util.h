#pragma once
// Internal helpers of the OpenAI parsers: a per-thread simdjson parser, typed field reads
// that never throw and never accept the wrong type, a JSON string writer that always
// produces valid JSON, and the GenAI message writer. Not part of the gateway's interface.

#include <simdjson.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <vector>
#include "core/json.h"

#include "openai/openai.h"

namespace infertel::openai::internal {

// Borrows this thread's DOM parser for one parse and the reads that follow it. Documents
// parsed through a lease are valid until the lease ends. A nested lease on the same thread
// gets a parser of its own. A parser that grew past a bound is released at the end of the
// lease, so one huge body does not pin its memory to the thread.
class ParserLease {
 public:
  ParserLease();
  ~ParserLease();
  ParserLease(const ParserLease&) = delete;
  ParserLease& operator=(const ParserLease&) = delete;

  simdjson::dom::parser& parser() { return *parser_; }

 private:
  simdjson::dom::parser* parser_;
  std::unique_ptr<simdjson::dom::parser> own_;  // set for a nested lease
};

// Parses `body` as a JSON object. On failure returns false and sets *error to a reason.
bool ParseObject(simdjson::dom::parser& parser, std::string_view body, simdjson::dom::object* out,
                 std::string* error);

// Typed reads: nullopt for a different type (null included). Integers accept a JSON integer
// that fits int64 or a float with an integral value inside int64's range.
std::optional<std::string_view> AsString(simdjson::dom::element e);
std::optional<std::int64_t> AsInt(simdjson::dom::element e);
std::optional<double> AsDouble(simdjson::dom::element e);
std::optional<bool> AsBool(simdjson::dom::element e);
bool IsNull(simdjson::dom::element e);

// The value of the LAST member named `key` (Python's json keeps the last duplicate), or an
// error when absent.
bool Member(simdjson::dom::object obj, std::string_view key, simdjson::dom::element* out);

// Appends `piece` to *dst while *dst holds at most `max_chars` code points; *count tracks the
// code points already in *dst. Returns false once something was cut.
bool AppendBounded(std::string* dst, std::size_t* count, std::string_view piece,
                   std::size_t max_chars);

// Builds a GenAI message array: [{"role":..,"parts":[..],"finish_reason":..}, ...]. Every
// string value is truncated to the capture's max_length.
class MessagesWriter {
 public:
  // `source_size`: the length of the JSON the messages are read from. The array is about as
  // long, so room for it at once saves the string's five or six doublings on the way (up to
  // kMaxReserve: a large body is mostly other things, and long content is truncated). With
  // content capture off nothing is written, and nothing is reserved.
  MessagesWriter(const CaptureOptions& capture, std::size_t source_size) : capture_(capture) {
    if (capture.capture_content && source_size > 0)
      out_.reserve(std::min(source_size + kReserveSlack, kMaxReserve));
  }

  void BeginMessage(std::string_view role, std::optional<std::string_view> name = std::nullopt);
  void EndMessage(std::optional<std::string_view> finish_reason = std::nullopt);

  void Text(std::string_view content);
  void Reasoning(std::string_view content);
  void ToolCall(std::optional<std::string_view> id, std::string_view name,
                std::optional<std::string_view> arguments);
  void ToolCallResponse(std::optional<std::string_view> id, std::string_view response);
  // A media part given as a URL. With capture_multimodal: a data: URL becomes a blob
  // reference {type:blob, modality, mime_type, size_bytes, hash:"sha256:<hex>"} of the decoded
  // bytes; a "scheme://" URL a uri part without user info, query and fragment; any other text
  // (bare base64) a blob reference of its bytes. Never the data itself. Without
  // capture_multimodal: a placeholder {type:media, modality} and nothing else.
  void MediaUrl(std::string_view modality, std::string_view url);
  // Inline base64 data (input_audio): a blob reference or a placeholder, as above.
  void MediaBase64(std::string_view modality, std::string_view mime_type, std::string_view b64);

  std::size_t message_count() const { return messages_; }
  // The array, or "" when no message was written.
  std::string Take();

 private:
  void BeginPart(std::string_view type);
  void Field(std::string_view key, std::string_view value);  // truncated string value
  enum class BlobEncoding { kBase64, kPercent, kRaw };
  void BlobRef(std::string_view modality, std::string_view mime_type, std::string_view payload,
               BlobEncoding encoding);
  void MediaPlaceholder(std::string_view modality);

  static constexpr std::size_t kReserveSlack = 64;  // the array's own framing
  static constexpr std::size_t kMaxReserve = 16 * 1024;

  const CaptureOptions& capture_;
  std::string out_;
  std::size_t messages_ = 0;
  std::size_t parts_in_message_ = 0;
};

// Maps an engine finish reason to the GenAI output message's finish_reason.
std::string_view GenAiFinishReason(std::string_view engine_reason);

// Reads a usage object (OpenAI shape) into *usage; fields absent or null are left as they were,
// fields that are not token counts are left unset and named in usage->invalid.
void ReadUsage(simdjson::dom::element usage_el, Usage* usage);

// Reads an error body; returns true when `obj` is one.
bool ReadError(simdjson::dom::object obj, std::size_t max_length, ResponseInfo* info);

// Writes one GenAI output message (role, reasoning, text, tool calls, finish_reason).
void WriteOutputMessage(MessagesWriter* w, std::string_view role, std::string_view reasoning,
                        std::string_view text, const std::vector<ToolCall>& tool_calls,
                        std::string_view engine_finish_reason);

// ---- Byte-exact edits of JSON text that simdjson has already validated.

struct Edit {
  std::size_t begin, end;    // byte range of the input to replace
  std::string_view replace;  // replacement bytes
};

// Positions of `key`'s value in the top-level object of `json` (the last such member) and of
// the whole member, so that it can be removed together with one separating comma. Returns
// false when absent.
struct MemberSpan {
  std::size_t value_begin = 0, value_end = 0;    // the value
  std::size_t remove_begin = 0, remove_end = 0;  // the member with one comma
};
bool FindTopLevelMember(std::string_view json, std::string_view key, MemberSpan* out);

// Edits that set the `logprobs` value of every object in the top-level `choices` array to
// null (values already null are left alone).
void NullChoiceLogprobs(std::string_view json, std::vector<Edit>* edits);

// Applies non-overlapping edits (any order).
std::string ApplyEdits(std::string_view json, std::vector<Edit> edits);

}  // namespace infertel::openai::internal
