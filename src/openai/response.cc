// Non-streaming responses: ids, finish reasons, usage, output messages, tool calls, errors.

#include <algorithm>

#include "openai/json_util.h"
#include "openai/openai.h"

namespace infertel::openai {
namespace internal {

void WriteOutputMessage(MessagesWriter* w, std::string_view role, std::string_view reasoning,
                        std::string_view text, const std::vector<ToolCall>& tool_calls,
                        std::string_view engine_finish_reason) {
  w->BeginMessage(role.empty() ? std::string_view("assistant") : role);
  if (!reasoning.empty()) w->Reasoning(reasoning);
  if (!text.empty()) w->Text(text);
  for (const ToolCall& call : tool_calls) {
    w->ToolCall(call.id.empty() ? std::nullopt : std::optional<std::string_view>(call.id),
                call.name, call.arguments);
  }
  w->EndMessage(GenAiFinishReason(engine_finish_reason));
}

}  // namespace internal

namespace {

using internal::AsInt;
using internal::AsString;
using internal::Member;
using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

std::string Bounded(std::string_view s, std::size_t max_length) {
  return std::string(TruncateUtf8(s, max_length));
}

std::vector<ToolCall> ReadToolCalls(object message, const CaptureOptions& capture) {
  std::vector<ToolCall> calls;
  element e;
  array arr;
  if (!Member(message, "tool_calls", &e) || e.get_array().get(arr)) return calls;
  for (element item : arr) {
    object c;
    if (item.get_object().get(c)) continue;
    ToolCall call;
    if (Member(c, "id", &e)) call.id = Bounded(AsString(e).value_or(""), kMaxIdentifierChars);
    object fn;
    if (Member(c, "function", &e) && !e.get_object().get(fn)) {
      if (Member(fn, "name", &e))
        call.name = Bounded(AsString(e).value_or(""), kMaxIdentifierChars);
      if (capture.capture_content && Member(fn, "arguments", &e)) {
        if (auto s = AsString(e)) {
          call.arguments = Bounded(*s, capture.max_length);
        } else if (!e.is_null()) {
          call.arguments = Bounded(simdjson::minify(e), capture.max_length);
        }
      }
    }
    calls.push_back(std::move(call));
  }
  return calls;
}

struct ChoiceRef {
  std::int64_t index;
  object choice;
};

void ReadResponse(Operation op, object root, const CaptureOptions& capture, std::size_t body_size,
                  ResponseInfo* info) {
  if (internal::ReadError(root, capture.max_length, info)) return;
  element e;
  if (Member(root, "id", &e)) {
    if (auto s = AsString(e)) info->id = Bounded(*s, kMaxIdentifierChars);
  }
  if (Member(root, "model", &e)) {
    if (auto s = AsString(e)) info->model = Bounded(*s, kMaxIdentifierChars);
  }
  if (Member(root, "usage", &e)) internal::ReadUsage(e, &info->usage);

  array arr;
  if (!Member(root, "choices", &e) || e.get_array().get(arr)) return;
  std::vector<ChoiceRef> choices;
  std::int64_t position = 0;
  for (element item : arr) {
    object c;
    if (!item.get_object().get(c)) {
      std::int64_t index = position;
      if (Member(c, "index", &e)) index = AsInt(e).value_or(position);
      choices.push_back({index, c});
    }
    ++position;
  }
  std::stable_sort(choices.begin(), choices.end(),
                   [](const ChoiceRef& a, const ChoiceRef& b) { return a.index < b.index; });

  const bool generative = op == Operation::kChat || op == Operation::kTextCompletion;
  internal::MessagesWriter w(capture, body_size);
  for (const ChoiceRef& ref : choices) {
    std::string_view finish;
    if (Member(ref.choice, "finish_reason", &e)) finish = AsString(e).value_or("");
    info->finish_reasons.push_back(Bounded(finish, kMaxIdentifierChars));

    std::string_view role, text, reasoning;
    std::vector<ToolCall> calls;
    object message;
    if (Member(ref.choice, "message", &e) && !e.get_object().get(message)) {
      if (Member(message, "role", &e)) role = AsString(e).value_or("");
      if (Member(message, "content", &e)) text = AsString(e).value_or("");
      for (std::string_view key : {"reasoning_content", "reasoning"}) {
        if (reasoning.empty() && Member(message, key, &e)) reasoning = AsString(e).value_or("");
      }
      calls = ReadToolCalls(message, capture);
    } else if (Member(ref.choice, "text", &e)) {
      text = AsString(e).value_or("");
    }
    if (capture.capture_content && generative) {
      internal::WriteOutputMessage(&w, role, reasoning, text, calls, finish);
    }
    info->tool_calls.push_back(std::move(calls));
  }
  info->output_messages_json = w.Take();
}

}  // namespace

ResponseInfo ParseResponse(Operation op, std::string_view body, const CaptureOptions& capture) {
  ResponseInfo info;
  try {
    internal::ParserLease lease;
    object root;
    if (!internal::ParseObject(lease.parser(), body, &root, &info.parse_error)) return info;
    info.parsed = true;
    ReadResponse(op, root, capture, body.size(), &info);
  } catch (...) {  // allocation failure
    info.output_messages_json.clear();
    if (info.parse_error.empty()) info.parse_error = "out of memory while parsing";
  }
  return info;
}

std::optional<std::string> StripInjectedLogprobs(std::string_view body) {
  try {
    internal::ParserLease lease;
    object root;
    std::string error;
    if (!internal::ParseObject(lease.parser(), body, &root, &error)) return std::nullopt;
    std::vector<internal::Edit> edits;
    internal::NullChoiceLogprobs(body, &edits);
    if (edits.empty()) return std::nullopt;
    return internal::ApplyEdits(body, std::move(edits));
  } catch (...) {
    return std::nullopt;
  }
}

}  // namespace infertel::openai
