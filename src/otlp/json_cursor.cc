#include "otlp/json_cursor.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <cstdint>
#include <cstring>

namespace infertel::otlp_json {
namespace {

void AppendUtf8(std::string* out, unsigned cp) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

bool Plain(char c) { return c != '"' && c != '\\' && static_cast<unsigned char>(c) >= 0x20; }

// The end of the run of plain string bytes (not a quote, a backslash or a control character)
// from `p`: eight bytes at a time while none of them is one, then byte by byte. Strings are
// most of an OTLP/JSON text, and this loop most of the cursor's time.
const char* PlainRun(const char* p, const char* end) {
  constexpr std::uint64_t kOnes = 0x0101010101010101ull;
  constexpr std::uint64_t kHighs = 0x8080808080808080ull;
  while (end - p >= 8) {
    std::uint64_t w = 0;
    std::memcpy(&w, p, 8);
    const std::uint64_t quote = w ^ (kOnes * '"');
    const std::uint64_t backslash = w ^ (kOnes * '\\');
    // A byte that is zero in `quote` or `backslash`, or below 0x20 in `w`, sets its high bit
    // (a borrow may set others above it: then the byte loop decides).
    const std::uint64_t hit =
        ((quote - kOnes) & ~quote) | ((backslash - kOnes) & ~backslash) | ((w - kOnes * 0x20) & ~w);
    if ((hit & kHighs) != 0) break;
    p += 8;
  }
  while (p < end && Plain(*p)) ++p;
  return p;
}

}  // namespace

bool JsonCursor::Fail(std::string_view what) {
  if (error_.empty()) error_ = fmt::format("{} at byte {}", what, p_ - begin_);
  return false;
}

bool JsonCursor::Validate() {
  if (simdjson::validate_utf8(begin_, static_cast<std::size_t>(end_ - begin_))) return true;
  error_ = "the text is not valid UTF-8";
  return false;
}

void JsonCursor::SkipSpace() {
  while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
}

bool JsonCursor::Consume(char c, std::string_view what) {
  SkipSpace();
  if (p_ >= end_ || *p_ != c) return Fail(what);
  ++p_;
  return true;
}

JsonCursor::Kind JsonCursor::Peek() {
  SkipSpace();
  if (p_ >= end_) return Kind::kBad;
  switch (*p_) {
    case '{':
      return Kind::kObject;
    case '[':
      return Kind::kArray;
    case '"':
      return Kind::kString;
    case 't':
      return Kind::kTrue;
    case 'f':
      return Kind::kFalse;
    case 'n':
      return Kind::kNull;
    default:
      return *p_ == '-' || IsDigit(*p_) ? Kind::kNumber : Kind::kBad;
  }
}

bool JsonCursor::Enter(char open, std::string_view what) {
  SkipSpace();
  if (p_ >= end_ || *p_ != open) return Fail(what);
  if (++depth_ > kMaxDepth) return Fail("nesting too deep");
  ++p_;
  return true;
}

bool JsonCursor::EnterObject() { return Enter('{', "expected an object"); }
bool JsonCursor::EnterArray() { return Enter('[', "expected an array"); }

bool JsonCursor::NextMember(bool first, std::string_view* key, std::string* buf, bool* done) {
  SkipSpace();
  *done = p_ < end_ && *p_ == '}';
  if (*done) {
    ++p_;
    --depth_;
    return true;
  }
  if (!first && !Consume(',', "expected ',' or '}'")) return false;
  if (!Consume('"', "expected a member name")) return false;
  if (!StringBody(buf, key)) return false;
  return Consume(':', "expected ':'");
}

bool JsonCursor::NextElement(bool first, bool* done) {
  SkipSpace();
  *done = p_ < end_ && *p_ == ']';
  if (*done) {
    ++p_;
    --depth_;
    return true;
  }
  return first || Consume(',', "expected ',' or ']'");
}

bool JsonCursor::String(std::string_view* out, std::string* buf) {
  return Consume('"', "expected a string") && StringBody(buf, out);
}

// After the opening quote. Without an escape the string is a view of the text; with one, it
// is unescaped into *buf (only checked when buf is null, as Skip wants).
bool JsonCursor::StringBody(std::string* buf, std::string_view* out) {
  const char* start = p_;
  p_ = PlainRun(p_, end_);
  if (p_ < end_ && *p_ == '"') {
    if (out != nullptr) *out = std::string_view(start, static_cast<std::size_t>(p_ - start));
    ++p_;
    return true;
  }
  if (buf != nullptr) buf->assign(start, p_);
  while (p_ < end_) {
    const char* run = p_;
    p_ = PlainRun(p_, end_);
    if (buf != nullptr) buf->append(run, p_);
    if (p_ >= end_) break;
    if (*p_ == '"') {
      ++p_;
      if (out != nullptr) *out = buf != nullptr ? std::string_view(*buf) : std::string_view();
      return true;
    }
    if (*p_ != '\\') return Fail("control character in a string");
    if (!Escape(buf)) return false;
  }
  return Fail("unterminated string");
}

bool JsonCursor::Hex4(unsigned* out) {
  if (end_ - p_ < 4) return Fail("bad \\u escape");
  unsigned v = 0;
  for (int i = 0; i < 4; ++i, ++p_) {
    const char c = *p_;
    const int d = IsDigit(c)               ? c - '0'
                  : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                  : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                           : -1;
    if (d < 0) return Fail("bad \\u escape");
    v = v * 16 + static_cast<unsigned>(d);
  }
  *out = v;
  return true;
}

bool JsonCursor::Escape(std::string* buf) {
  ++p_;  // the backslash
  if (p_ >= end_) return Fail("unterminated string");
  const char c = *p_++;
  char plain = 0;
  switch (c) {
    case '"':
    case '\\':
    case '/':
      plain = c;
      break;
    case 'b':
      plain = '\b';
      break;
    case 'f':
      plain = '\f';
      break;
    case 'n':
      plain = '\n';
      break;
    case 'r':
      plain = '\r';
      break;
    case 't':
      plain = '\t';
      break;
    case 'u': {
      unsigned cp = 0;
      if (!Hex4(&cp)) return false;
      if (cp >= 0xDC00 && cp <= 0xDFFF) return Fail("lone surrogate");
      if (cp >= 0xD800 && cp <= 0xDBFF) {
        unsigned low = 0;
        if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return Fail("lone surrogate");
        p_ += 2;
        if (!Hex4(&low)) return false;
        if (low < 0xDC00 || low > 0xDFFF) return Fail("lone surrogate");
        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
      }
      if (buf != nullptr) AppendUtf8(buf, cp);
      return true;
    }
    default:
      return Fail("bad escape");
  }
  if (buf != nullptr) buf->push_back(plain);
  return true;
}

bool JsonCursor::Digits() {
  const char* start = p_;
  while (p_ < end_ && IsDigit(*p_)) ++p_;
  return p_ != start;
}

bool JsonCursor::Number(std::string_view* text, bool* integer) {
  SkipSpace();
  const char* start = p_;
  if (p_ < end_ && *p_ == '-') ++p_;
  if (p_ < end_ && *p_ == '0')
    ++p_;
  else if (p_ >= end_ || !IsDigit(*p_) || !Digits())
    return Fail("bad number");
  *integer = true;
  if (p_ < end_ && *p_ == '.') {
    ++p_;
    if (!Digits()) return Fail("bad number");
    *integer = false;
  }
  if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
    ++p_;
    if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
    if (!Digits()) return Fail("bad number");
    *integer = false;
  }
  *text = std::string_view(start, static_cast<std::size_t>(p_ - start));
  return true;
}

