#include "openai/json_util.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <openssl/evp.h>

namespace infertel::openai::internal {
namespace {

// A parser kept by a thread beyond this capacity is released after use: a 32 MiB body must
// not pin several times that much memory to every worker thread.
constexpr std::size_t kMaxRetainedCapacity = 4u << 20;

struct ThreadParser {
  std::unique_ptr<simdjson::dom::parser> parser;
  bool in_use = false;
};

ThreadParser& LocalParser() {
  thread_local ThreadParser tp;
  return tp;
}

// Byte length of the longest prefix of `s` with at most `max_chars` code points.
std::size_t Utf8PrefixBytes(std::string_view s, std::size_t max_chars, std::size_t* chars) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) continue;  // continuation byte
    if (n == max_chars) {
      *chars = n;
      return i;
    }
    ++n;
  }
  *chars = n;
  return s.size();
}

std::string_view Trunc(std::string_view s, std::size_t max_chars) {
  return TruncateUtf8(s, max_chars);
}

bool StartsWithNoCase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    char c = s[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != prefix[i]) return false;
  }
  return true;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int Base64Value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;
  if (c == '/' || c == '_') return 63;
  return -1;
}

}  // namespace

ParserLease::ParserLease() {
  ThreadParser& tp = LocalParser();
  if (tp.in_use) {
    own_ = std::make_unique<simdjson::dom::parser>();
    parser_ = own_.get();
    return;
  }
  if (!tp.parser) tp.parser = std::make_unique<simdjson::dom::parser>();
  tp.in_use = true;
  parser_ = tp.parser.get();
}

ParserLease::~ParserLease() {
  if (own_) return;
  ThreadParser& tp = LocalParser();
  tp.in_use = false;
  if (tp.parser && tp.parser->capacity() > kMaxRetainedCapacity) tp.parser.reset();
}

bool ParseObject(simdjson::dom::parser& parser, std::string_view body, simdjson::dom::object* out,
                 std::string* error) {
  if (body.empty()) {
    *error = "empty body";
    return false;
  }
  simdjson::dom::element root;
  if (auto err = parser.parse(body.data(), body.size()).get(root); err) {
    *error = "invalid JSON: ";
    *error += simdjson::error_message(err);
    return false;
  }
  if (root.get_object().get(*out)) {
    *error = "body is not a JSON object";
    return false;
  }
  return true;
}

std::optional<std::string_view> AsString(simdjson::dom::element e) {
  std::string_view s;
  if (e.get_string().get(s)) return std::nullopt;
  return s;
}

std::optional<std::int64_t> AsInt(simdjson::dom::element e) {
  switch (e.type()) {
    case simdjson::dom::element_type::INT64: {
      std::int64_t v = 0;
      if (e.get_int64().get(v)) return std::nullopt;
      return v;
    }
    case simdjson::dom::element_type::UINT64:
      return std::nullopt;  // above int64's range
    case simdjson::dom::element_type::DOUBLE: {
      double d = 0;
      if (e.get_double().get(d)) return std::nullopt;
      // Pydantic accepts a float with no fractional part for an int field.
      if (!std::isfinite(d) || d != std::floor(d) || d < -9.2e18 || d > 9.2e18) {
        return std::nullopt;
      }
      return static_cast<std::int64_t>(d);
    }
    default:
      return std::nullopt;
  }
}

std::optional<double> AsDouble(simdjson::dom::element e) {
  switch (e.type()) {
    case simdjson::dom::element_type::INT64:
    case simdjson::dom::element_type::UINT64:
    case simdjson::dom::element_type::DOUBLE: {
      double d = 0;
      if (e.get_double().get(d)) return std::nullopt;
      return d;
    }
    default:
      return std::nullopt;
  }
}

std::optional<bool> AsBool(simdjson::dom::element e) {
  bool b = false;
  if (e.get_bool().get(b)) return std::nullopt;
  return b;
}

bool IsNull(simdjson::dom::element e) { return e.is_null(); }

bool Member(simdjson::dom::object obj, std::string_view key, simdjson::dom::element* out) {
  bool found = false;
  for (auto field : obj) {
    if (field.key == key) {
      *out = field.value;
      found = true;
    }
  }
  return found;
}

