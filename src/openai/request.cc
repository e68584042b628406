// Request side: operation by path, request parsing with content capture, upstream rewrites.

#include "core/semconv.h"
#include "openai/json_util.h"
#include "openai/openai.h"

namespace infertel::openai {
namespace {

using internal::AsBool;
using internal::AsDouble;
using internal::AsInt;
using internal::AsString;
using internal::Member;
using internal::MessagesWriter;
using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

// Records the first field that was present but unusable: the span says why it lacks it.
void NoteWrongType(RequestInfo* info, std::string_view key, std::string_view expected) {
  if (!info->parse_error.empty()) return;
  info->parse_error = "ignored field '";
  info->parse_error += key;
  info->parse_error += "': not ";
  info->parse_error += expected;
}

template <typename T, typename Read>
void ReadField(object root, std::string_view key, std::string_view expected, Read read,
               std::optional<T>* out, RequestInfo* info) {
  element e;
  if (!Member(root, key, &e) || e.is_null()) return;
  auto v = read(e);
  if (!v) {
    NoteWrongType(info, key, expected);
    return;
  }
  *out = T(*v);
}

std::string_view AudioMime(std::string_view format) {
  if (format == "mp3") return "audio/mpeg";
  if (format == "wav") return "audio/wav";
  if (format == "flac") return "audio/flac";
  if (format == "ogg") return "audio/ogg";
  if (format == "m4a") return "audio/mp4";
  if (format == "webm") return "audio/webm";
  if (format == "pcm16") return "audio/pcm";
  return {};
}

// The url of an image_url/audio_url/video_url part: {"url": ...} or a bare string.
std::optional<std::string_view> PartUrl(object part, std::string_view key) {
  element e;
  if (!Member(part, key, &e)) return std::nullopt;
  if (auto s = AsString(e)) return s;
  object o;
  if (e.get_object().get(o) || !Member(o, "url", &e)) return std::nullopt;
  return AsString(e);
}

// Writes a chat message's `content`: a string, or an array of typed parts.
void WriteContent(element content, MessagesWriter* w) {
  if (auto s = AsString(content)) {
    w->Text(*s);
    return;
  }
  array parts;
  if (content.get_array().get(parts)) return;
  for (element p : parts) {
    object part;
    if (p.get_object().get(part)) continue;
    element e;
    if (!Member(part, "type", &e)) continue;
    const auto type = AsString(e);
    if (!type) continue;
    if (*type == "text" || *type == "input_text") {
      if (Member(part, "text", &e)) {
        if (auto text = AsString(e)) w->Text(*text);
      }
    } else if (*type == "image_url") {
      if (auto url = PartUrl(part, "image_url")) w->MediaUrl("image", *url);
    } else if (*type == "audio_url") {
      if (auto url = PartUrl(part, "audio_url")) w->MediaUrl("audio", *url);
    } else if (*type == "video_url") {
      if (auto url = PartUrl(part, "video_url")) w->MediaUrl("video", *url);
    } else if (*type == "input_audio") {
      object audio;
      if (!Member(part, "input_audio", &e) || e.get_object().get(audio)) continue;
      std::string_view format;
      if (Member(audio, "format", &e)) format = AsString(e).value_or("");
      if (Member(audio, "data", &e)) {
        if (auto data = AsString(e)) w->MediaBase64("audio", AudioMime(format), *data);
      }
    }
    // Other part types (file, refusal, embeddings) carry no capturable text.
  }
}

// The text of a tool message's content (a string or text parts), bounded.
std::string ContentText(element content, std::size_t max_length) {
  std::string out;
  std::size_t chars = 0;
  if (auto s = AsString(content)) {
    internal::AppendBounded(&out, &chars, *s, max_length);
    return out;
  }
  array parts;
  if (content.get_array().get(parts)) return out;
  for (element p : parts) {
    object part;
    element e;
    if (p.get_object().get(part) || !Member(part, "text", &e)) continue;
    if (auto s = AsString(e)) internal::AppendBounded(&out, &chars, *s, max_length);
  }
  return out;
}

void WriteToolCall(element call, MessagesWriter* w) {
  object c;
  if (call.get_object().get(c)) return;
  element e;
  std::optional<std::string_view> id;
  if (Member(c, "id", &e)) id = AsString(e);
  object fn;
  if (!Member(c, "function", &e) || e.get_object().get(fn)) return;
  std::string_view name;
  if (Member(fn, "name", &e)) name = AsString(e).value_or("");
  std::optional<std::string_view> args;
  std::string args_json;
  if (Member(fn, "arguments", &e)) {
    args = AsString(e);
    if (!args && !e.is_null()) {  // some clients send an object
      args_json = simdjson::minify(e);
      args = args_json;
    }
  }
  w->ToolCall(id, name, args);
}

void WriteChatMessages(array messages, MessagesWriter* w, std::size_t max_length) {
  for (element m : messages) {
    object msg;
    if (m.get_object().get(msg)) continue;
    element e;
    if (!Member(msg, "role", &e)) continue;
    const auto role = AsString(e);
    if (!role) continue;
    std::optional<std::string_view> name;
    if (Member(msg, "name", &e)) name = AsString(e);
    w->BeginMessage(*role, name);
    element content;
    const bool has_content = Member(msg, "content", &content);
    if (*role == "tool") {
      std::optional<std::string_view> id;
      if (Member(msg, "tool_call_id", &e)) id = AsString(e);
      w->ToolCallResponse(id, has_content ? ContentText(content, max_length) : std::string());
    } else {
      for (std::string_view key : {"reasoning_content", "reasoning"}) {
        if (Member(msg, key, &e)) {
          if (auto s = AsString(e); s && !s->empty()) w->Reasoning(*s);
        }
      }
      if (has_content) WriteContent(content, w);
      array calls;
      if (Member(msg, "tool_calls", &e) && !e.get_array().get(calls)) {
        for (element call : calls) WriteToolCall(call, w);
      }
      object fn;
      if (Member(msg, "function_call", &e) && !e.get_object().get(fn)) {  // legacy
        std::string_view fname, fargs;
        if (Member(fn, "name", &e)) fname = AsString(e).value_or("");
        if (Member(fn, "arguments", &e)) fargs = AsString(e).value_or("");
        w->ToolCall(std::nullopt, fname, fargs);
      }
    }
    w->EndMessage();
  }
}

// Appends the strings of a string or array-of-strings value as text parts. Token-id arrays
// and other non-string items are skipped. Returns how many parts were written.
int WriteTexts(element value, MessagesWriter* w) {
  if (auto s = AsString(value)) {
    w->Text(*s);
    return 1;
  }
  array items;
  if (value.get_array().get(items)) return 0;
  int written = 0;
  for (element item : items) {
    std::optional<std::string_view> s = AsString(item);
    object o;
    element e;
    if (!s && !item.get_object().get(o) && Member(o, "text", &e)) s = AsString(e);
    if (s) {
      w->Text(*s);
      ++written;
    }
  }
  return written;
}

bool HasTexts(element value) {
  if (AsString(value)) return true;
  array items;
  if (value.get_array().get(items)) return false;
  for (element item : items) {
    if (AsString(item)) return true;
    object o;
    element e;
    if (!item.get_object().get(o) && Member(o, "text", &e) && AsString(e)) return true;
  }
  return false;
}

std::string BuildInputMessages(Operation op, object root, const CaptureOptions& capture,
                               std::size_t body_size) {
  MessagesWriter w(capture, body_size);
  element e;
  array arr;
  switch (op) {
    case Operation::kChat:
      if (Member(root, "messages", &e) && !e.get_array().get(arr)) {
        WriteChatMessages(arr, &w, capture.max_length);
      }
      break;
    case Operation::kTextCompletion:
      if (Member(root, "prompt", &e) && HasTexts(e)) {
        w.BeginMessage("user");
        WriteTexts(e, &w);
        w.EndMessage();
      }
      break;
    case Operation::kEmbeddings:
      if (Member(root, "messages", &e) && !e.get_array().get(arr)) {  // chat-style embeddings
        WriteChatMessages(arr, &w, capture.max_length);
      } else if (Member(root, "input", &e)) {
        if (auto s = AsString(e)) {
          w.BeginMessage("user");
          w.Text(*s);
          w.EndMessage();
        } else if (!e.get_array().get(arr)) {
          for (element item : arr) {  // one message per input to embed
            if (auto s = AsString(item)) {
              w.BeginMessage("user");
              w.Text(*s);
              w.EndMessage();
            }
          }
        }
      }
      break;
    case Operation::kRerank: {
      // rerank: query + documents; score: text_1 + text_2 (vLLM) or query + items (SGLang).
      static constexpr std::string_view kKeys[] = {"query",     "text_1", "queries",
                                                   "documents", "text_2", "items"};
      bool any = false;
      for (std::string_view key : kKeys) any = any || (Member(root, key, &e) && HasTexts(e));
      if (!any) break;
      w.BeginMessage("user");
      for (std::string_view key : kKeys) {
        if (Member(root, key, &e)) WriteTexts(e, &w);
      }
      w.EndMessage();
      break;
    }
    case Operation::kNone:
      break;
  }
  return w.Take();
}

void ReadRequestFields(Operation op, object root, RequestInfo* info) {
  ReadField<std::string>(root, "model", "a string", AsString, &info->model, info);
  ReadField<std::int64_t>(root, "n", "an integer", AsInt, &info->n, info);
  ReadField<double>(root, "temperature", "a number", AsDouble, &info->temperature, info);
  ReadField<double>(root, "top_p", "a number", AsDouble, &info->top_p, info);
  ReadField<std::int64_t>(root, "top_k", "an integer", AsInt, &info->top_k, info);
  ReadField<std::int64_t>(root, "max_tokens", "an integer", AsInt, &info->max_tokens, info);
  if (!info->max_tokens) {
    ReadField<std::int64_t>(root, "max_completion_tokens", "an integer", AsInt, &info->max_tokens,
                            info);
  }
  std::optional<bool> stream;
  ReadField<bool>(root, "stream", "a boolean", AsBool, &stream, info);
  info->stream = stream.value_or(false);
  ReadField<std::string>(root, "user", "a string", AsString, &info->user, info);

  element e;
  object so;
  if (Member(root, "stream_options", &e) && !e.get_object().get(so)) {
    info->has_stream_options = true;
    if (Member(so, "include_usage", &e)) info->include_usage = AsBool(e).value_or(false);
    if (Member(so, "continuous_usage_stats", &e)) {
      info->continuous_usage_stats = AsBool(e).value_or(false);
    }
  }
  if (Member(root, "logprobs", &e)) {
    if (op == Operation::kTextCompletion) {
      const auto v = AsInt(e);
      info->logprobs = v && *v >= 0;
    } else {
      info->logprobs = AsBool(e).value_or(false);
    }
  }
  array tools;
  if (Member(root, "tools", &e) && !e.get_array().get(tools)) info->has_tools = tools.size() > 0;

  ReadField<std::string>(root, "request_id", "a string", AsString, &info->request_id, info);
  if (!info->request_id) {
    ReadField<std::string>(root, "rid", "a string", AsString, &info->request_id, info);
  }
  ReadField<std::int64_t>(root, "stream_interval", "an integer", AsInt, &info->stream_interval,
                          info);
  object sp;
  if (!info->stream_interval && Member(root, "sampling_params", &e) && !e.get_object().get(sp)) {
    ReadField<std::int64_t>(sp, "stream_interval", "an integer", AsInt, &info->stream_interval,
                            info);
  }
}

bool SameOp(std::string_view path, std::initializer_list<std::string_view> paths) {
  for (auto p : paths) {
    if (path == p) return true;
  }
  return false;
}

}  // namespace

Operation OperationForPath(std::string_view method, std::string_view target) {
  if (method != "POST") return Operation::kNone;
  const std::size_t q = target.find_first_of("?#");
  const std::string_view path = target.substr(0, q);
  if (path == "/v1/chat/completions") return Operation::kChat;
  if (path == "/v1/completions") return Operation::kTextCompletion;
  if (path == "/v1/embeddings") return Operation::kEmbeddings;
  if (SameOp(path, {"/v1/rerank", "/rerank", "/v2/rerank", "/v1/score", "/score"})) {
    return Operation::kRerank;
  }
  return Operation::kNone;
}

std::string_view OperationName(Operation op) {
  switch (op) {
    case Operation::kChat:
      return semconv::kOpChat;
    case Operation::kTextCompletion:
      return semconv::kOpTextCompletion;
    case Operation::kEmbeddings:
      return semconv::kOpEmbeddings;
    case Operation::kRerank:
      return semconv::kOpRerank;
    case Operation::kNone:
      break;
  }
  return {};
}

std::string_view SpanKindFor(Operation op) {
  switch (op) {
    case Operation::kEmbeddings:
      return semconv::kSpanKindEmbedding;
    case Operation::kRerank:
      return semconv::kSpanKindReranker;
    default:
      return semconv::kSpanKindLlm;
  }
}

RequestInfo ParseRequest(Operation op, std::string_view body, const CaptureOptions& capture) {
  RequestInfo info;
  info.op = op;
  try {
    internal::ParserLease lease;
    object root;
    if (!internal::ParseObject(lease.parser(), body, &root, &info.parse_error)) return info;
    info.parsed = true;
    ReadRequestFields(op, root, &info);
    if (capture.capture_content)
      info.input_messages_json = BuildInputMessages(op, root, capture, body.size());
  } catch (...) {  // allocation failure: keep what was read
    info.input_messages_json.clear();
    if (info.parse_error.empty()) info.parse_error = "out of memory while parsing";
  }
  return info;
}

std::optional<std::string> RewriteRequest(const RequestInfo& info, std::string_view body,
                                          const RewriteOptions& options) {
  if (!info.parsed) return std::nullopt;
  const bool generative = info.op == Operation::kChat || info.op == Operation::kTextCompletion;
  const bool want_usage =
      options.force_include_usage && generative && info.stream && !info.include_usage;
  const bool want_logprobs = options.force_logprobs && generative && !info.logprobs;
  if (!want_usage && !want_logprobs) return std::nullopt;
  try {
    internal::ParserLease lease;
    object root;
    std::string error;
    if (!internal::ParseObject(lease.parser(), body, &root, &error)) return std::nullopt;

    std::string added;
    if (want_usage) {
      element e;
      object so;
      if (!Member(root, "stream_options", &e) || e.is_null()) {
        added = "\"stream_options\":{\"include_usage\":true}";
      } else if (!e.get_object().get(so)) {
        // Keep the client's other options; the engine takes the last stream_options whole.
        added = "\"stream_options\":{";
        for (auto field : so) {
          if (field.key == "include_usage") continue;
          if (field.key == "continuous_usage_stats" && info.continuous_usage_stats) continue;
          AppendJsonString(&added, field.key);
          added.push_back(':');
          added += simdjson::minify(field.value);
          added.push_back(',');
        }
        added += "\"include_usage\":true";
        // continuous_usage_stats only acts with include_usage: keep the client's chunks as
        // they would have been.
        if (info.continuous_usage_stats) added += ",\"continuous_usage_stats\":false";
        added.push_back('}');
      }
      // A stream_options of another type is the engine's 400 to give; leave it alone.
    }
    if (want_logprobs) {
      if (!added.empty()) added.push_back(',');
      // Completions: a count of alternatives. 1 gives tokens and token_logprobs in every
      // version (0 left them out in some).
      added += info.op == Operation::kChat ? "\"logprobs\":true" : "\"logprobs\":1";
    }
    if (added.empty()) return std::nullopt;

    std::size_t close = body.size();
    while (close > 0 && (body[close - 1] == ' ' || body[close - 1] == '\n' ||
                         body[close - 1] == '\r' || body[close - 1] == '\t')) {
      --close;
    }
    if (close == 0 || body[close - 1] != '}') return std::nullopt;
    --close;
    std::string out;
    out.reserve(body.size() + added.size() + 1);
    out.append(body.substr(0, close));
    if (root.size() > 0) out.push_back(',');
    out += added;
    out.append(body.substr(close));
    return out;
  } catch (...) {
    return std::nullopt;
  }
}

}  // namespace infertel::openai
