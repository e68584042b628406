#include "gateway/sse_relay.h"

namespace infertel::gateway {

void SseRelay::Feed(std::string_view bytes, std::string* out) {
  while (!bytes.empty()) {
    auto nl = bytes.find('\n');
    if (nl == std::string_view::npos) {
      if (partial_.size() + bytes.size() > kMaxLineBytes) {
        // A line this long is no OpenAI chunk; stop holding it back.
        out->append(partial_);
        out->append(bytes);
        partial_.clear();
      } else {
        partial_.append(bytes);
      }
      return;
    }
    std::string_view piece = bytes.substr(0, nl + 1);
    bytes.remove_prefix(nl + 1);
    if (partial_.empty()) {
      Line(piece, out);
    } else {
      partial_.append(piece);
      std::string line = std::move(partial_);
      partial_.clear();
      Line(line, out);
    }
  }
}

void SseRelay::Finish(std::string* out) {
  out->append(partial_);
  partial_.clear();
}

void SseRelay::Line(std::string_view line, std::string* out) {
  std::string_view content = line;
  std::string_view terminator;
  if (content.size() >= 2 && content.substr(content.size() - 2) == "\r\n") {
    terminator = content.substr(content.size() - 2);
    content.remove_suffix(2);
  } else if (!content.empty() && content.back() == '\n') {
    terminator = content.substr(content.size() - 1);
    content.remove_suffix(1);
  }
  if (content.empty()) {
    if (drop_next_blank_) {
      drop_next_blank_ = false;
      return;
    }
    out->append(line);
    return;
  }
  drop_next_blank_ = false;
  if (content.rfind("data:", 0) != 0) {
    out->append(line);  // event:, id:, retry:, comments
    return;
  }
  std::string_view payload = content.substr(5);
  if (!payload.empty() && payload.front() == ' ') payload.remove_prefix(1);
  auto verdict = observer_->OnData(payload, &rewritten_);
  if (on_data_) on_data_();
  switch (verdict) {
    case openai::StreamObserver::Verdict::kForward:
      out->append(line);
      break;
    case openai::StreamObserver::Verdict::kDrop:
      drop_next_blank_ = true;
      break;
    case openai::StreamObserver::Verdict::kRewrite:
      out->append("data: ");
      out->append(rewritten_);
      out->append(terminator);
      break;
  }
}

}  // namespace infertel::gateway