bool AppendBounded(std::string* dst, std::size_t* count, std::string_view piece,
                   std::size_t max_chars) {
  if (piece.empty()) return true;
  if (*count >= max_chars) return false;
  std::size_t chars = 0;
  const std::size_t bytes = Utf8PrefixBytes(piece, max_chars - *count, &chars);
  dst->append(piece.data(), bytes);
  *count += chars;
  return bytes == piece.size();
}

// ---- MessagesWriter

void MessagesWriter::BeginMessage(std::string_view role, std::optional<std::string_view> name) {
  out_.push_back(messages_ == 0 ? '[' : ',');
  ++messages_;
  out_.append("{\"role\":");
  AppendJsonString(&out_, Trunc(role, capture_.max_length));
  if (name) {
    out_.append(",\"name\":");
    AppendJsonString(&out_, Trunc(*name, capture_.max_length));
  }
  out_.append(",\"parts\":[");
  parts_in_message_ = 0;
}

void MessagesWriter::EndMessage(std::optional<std::string_view> finish_reason) {
  out_.push_back(']');
  if (finish_reason) {
    out_.append(",\"finish_reason\":");
    AppendJsonString(&out_, Trunc(*finish_reason, capture_.max_length));
  }
  out_.push_back('}');
}

void MessagesWriter::BeginPart(std::string_view type) {
  if (parts_in_message_++ > 0) out_.push_back(',');
  out_.append("{\"type\":\"");
  out_.append(type);
  out_.push_back('"');
}

void MessagesWriter::Field(std::string_view key, std::string_view value) {
  out_.append(",\"");
  out_.append(key);
  out_.append("\":");
  AppendJsonString(&out_, Trunc(value, capture_.max_length));
}

void MessagesWriter::Text(std::string_view content) {
  BeginPart("text");
  Field("content", content);
  out_.push_back('}');
}

void MessagesWriter::Reasoning(std::string_view content) {
  BeginPart("reasoning");
  Field("content", content);
  out_.push_back('}');
}

void MessagesWriter::ToolCall(std::optional<std::string_view> id, std::string_view name,
                              std::optional<std::string_view> arguments) {
  BeginPart("tool_call");
  if (id) Field("id", *id);
  Field("name", name);
  if (arguments) Field("arguments", *arguments);
  out_.push_back('}');
}

void MessagesWriter::ToolCallResponse(std::optional<std::string_view> id,
                                      std::string_view response) {
  BeginPart("tool_call_response");
  if (id) Field("id", *id);
  Field("response", response);
  out_.push_back('}');
}

void MessagesWriter::MediaUrl(std::string_view modality, std::string_view url) {
  if (!capture_.capture_multimodal) {
    MediaPlaceholder(modality);
    return;
  }
  if (StartsWithNoCase(url, "data:")) {
    // data:[<mime>][;param]*[;base64],<payload>
    std::string_view rest = url.substr(5);
    const std::size_t comma = rest.find(',');
    std::string_view header = rest.substr(0, comma);
    std::string_view payload = comma == std::string_view::npos ? "" : rest.substr(comma + 1);
    const std::size_t semi = header.find(';');
    std::string_view mime = header.substr(0, semi);
    bool base64 = false;
    std::string_view params = semi == std::string_view::npos ? "" : header.substr(semi + 1);
    while (!params.empty()) {
      const std::size_t next = params.find(';');
      const std::string_view param = params.substr(0, next);
      if (param.size() == 6 && StartsWithNoCase(param, "base64")) base64 = true;
      if (next == std::string_view::npos) break;
      params = params.substr(next + 1);
    }
    BlobRef(modality, mime, payload, base64 ? BlobEncoding::kBase64 : BlobEncoding::kPercent);
    return;
  }
  // Only text shaped like "scheme://..." is a reference. Anything else (clients that put bare
  // base64 in the url field) is data, and is recorded as a blob reference like a data: URL.
  const std::size_t sep = url.find("://");
  bool is_uri = sep != std::string_view::npos && sep > 0 && sep <= 32 &&
                ((url[0] >= 'a' && url[0] <= 'z') || (url[0] >= 'A' && url[0] <= 'Z'));
  for (std::size_t i = 0; is_uri && i < sep; ++i) {
    const char c = url[i];
    is_uri = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             c == '+' || c == '.' || c == '-';
  }
  if (!is_uri) {
    BlobRef(modality, {}, url, BlobEncoding::kRaw);
    return;
  }
  // Keep scheme, host and path only: user info and query strings carry credentials
  // (basic auth, signed-URL signatures).
  std::string uri;
  const std::size_t authority = sep + 3;
  std::size_t path = url.find_first_of("/?#", authority);
  if (path == std::string_view::npos) path = url.size();
  std::string_view host = url.substr(authority, path - authority);
  const std::size_t at = host.rfind('@');
  if (at != std::string_view::npos) host = host.substr(at + 1);
  std::size_t end = url.find_first_of("?#", path);
  if (end == std::string_view::npos) end = url.size();
  uri.append(url.substr(0, authority));
  uri.append(host);
  uri.append(url.substr(path, end - path));
  BeginPart("uri");
  Field("modality", modality);
  Field("uri", uri);
  out_.push_back('}');
}

