#include "receiver/grpc_session.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>

namespace infertel::receiver::internal {
namespace {

constexpr std::size_t kPrefixBytes = 5;
constexpr std::int32_t kMaxWindow = INT32_MAX;

std::int32_t Window(std::size_t bytes) {
  return static_cast<std::int32_t>(std::min<std::size_t>(bytes, kMaxWindow));
}

}  // namespace

// nghttp2 calls these with the GrpcSession as user data.
struct GrpcSession::Callbacks {
  static GrpcSession& Self(void* p) { return *static_cast<GrpcSession*>(p); }

  static int BeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* p) {
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    GrpcSession& s = Self(p);
    const std::int32_t id = frame->hd.stream_id;
    s.calls_[id] = std::make_unique<GrpcCall>(id, s.next_serial_++, s.max_message_bytes_,
                                              s.limits_.max_header_list_bytes);
    return 0;
  }

  static int Header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                    std::size_t namelen, const std::uint8_t* value, std::size_t valuelen,
                    std::uint8_t, void* p) {
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    if (GrpcCall* call = Self(p).Find(frame->hd.stream_id))
      call->AddHeader({reinterpret_cast<const char*>(name), namelen},
                      {reinterpret_cast<const char*>(value), valuelen});
    return 0;
  }

  static int FrameRecv(nghttp2_session*, const nghttp2_frame* frame, void* p) {
    GrpcSession& s = Self(p);
    const bool end_stream = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
    switch (frame->hd.type) {
      case NGHTTP2_SETTINGS:
        if ((frame->hd.flags & NGHTTP2_FLAG_ACK) == 0) s.handshake_done_ = true;
        break;
      case NGHTTP2_RST_STREAM:
        s.ChargeReset();
        break;
      case NGHTTP2_HEADERS:
        if (GrpcCall* call = s.Find(frame->hd.stream_id)) {
          if (frame->headers.cat == NGHTTP2_HCAT_REQUEST) s.OnHeadersEnd(call, s.now_);
          s.OnFrameEnd(call, end_stream);
        }
        break;
      case NGHTTP2_DATA:
        if (GrpcCall* call = s.Find(frame->hd.stream_id)) s.OnFrameEnd(call, end_stream);
        break;
      default:
        break;
    }
    return 0;
  }

  static int DataChunk(nghttp2_session* session, std::uint8_t, std::int32_t stream_id,
                       const std::uint8_t* data, std::size_t len, void* p) {
    GrpcSession& s = Self(p);
    // The stream's own window is given back at once: what one stream may hold is bounded by
    // the message limit (MessageReader), and what all hold by the connection's window, which is
    // given back only when a call lets its bytes go (ReleaseHeld).
    nghttp2_session_consume_stream(session, stream_id, len);
    GrpcCall* call = s.Find(stream_id);
    if (call == nullptr || call->phase != GrpcCall::Phase::kReading) {
      nghttp2_session_consume_connection(session, len);
      return 0;
    }
    s.OnData(call, {reinterpret_cast<const char*>(data), len});
    return 0;
  }

  static int StreamClose(nghttp2_session*, std::int32_t stream_id, std::uint32_t, void* p) {
    Self(p).CloseCall(stream_id);
    return 0;
  }

  static int FrameSend(nghttp2_session* session, const nghttp2_frame* frame, void* p) {
    GrpcSession& s = Self(p);
    if (frame->hd.type == NGHTTP2_RST_STREAM &&
        frame->rst_stream.error_code == NGHTTP2_REFUSED_STREAM) {
      s.stats_->Refuse(GrpcRefusal::kStreams,
                       fmt::format("a stream over the {} a connection may open at once",
                                   s.limits_.max_concurrent_streams));
      s.ChargeReset();
    } else if (frame->hd.type == NGHTTP2_GOAWAY && !s.our_goaway_ &&
               frame->goaway.error_code != NGHTTP2_NO_ERROR) {
      s.stats_->Refuse(GrpcRefusal::kProtocol,
                       fmt::format("GOAWAY {}", nghttp2_http2_strerror(frame->goaway.error_code)));
    } else if (frame->hd.type == NGHTTP2_HEADERS && (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
      // A refusal that does not want the rest of the request: stop the sender.
      GrpcCall* call = s.Find(frame->hd.stream_id);
      if (call != nullptr && call->stop_request &&
          nghttp2_session_get_stream_remote_close(session, frame->hd.stream_id) == 0)
        nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, frame->hd.stream_id,
                                  NGHTTP2_NO_ERROR);
    }
    return 0;
  }

  static ssize_t ReadBody(nghttp2_session* session, std::int32_t stream_id, std::uint8_t* buf,
                          std::size_t length, std::uint32_t* flags, nghttp2_data_source* source,
                          void*) {
    auto* call = static_cast<GrpcCall*>(source->ptr);
    bool eof = false;
    const std::size_t n = call->ReadBody(buf, length, &eof);
    if (eof) {
      *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
      const auto& t = call->trailers();
      if (nghttp2_submit_trailer(session, stream_id, t.data(), t.size()) != 0)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    return static_cast<ssize_t>(n);
  }
};

