// SSE streams: accumulation of chunks and the per-event verdict.

#include <cmath>
#include <limits>

#include "openai/json_util.h"
#include "openai/openai.h"

namespace infertel::openai {
namespace {

using internal::AsDouble;
using internal::AsInt;
using internal::AsString;
using internal::Member;
using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

// Engines bound n and the number of tool calls far below these; a chunk naming a larger
// index is ignored rather than growing our state.
constexpr std::int64_t kMaxChoices = 1024;
constexpr std::int64_t kMaxToolCalls = 256;

std::string_view Trim(std::string_view s) {
  while (!s.empty() &&
         (s.front() == ' ' || s.front() == '\t' || s.front() == '\r' || s.front() == '\n')) {
    s.remove_prefix(1);
  }
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

void ReadTokenDetail(object choice, StreamObserver::TokenDetail* out) {
  element e;
  object lp;
  if (Member(choice, "logprobs", &e) && !e.get_object().get(lp)) {
    array arr;
    if (Member(lp, "content", &e) && !e.get_array().get(arr)) {  // chat
      for (element item : arr) {
        object t;
        if (item.get_object().get(t)) continue;
        std::string_view token;
        double logprob = std::numeric_limits<double>::quiet_NaN();
        if (Member(t, "token", &e)) token = AsString(e).value_or("");
        if (Member(t, "logprob", &e)) logprob = AsDouble(e).value_or(logprob);
        out->texts.emplace_back(token);
        out->logprobs.push_back(logprob);
      }
    } else {  // completions: parallel arrays
      if (Member(lp, "tokens", &e) && !e.get_array().get(arr)) {
        for (element item : arr) out->texts.emplace_back(AsString(item).value_or(""));
      }
      if (Member(lp, "token_logprobs", &e) && !e.get_array().get(arr)) {
        for (element item : arr) {
          out->logprobs.push_back(
              AsDouble(item).value_or(std::numeric_limits<double>::quiet_NaN()));
        }
      }
    }
  }
  array ids;
  if (Member(choice, "token_ids", &e) && !e.get_array().get(ids)) {
    for (element item : ids) {
      if (auto id = AsInt(item)) out->ids.push_back(*id);
    }
  }
}

}  // namespace

StreamObserver::StreamObserver(Operation op, Options options)
    : op_(op), options_(std::move(options)) {
  info_.parsed = true;
}

// delta_count_ rule: an event counts once when at least one of its choices carries a
// non-empty content, reasoning (reasoning_content or reasoning) or completion text, or a
// tool-call item with a non-empty id, name or arguments piece. A role-only first chunk
// (content "") and a finish-only chunk do not count.
StreamObserver::Verdict StreamObserver::OnData(std::string_view data, std::string* rewritten) {
  last_tokens_.texts.clear();
  last_tokens_.logprobs.clear();
  last_tokens_.ids.clear();
  last_tokens_.content.clear();
  last_tokens_.content_pieces = 0;
  data = Trim(data);
  if (data == "[DONE]") {
    saw_done_ = true;
    return Verdict::kForward;
  }
  try {
    internal::ParserLease lease;
    object root;
    std::string error;
    if (!internal::ParseObject(lease.parser(), data, &root, &error)) {
      if (info_.parse_error.empty()) info_.parse_error = "stream event: " + error;
      return Verdict::kForward;
    }
    if (internal::ReadError(root, options_.capture.max_length, &info_)) return Verdict::kForward;

    element e;
    if (!info_.id && Member(root, "id", &e)) {
      if (auto s = AsString(e)) info_.id = std::string(TruncateUtf8(*s, kMaxIdentifierChars));
    }
    if (!info_.model && Member(root, "model", &e)) {
      if (auto s = AsString(e)) info_.model = std::string(TruncateUtf8(*s, kMaxIdentifierChars));
    }
    bool choices_empty = false;
    if (ReadChoices(root, &choices_empty)) ++delta_count_;
    const bool has_usage = ReadEventUsage(root);
    return Rewrite(data, has_usage, choices_empty, rewritten);
  } catch (...) {  // allocation failure: the client's bytes still go through
    return Verdict::kForward;
  }
}

// Every choice of the event: its delta (chat) or text (completions), finish reason and token
// detail. True when one of them carried content.
bool StreamObserver::ReadChoices(const object& root, bool* choices_empty) {
  const CaptureOptions& capture = options_.capture;
  const std::size_t max_len = capture.max_length;
  element e;
  array choices;
  if (!Member(root, "choices", &e) || e.get_array().get(choices)) return false;
  *choices_empty = choices.size() == 0;
  bool has_delta = false;
  std::int64_t position = 0;
  for (element item : choices) {
    object c;
    const std::int64_t pos = position++;
    if (item.get_object().get(c)) continue;
    std::int64_t index = pos;
    if (Member(c, "index", &e)) index = AsInt(e).value_or(pos);
    if (index < 0 || index >= kMaxChoices) continue;
    if (choices_.size() <= static_cast<std::size_t>(index)) choices_.resize(index + 1);
    Choice& ch = choices_[index];
    ch.seen = true;

    object delta;
    if (Member(c, "delta", &e) && !e.get_object().get(delta)) {
      has_delta |= ReadChoiceDelta(delta, ch);
    } else if (Member(c, "text", &e)) {  // completions
      if (auto s = AsString(e); s && !s->empty()) {
        has_delta = true;
        NoteContent(*s);
        if (capture.capture_content) {
          internal::AppendBounded(&ch.text, &ch.text_chars, *s, max_len);
        }
      }
    }
    if (Member(c, "finish_reason", &e)) {
      if (auto s = AsString(e); s && !s->empty()) {
        ch.finish_reason = TruncateUtf8(*s, kMaxIdentifierChars);
      }
    }
    ReadTokenDetail(c, &last_tokens_);
  }
  return has_delta;
}

// One choice's content piece of the event, for the token detail's stand-in (TokenDetail).
void StreamObserver::NoteContent(std::string_view s) {
  ++last_tokens_.content_pieces;
  if (options_.capture.capture_content)
    last_tokens_.content.emplace_back(TruncateUtf8(s, options_.capture.max_length));
}

// A chat delta: role, content, reasoning, tool calls. True when it carried content.
bool StreamObserver::ReadChoiceDelta(const object& delta, Choice& ch) {
  const CaptureOptions& capture = options_.capture;
  const std::size_t max_len = capture.max_length;
  element e;
  bool has_delta = false;
  if (ch.role.empty() && Member(delta, "role", &e)) {
    ch.role = std::string(TruncateUtf8(AsString(e).value_or(""), kMaxIdentifierChars));
  }
  if (Member(delta, "content", &e)) {
    if (auto s = AsString(e); s && !s->empty()) {
      has_delta = true;
      NoteContent(*s);
      if (capture.capture_content) {
        internal::AppendBounded(&ch.text, &ch.text_chars, *s, max_len);
      }
    }
  }
  for (std::string_view key : {"reasoning_content", "reasoning"}) {
    if (!Member(delta, key, &e)) continue;
    if (auto s = AsString(e); s && !s->empty()) {
      has_delta = true;
      if (capture.capture_content) {
        internal::AppendBounded(&ch.reasoning, &ch.reasoning_chars, *s, max_len);
      }
    }
  }
  array calls;
  if (Member(delta, "tool_calls", &e) && !e.get_array().get(calls))
    has_delta |= ReadToolCalls(calls, ch);
  return has_delta;
}

// A delta's tool calls, each by its index (or, without one, by a new id). True when one
// carried an id, a name or arguments.
bool StreamObserver::ReadToolCalls(const array& calls, Choice& ch) {
  const CaptureOptions& capture = options_.capture;
  const std::size_t max_len = capture.max_length;
  element e;
  bool has_delta = false;
  for (element call_el : calls) {
    object call;
    if (call_el.get_object().get(call)) continue;
    std::optional<std::string_view> id, name, args;
    if (Member(call, "id", &e)) id = AsString(e);
    object fn;
    if (Member(call, "function", &e) && !e.get_object().get(fn)) {
      if (Member(fn, "name", &e)) name = AsString(e);
      if (Member(fn, "arguments", &e)) args = AsString(e);
    }
    std::int64_t ti;
    if (Member(call, "index", &e) && AsInt(e)) {
      ti = *AsInt(e);
    } else if (id && !id->empty()) {  // no index: a new id starts a new call
      ti = static_cast<std::int64_t>(ch.tool_calls.size());
    } else {
      ti = ch.tool_calls.empty() ? 0 : ch.tool_calls.size() - 1;
    }
    if (ti < 0 || ti >= kMaxToolCalls) continue;
    if (ch.tool_calls.size() <= static_cast<std::size_t>(ti)) {
      ch.tool_calls.resize(ti + 1);
      ch.argument_chars.resize(ti + 1);
    }
    ToolCall& tc = ch.tool_calls[ti];
    if ((id && !id->empty()) || (name && !name->empty()) || (args && !args->empty())) {
      has_delta = true;
    }
    if (id && !id->empty() && tc.id.empty()) tc.id = TruncateUtf8(*id, kMaxIdentifierChars);
    if (name && !name->empty() && tc.name.empty()) {
      tc.name = TruncateUtf8(*name, kMaxIdentifierChars);
    }
    if (args && capture.capture_content) {
      internal::AppendBounded(&tc.arguments, &ch.argument_chars[ti], *args, max_len);
    }
  }
  return has_delta;
}

// The event's usage, when it has one: continuous usage puts it on every chunk, and the last
// one is the total.
bool StreamObserver::ReadEventUsage(const object& root) {
  element e;
  if (!Member(root, "usage", &e) || e.is_null()) return false;
  object u;
  if (e.get_object().get(u)) return false;
  // A bad count in any chunk stays named, though a later chunk's counts replace it.
  std::string invalid = std::move(info_.usage.invalid);
  info_.usage = Usage{};
  internal::ReadUsage(e, &info_.usage);
  if (info_.usage.invalid.empty()) info_.usage.invalid = std::move(invalid);
  return true;
}

// The event as it leaves: dropped when it only carried the usage the gateway asked for,
// rewritten without that usage or the logprobs the gateway asked for, else as it came.
StreamObserver::Verdict StreamObserver::Rewrite(std::string_view data, bool has_usage,
                                                bool choices_empty, std::string* rewritten) const {
  if (options_.drop_injected_usage && has_usage && choices_empty) return Verdict::kDrop;
  std::vector<internal::Edit> edits;
  internal::MemberSpan usage_span;
  // "usage": null is what engines send when usage was not asked for: left as it is.
  if (options_.drop_injected_usage && has_usage &&
      internal::FindTopLevelMember(data, "usage", &usage_span)) {
    edits.push_back({usage_span.remove_begin, usage_span.remove_end, ""});
  }
  if (options_.strip_injected_logprobs) internal::NullChoiceLogprobs(data, &edits);
  if (edits.empty()) return Verdict::kForward;
  *rewritten = internal::ApplyEdits(data, std::move(edits));
  return Verdict::kRewrite;
}

ResponseInfo StreamObserver::Finish() {
  ResponseInfo out = info_;
  try {
    const bool generative = op_ == Operation::kChat || op_ == Operation::kTextCompletion;
    std::size_t text_size = 0;  // what the output messages will hold, about
    if (generative) {
      for (const Choice& ch : choices_) text_size += ch.text.size() + ch.reasoning.size() + 64;
    }
    internal::MessagesWriter w(options_.capture, text_size);
    out.tool_calls.resize(choices_.size());
    for (std::size_t i = 0; i < choices_.size(); ++i) {
      const Choice& ch = choices_[i];
      if (!ch.seen) continue;
      if (ch.finish_reason.empty())
        ++out.unfinished_choices;
      else
        out.finish_reasons.push_back(ch.finish_reason);
      // A tool call whose first frame was lost has no name; keep it, it still happened.
      out.tool_calls[i] = ch.tool_calls;
      if (options_.capture.capture_content && generative) {
        internal::WriteOutputMessage(&w, ch.role, ch.reasoning, ch.text, ch.tool_calls,
                                     ch.finish_reason);
      }
    }
    out.output_messages_json = w.Take();
  } catch (...) {
    out.output_messages_json.clear();
  }
  return out;
}

}  // namespace infertel::openai