void MessagesWriter::MediaBase64(std::string_view modality, std::string_view mime_type,
                                 std::string_view b64) {
  if (!capture_.capture_multimodal) {
    MediaPlaceholder(modality);
    return;
  }
  BlobRef(modality, mime_type, b64, BlobEncoding::kBase64);
}

void MessagesWriter::MediaPlaceholder(std::string_view modality) {
  // Says where media was without anything of it: no URI (it may be signed), no type, no size.
  BeginPart("media");
  Field("modality", modality);
  out_.push_back('}');
}

void MessagesWriter::BlobRef(std::string_view modality, std::string_view mime_type,
                             std::string_view payload, BlobEncoding encoding) {
  // SHA-256 of the decoded bytes, fed in blocks so a large payload needs no second copy.
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  const bool hashing = ctx != nullptr && EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) == 1;
  std::uint64_t size = 0;
  unsigned char block[4096];
  std::size_t fill = 0;
  auto feed = [&](unsigned char byte) {
    block[fill++] = byte;
    ++size;
    if (fill == sizeof(block)) {
      if (hashing) EVP_DigestUpdate(ctx, block, fill);
      fill = 0;
    }
  };
  switch (encoding) {
    case BlobEncoding::kBase64: {
      std::uint32_t acc = 0;
      int bits = 0;
      for (char c : payload) {
        if (c == '=') break;
        const int v = Base64Value(c);
        if (v < 0) continue;  // whitespace and line breaks
        acc = (acc << 6) | static_cast<std::uint32_t>(v);
        bits += 6;
        if (bits >= 8) {
          bits -= 8;
          feed(static_cast<unsigned char>((acc >> bits) & 0xFF));
        }
      }
      break;
    }
    case BlobEncoding::kPercent:
      for (std::size_t i = 0; i < payload.size(); ++i) {
        if (payload[i] == '%' && i + 2 < payload.size()) {
          const int hi = HexValue(payload[i + 1]);
          const int lo = HexValue(payload[i + 2]);
          if (hi >= 0 && lo >= 0) {
            feed(static_cast<unsigned char>(hi * 16 + lo));
            i += 2;
            continue;
          }
        }
        feed(static_cast<unsigned char>(payload[i]));
      }
      break;
    case BlobEncoding::kRaw:
      for (char c : payload) feed(static_cast<unsigned char>(c));
      break;
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_len = 0;
  bool ok = hashing && (fill == 0 || EVP_DigestUpdate(ctx, block, fill) == 1) &&
            EVP_DigestFinal_ex(ctx, digest, &digest_len) == 1;
  EVP_MD_CTX_free(ctx);
  BeginPart("blob");
  Field("modality", modality);
  if (!mime_type.empty()) Field("mime_type", mime_type);
  out_.append(",\"size_bytes\":");
  out_.append(std::to_string(size));
  if (ok) {
    static constexpr char kHex[] = "0123456789abcdef";
    out_.append(",\"hash\":\"sha256:");
    for (unsigned int k = 0; k < digest_len; ++k) {
      out_.push_back(kHex[digest[k] >> 4]);
      out_.push_back(kHex[digest[k] & 0xF]);
    }
    out_.push_back('"');
  }
  out_.push_back('}');
}

std::string MessagesWriter::Take() {
  if (messages_ == 0) return {};
  out_.push_back(']');
  messages_ = 0;
  return std::move(out_);
}

// ---- shared response pieces

std::string_view GenAiFinishReason(std::string_view r) {
  if (r == "tool_calls" || r == "function_call") return "tool_call";
  if (r == "abort" || r.empty()) return "error";
  return r;
}

