#pragma once
// A JSON text read in place, one value at a time (RFC 8259), for the OTLP/JSON decoder.
//
// Why not a parser with a document: a DOM parser keeps the text, a padded copy, an index of
// 4 bytes per structural character and a tape of 8 bytes per value, about five times the
// body, so a 16 MiB OTLP/JSON request cost 100 MiB of peak memory. This cursor keeps nothing
// but the position: the decoder asks for the next value in the form the protobuf field
// wants, and skips what it does not keep without building it. Strings are given as views of
// the text when they hold no escape (most do), else unescaped into the caller's buffer.
//
// Everything RFC 8259 refuses is refused (control characters in strings, bad escapes and
// lone surrogates, leading zeros, trailing content); UTF-8 is checked once for the whole
// text by Validate. Nesting deeper than kMaxDepth arrays and objects is refused, so that the
// recursion of Skip and of the decoder is bounded.
//
// Thread-safety: one cursor per thread; it reads `text`, which must outlive it.

#include <cstddef>
#include <string>
#include <string_view>

namespace infertel::otlp_json {

class JsonCursor {
 public:
  static constexpr int kMaxDepth = 256;

  enum class Kind : char { kObject, kArray, kString, kNumber, kTrue, kFalse, kNull, kBad };

  explicit JsonCursor(std::string_view text)
      : begin_(text.data()), p_(text.data()), end_(text.data() + text.size()) {}

  // Whether the whole text is valid UTF-8 (sets the error when not).
  bool Validate();
  // The kind of the next value, whitespace skipped; nothing consumed. kBad at the end of the
  // text or on a byte that starts no value.
  Kind Peek();

  // '{' then its members: NextMember gives each key (a view of the text, or of `*buf` when it
  // holds escapes) and leaves the cursor before its value, which the caller must read or
  // Skip; at '}' it sets *done. `first`: no member read yet.
  bool EnterObject();
  bool NextMember(bool first, std::string_view* key, std::string* buf, bool* done);
  // '[' then its elements: NextElement leaves the cursor before an element, or sets *done.
  bool EnterArray();
  bool NextElement(bool first, bool* done);

  // A string, unescaped: a view of the text, or of `*buf` when it holds escapes.
  bool String(std::string_view* out, std::string* buf);
  // A number's text, checked against the grammar; *integer when it has no fraction or exponent.
  bool Number(std::string_view* text, bool* integer);
  // true, false or null.
  bool Literal(bool* value);
  // Any value, checked and not kept.
  bool Skip();
  // Whether only whitespace is left.
  bool AtEnd();

  const std::string& error() const { return error_; }

 private:
  void SkipSpace();
  bool Fail(std::string_view what);
  bool Consume(char c, std::string_view what);
  bool Enter(char open, std::string_view what);
  bool StringBody(std::string* buf, std::string_view* out);
  bool Escape(std::string* buf);
  bool Hex4(unsigned* out);
  bool Digits();

  const char* begin_;
  const char* p_;
  const char* end_;
  int depth_ = 0;
  std::string error_;
};

}  // namespace infertel::otlp_json