GrpcSession::GrpcSession(const GrpcServerLimits& limits, std::size_t max_message_bytes,
                         GrpcStats* stats, BufferBudget* budget, Handler* handler)
    : limits_(limits),
      max_message_bytes_(max_message_bytes),
      stats_(stats),
      budget_(budget),
      handler_(handler),
      reset_tokens_(std::max<std::uint32_t>(1, limits.max_resets_per_second)) {
  nghttp2_session_callbacks* cb = nullptr;
  nghttp2_session_callbacks_new(&cb);
  nghttp2_session_callbacks_set_on_begin_headers_callback(cb, Callbacks::BeginHeaders);
  nghttp2_session_callbacks_set_on_header_callback(cb, Callbacks::Header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cb, Callbacks::FrameRecv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, Callbacks::DataChunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, Callbacks::StreamClose);
  nghttp2_session_callbacks_set_on_frame_send_callback(cb, Callbacks::FrameSend);
  nghttp2_option* opt = nullptr;
  nghttp2_option_new(&opt);
  // Flow control by hand: the connection window comes back only as calls let bytes go.
  nghttp2_option_set_no_auto_window_update(opt, 1);
  nghttp2_option_set_no_closed_streams(opt, 1);
  nghttp2_option_set_max_continuations(opt, 8);
  // nghttp2's own reset limit (CVE-2023-44487) behind ours, which answers first and counts.
  const std::uint64_t resets = std::max<std::uint32_t>(1, limits.max_resets_per_second);
  nghttp2_option_set_stream_reset_rate_limit(opt, 2 * resets, resets);
  nghttp2_session_server_new2(&session_, cb, this, opt);
  nghttp2_option_del(opt);
  nghttp2_session_callbacks_del(cb);
  if (session_ == nullptr) return;
  // One stream may be sent a whole message; the connection two (docs/limits.md).
  const std::size_t stream_window = max_message_bytes + kPrefixBytes;
  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, limits.max_concurrent_streams},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, limits.max_header_list_bytes},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, static_cast<std::uint32_t>(Window(stream_window))},
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
  };
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, std::size(settings));
  nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0, Window(2 * stream_window));
}

GrpcSession::~GrpcSession() {
  // Calls still holding bytes give them back to the shared budget.
  for (auto& [id, call] : calls_) budget_->Give(call->held);
  nghttp2_session_del(session_);
}