namespace {

// Reads member `name` of `obj` as a token count into *count. A member that is there, not null,
// and not an integer in [0, kMaxTokenCount] unsets *count and is named in *invalid: a negative
// or absurd count from an engine must not reach the token counters or the span.
void ReadTokenCount(simdjson::dom::object obj, std::string_view name,
                    std::optional<std::int64_t>* count, std::string* invalid) {
  simdjson::dom::element e;
  if (!Member(obj, name, &e) || e.is_null()) return;
  const std::optional<std::int64_t> v = AsInt(e);
  if (v && *v >= 0 && *v <= kMaxTokenCount) {
    *count = v;
    return;
  }
  count->reset();
  if (!invalid->empty()) *invalid += ',';
  *invalid += name;
}

}  // namespace

void ReadUsage(simdjson::dom::element usage_el, Usage* usage) {
  simdjson::dom::object u;
  if (usage_el.get_object().get(u)) return;
  ReadTokenCount(u, "prompt_tokens", &usage->input_tokens, &usage->invalid);
  ReadTokenCount(u, "completion_tokens", &usage->output_tokens, &usage->invalid);
  ReadTokenCount(u, "total_tokens", &usage->total_tokens, &usage->invalid);
  // A details object without cached tokens says there were none; no details object says
  // nothing (vLLM attaches it only with --enable-prompt-tokens-details, SGLang only with
  // --enable-cache-report, and older versions only when the count is above 0).
  simdjson::dom::element e;
  simdjson::dom::object details;
  if (Member(u, "prompt_tokens_details", &e) && !e.get_object().get(details)) {
    usage->cached_tokens = 0;
    ReadTokenCount(details, "cached_tokens", &usage->cached_tokens, &usage->invalid);
  }
}

bool ReadError(simdjson::dom::object obj, std::size_t max_length, ResponseInfo* info) {
  auto set_fields = [&](simdjson::dom::object o) {
    simdjson::dom::element e;
    if (Member(o, "message", &e)) {
      if (auto s = AsString(e)) info->error_message = std::string(Trunc(*s, max_length));
    }
    if (Member(o, "type", &e)) {
      if (auto s = AsString(e); s && !s->empty()) {
        info->error_type = std::string(Trunc(*s, max_length));
        return;
      }
    }
    if (Member(o, "code", &e)) {
      if (auto s = AsString(e)) {
        info->error_type = std::string(Trunc(*s, max_length));
      } else if (auto i = AsInt(e)) {
        info->error_type = std::to_string(*i);
      }
    }
  };
  simdjson::dom::element e;
  if (Member(obj, "error", &e)) {
    simdjson::dom::object inner;
    if (!e.get_object().get(inner)) {
      set_fields(inner);
      return true;
    }
    if (auto s = AsString(e)) {  // vLLM's 401: {"error":"Unauthorized"}
      info->error_message = std::string(Trunc(*s, max_length));
      return true;
    }
  }
  if (Member(obj, "object", &e)) {
    if (auto s = AsString(e); s && *s == "error") {
      set_fields(obj);
      return true;
    }
  }
  if (Member(obj, "detail", &e)) {  // FastAPI HTTPException / validation error
    if (auto s = AsString(e)) {
      info->error_message = std::string(Trunc(*s, max_length));
      return true;
    }
    simdjson::dom::array arr;
    if (!e.get_array().get(arr)) {
      // Only `msg`: validation items also echo the offending input back.
      for (auto item : arr) {
        simdjson::dom::object o;
        simdjson::dom::element msg;
        if (!item.get_object().get(o) && Member(o, "msg", &msg)) {
          if (auto s = AsString(msg)) info->error_message = std::string(Trunc(*s, max_length));
        }
        break;
      }
      return true;
    }
  }
  return false;
}

}  // namespace infertel::openai::internal

namespace infertel::openai {

std::string_view TruncateUtf8(std::string_view s, std::size_t max_chars) {
  if (s.size() <= max_chars) return s;  // bytes >= code points
  std::size_t chars = 0;
  return s.substr(0, internal::Utf8PrefixBytes(s, max_chars, &chars));
}

}  // namespace infertel::openai

