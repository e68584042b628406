#pragma once
// Relays an SSE byte stream line by line: each `data:` payload goes through a
// StreamObserver, which may forward it, drop it (with its blank separator) or rewrite it;
// every other byte passes unchanged. Bytes are handed back as soon as a line is complete,
// so the client gets each event as the engine sends it.

#include <functional>
#include <string>
#include <string_view>

#include "openai/openai.h"

namespace infertel::gateway {

class SseRelay {
 public:
  explicit SseRelay(openai::StreamObserver* observer) : observer_(observer) {}
  // Called after each `data:` payload went through the observer (e.g. to record the token
  // detail of that event). Optional; runs on the caller's thread.
  void set_on_data(std::function<void()> on_data) { on_data_ = std::move(on_data); }

  // Consumes the next bytes from the engine and appends what the client should receive to
  // *out. An incomplete last line is kept until its end arrives. Bounded: a single line
  // longer than max_line_bytes is passed through unobserved.
  void Feed(std::string_view bytes, std::string* out);
  // End of stream: passes any incomplete last line through unchanged.
  void Finish(std::string* out);

  static constexpr std::size_t kMaxLineBytes = 8 << 20;

 private:
  void Line(std::string_view line, std::string* out);  // one line with its terminator
  openai::StreamObserver* observer_;
  std::string partial_;
  bool drop_next_blank_ = false;
  std::string rewritten_;
  std::function<void()> on_data_;
};

}  // namespace infertel::gateway