bool GrpcSession::Receive(std::string_view bytes, GrpcClock::time_point now) {
  if (session_ == nullptr) return false;
  now_ = now;
  const ssize_t rv = nghttp2_session_mem_recv(
      session_, reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  if (rv < 0) {
    stats_->Refuse(GrpcRefusal::kProtocol,
                   fmt::format("connection closed: {}", nghttp2_strerror(static_cast<int>(rv))));
    our_goaway_ = true;
    const bool flood = rv == NGHTTP2_ERR_FLOODED || rv == NGHTTP2_ERR_TOO_MANY_CONTINUATIONS;
    nghttp2_session_terminate_session(session_,
                                      flood ? NGHTTP2_ENHANCE_YOUR_CALM : NGHTTP2_PROTOCOL_ERROR);
    return false;
  }
  return Alive();
}

void GrpcSession::TakeOutput(std::string* out, std::size_t max) {
  if (session_ == nullptr) return;
  while (out->size() < max) {
    const std::uint8_t* data = nullptr;
    const ssize_t n = nghttp2_session_mem_send(session_, &data);
    if (n <= 0) break;
    out->append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
  }
}

bool GrpcSession::Alive() const {
  return session_ != nullptr &&
         (nghttp2_session_want_read(session_) || nghttp2_session_want_write(session_));
}

void GrpcSession::GoAway(std::uint32_t error_code) {
  if (session_ == nullptr) return;
  our_goaway_ = true;
  nghttp2_session_terminate_session(session_, error_code);
}

GrpcCall* GrpcSession::Find(std::int32_t stream_id) const {
  auto it = calls_.find(stream_id);
  return it == calls_.end() ? nullptr : it->second.get();
}

void GrpcSession::OnHeadersEnd(GrpcCall* call, GrpcClock::time_point now) {
  auto refusal = call->CheckHeaders(now);
  if (!refusal) return;
  if (call->signal()) handler_->OnMalformed(*call->signal());
  Refuse(call, refusal->reason, refusal->answer);
}

void GrpcSession::OnData(GrpcCall* call, std::string_view bytes) {
  if (!budget_->Take(bytes.size())) {
    nghttp2_session_consume_connection(session_, bytes.size());
    GrpcAnswer a = GrpcAnswer::Status(kGrpcUnavailable, std::string(kBufferFullMessage));
    a.retry_info = true;
    a.stop_request = true;
    Refuse(call, GrpcRefusal::kBufferFull, a);
    return;
  }
  call->held += bytes.size();
  switch (call->reader().Feed(bytes)) {
    case MessageReader::State::kTooLarge:
      if (call->signal()) handler_->OnMalformed(*call->signal());
      Refuse(call, GrpcRefusal::kMessageSize, [&] {
        GrpcAnswer a = GrpcAnswer::Status(
            kGrpcResourceExhausted,
            fmt::format("message of {} bytes is larger than the limit of {} bytes",
                        call->reader().announced(), max_message_bytes_));
        a.stop_request = true;
        return a;
      }());
      break;
    case MessageReader::State::kBadFlag:
      if (call->signal()) handler_->OnMalformed(*call->signal());
      Refuse(call, GrpcRefusal::kMalformed,
             GrpcAnswer::Status(kGrpcInternal, "compressed-flag byte is neither 0 nor 1"));
      break;
    default:
      break;  // the message is dispatched at the end of its frame (OnFrameEnd)
  }
}

void GrpcSession::OnFrameEnd(GrpcCall* call, bool end_stream) {
  if (call->phase != GrpcCall::Phase::kReading) return;
  MessageReader& reader = call->reader();
  if (reader.state() == MessageReader::State::kComplete) {
    if (reader.compressed() && !call->gzip()) {
      if (call->signal()) handler_->OnMalformed(*call->signal());
      Refuse(call, GrpcRefusal::kMalformed,
             GrpcAnswer::Status(kGrpcInternal, "compressed message without a grpc-encoding"));
      return;
    }
    Dispatch(call);
  } else if (end_stream) {
    if (call->signal()) handler_->OnMalformed(*call->signal());
    Refuse(call, GrpcRefusal::kMalformed,
           GrpcAnswer::Status(kGrpcInternal,
                              reader.state() == MessageReader::State::kPrefix && reader.kept() == 0
                                  ? "the request ended without a message"
                                  : "the request ended inside its message"));
  }
}

void GrpcSession::Refuse(GrpcCall* call, GrpcRefusal reason, const GrpcAnswer& answer) {
  stats_->Refuse(reason,
                 answer.message.empty() ? std::string(GrpcRefusalName(reason)) : answer.message);
  call->phase = GrpcCall::Phase::kDispatched;  // so that Answer takes it
  ++requests_;
  Answer(call->stream_id(), call->serial(), answer);
}

void GrpcSession::Dispatch(GrpcCall* call) {
  call->phase = GrpcCall::Phase::kDispatched;
  ++requests_;
  handler_->OnRequest(*Pending(call->stream_id(), call->serial()));
}

std::optional<GrpcRequest> GrpcSession::Pending(std::int32_t stream_id,
                                                std::uint64_t serial) const {
  GrpcCall* call = Find(stream_id);
  if (call == nullptr || call->serial() != serial || call->phase != GrpcCall::Phase::kDispatched ||
      !call->signal())
    return std::nullopt;
  return GrpcRequest{
      stream_id,       serial, *call->signal(), call->reader().body(), call->reader().compressed(),
      call->deadline()};
}

bool GrpcSession::Answer(std::int32_t stream_id, std::uint64_t serial, const GrpcAnswer& answer) {
  GrpcCall* call = Find(stream_id);
  if (call == nullptr || call->serial() != serial || call->phase != GrpcCall::Phase::kDispatched)
    return false;
  call->phase = GrpcCall::Phase::kAnswered;
  ++answered_;
  ReleaseHeld(call);
  call->stop_request = answer.stop_request;
  call->SetAnswer(answer);
  const auto& h = call->headers();
  nghttp2_data_provider body{};
  body.source.ptr = call;
  body.read_callback = Callbacks::ReadBody;
  nghttp2_submit_response(session_, stream_id, h.data(), h.size(),
                          call->has_body() ? &body : nullptr);
  return true;
}

void GrpcSession::ReleaseHeld(GrpcCall* call) {
  if (call->held == 0) return;
  budget_->Give(call->held);
  nghttp2_session_consume_connection(session_, call->held);
  call->held = 0;
  call->reader().Release();
}

void GrpcSession::CloseCall(std::int32_t stream_id) {
  auto it = calls_.find(stream_id);
  if (it == calls_.end()) return;
  ReleaseHeld(it->second.get());
  calls_.erase(it);
}

void GrpcSession::ChargeReset() {
  const double rate = std::max<std::uint32_t>(1, limits_.max_resets_per_second);
  const GrpcClock::time_point now = GrpcClock::now();
  if (reset_refill_ != GrpcClock::time_point{}) {
    const double seconds = std::chrono::duration<double>(now - reset_refill_).count();
    reset_tokens_ = std::min(rate, reset_tokens_ + seconds * rate);
  }
  reset_refill_ = now;
  reset_tokens_ -= 1;
  if (reset_tokens_ >= 0 || our_goaway_) return;
  stats_->Refuse(GrpcRefusal::kResetRate,
                 fmt::format("more than {} stream resets a second on one connection: GOAWAY",
                             limits_.max_resets_per_second));
  GoAway(NGHTTP2_ENHANCE_YOUR_CALM);
}

}  // namespace infertel::receiver::internal