namespace infertel::openai::internal {
namespace {

bool IsWs(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

std::size_t SkipWs(std::string_view s, std::size_t i) {
  while (i < s.size() && IsWs(s[i])) ++i;
  return i;
}

// i at the opening quote; returns the index after the closing quote.
std::size_t SkipString(std::string_view s, std::size_t i) {
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == '"') {
      return i + 1;
    }
  }
  return s.size();
}

// i at the first byte of a value; returns the index after it.
std::size_t SkipValue(std::string_view s, std::size_t i) {
  if (i >= s.size()) return s.size();
  if (s[i] == '"') return SkipString(s, i);
  if (s[i] == '{' || s[i] == '[') {
    std::size_t depth = 0;
    while (i < s.size()) {
      const char c = s[i];
      if (c == '"') {
        i = SkipString(s, i);
        continue;
      }
      if (c == '{' || c == '[') ++depth;
      if (c == '}' || c == ']') {
        if (--depth == 0) return i + 1;
      }
      ++i;
    }
    return s.size();
  }
  while (i < s.size() && s[i] != ',' && s[i] != '}' && s[i] != ']' && !IsWs(s[i])) ++i;
  return i;
}

struct RawMember {
  std::string_view key;  // raw, without quotes
  std::size_t key_begin, value_begin, value_end;
};

// Calls f(RawMember) for each member of the object starting at s[i] == '{'.
template <typename F>
void ForEachMember(std::string_view s, std::size_t i, F f) {
  i = SkipWs(s, i);
  if (i >= s.size() || s[i] != '{') return;
  i = SkipWs(s, i + 1);
  while (i < s.size() && s[i] == '"') {
    RawMember m;
    m.key_begin = i;
    const std::size_t key_end = SkipString(s, i);
    m.key = s.substr(i + 1, key_end - i - 2);
    i = SkipWs(s, key_end);
    if (i >= s.size() || s[i] != ':') return;
    m.value_begin = SkipWs(s, i + 1);
    m.value_end = SkipValue(s, m.value_begin);
    f(m);
    i = SkipWs(s, m.value_end);
    if (i >= s.size() || s[i] != ',') return;
    i = SkipWs(s, i + 1);
  }
}

}  // namespace

bool FindTopLevelMember(std::string_view json, std::string_view key, MemberSpan* out) {
  bool found = false;
  std::size_t prev_value_end = 0;
  bool has_prev = false;
  bool pending_first = false;  // the match was the first member: its end is the next key
  ForEachMember(json, 0, [&](const RawMember& m) {
    if (pending_first) {
      out->remove_end = m.key_begin;
      pending_first = false;
    }
    if (m.key == key) {
      found = true;
      out->value_begin = m.value_begin;
      out->value_end = m.value_end;
      out->remove_end = m.value_end;
      if (has_prev) {
        out->remove_begin = prev_value_end;  // from the comma after the previous value
      } else {
        out->remove_begin = m.key_begin;
        pending_first = true;
      }
    }
    prev_value_end = m.value_end;
    has_prev = true;
  });
  return found;
}

void NullChoiceLogprobs(std::string_view json, std::vector<Edit>* edits) {
  MemberSpan choices;
  if (!FindTopLevelMember(json, "choices", &choices)) return;
  std::size_t i = choices.value_begin;
  if (i >= json.size() || json[i] != '[') return;
  i = SkipWs(json, i + 1);
  while (i < json.size() && json[i] != ']') {
    const std::size_t end = SkipValue(json, i);
    if (json[i] == '{') {
      std::optional<std::pair<std::size_t, std::size_t>> value;
      ForEachMember(json.substr(0, end), i, [&](const RawMember& m) {
        if (m.key == "logprobs") value = {m.value_begin, m.value_end};
      });
      if (value && json.substr(value->first, value->second - value->first) != "null") {
        edits->push_back({value->first, value->second, "null"});
      }
    }
    i = SkipWs(json, end);
    if (i < json.size() && json[i] == ',') i = SkipWs(json, i + 1);
  }
}

std::string ApplyEdits(std::string_view json, std::vector<Edit> edits) {
  std::sort(edits.begin(), edits.end(),
            [](const Edit& a, const Edit& b) { return a.begin < b.begin; });
  std::string out;
  out.reserve(json.size());
  std::size_t pos = 0;
  for (const Edit& e : edits) {
    if (e.begin < pos) continue;  // overlapping: keep the first
    out.append(json.substr(pos, e.begin - pos));
    out.append(e.replace);
    pos = e.end;
  }
  out.append(json.substr(pos));
  return out;
}

}  // namespace infertel::openai::internal