bool JsonCursor::Literal(bool* value) {
  SkipSpace();
  const auto match = [this](std::string_view word) {
    if (static_cast<std::size_t>(end_ - p_) < word.size() ||
        std::memcmp(p_, word.data(), word.size()) != 0)
      return false;
    p_ += word.size();
    return true;
  };
  *value = match("true");
  if (*value || match("false") || match("null")) return true;
  return Fail("expected true, false or null");
}

bool JsonCursor::Skip() {
  bool done = false;
  switch (Peek()) {
    case Kind::kObject: {
      if (!EnterObject()) return false;
      std::string_view key;
      for (bool first = true;; first = false) {
        if (!NextMember(first, &key, nullptr, &done)) return false;
        if (done) return true;
        if (!Skip()) return false;
      }
    }
    case Kind::kArray: {
      if (!EnterArray()) return false;
      for (bool first = true;; first = false) {
        if (!NextElement(first, &done)) return false;
        if (done) return true;
        if (!Skip()) return false;
      }
    }
    case Kind::kString:
      ++p_;
      return StringBody(nullptr, nullptr);
    case Kind::kNumber: {
      std::string_view text;
      return Number(&text, &done);
    }
    case Kind::kTrue:
    case Kind::kFalse:
    case Kind::kNull:
      return Literal(&done);
    case Kind::kBad:
      break;
  }
  return Fail("expected a value");
}

bool JsonCursor::AtEnd() {
  SkipSpace();
  return p_ == end_ || Fail("trailing content");
}

}  // namespace infertel::otlp_json
