// The OTLP/gRPC receiver's HTTP/2 session (receiver/grpc_session.h): raw bytes after the client
// preface go into a server-side nghttp2 session with the receiver's own callbacks and bounds;
// the service is a stub that inflates gzip messages with the bound and answers at once.
// Promise: no crash, bounded memory (libFuzzer's -rss_limit_mb), every call handed to the
// service answered, and every byte taken from the shared budget given back.
#include <cstdlib>
#include <string>
#include <string_view>

#include "receiver/grpc_session.h"

namespace {

using namespace infertel::receiver;
using namespace infertel::receiver::internal;

constexpr std::size_t kMaxMessage = 64u << 10;

class AnswerAtOnce final : public GrpcSession::Handler {
 public:
  GrpcSession* session = nullptr;
  void OnRequest(const GrpcRequest& r) override {
    std::string inflated;
    if (r.gzip && InflateBounded(r.message, kMaxMessage, &inflated) == InflateResult::kTooLarge &&
        inflated.size() > kMaxMessage)
      std::abort();  // the inflate bound was passed
    GrpcAnswer a = GrpcAnswer::Status(r.message.size() % 2 ? kGrpcInternal : kGrpcOk, "x\n%");
    if (!session->Answer(r.stream_id, r.serial, a)) std::abort();  // a handed call is live
  }
  void OnMalformed(Signal) override {}
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  GrpcServerLimits limits;
  limits.max_concurrent_streams = 8;
  limits.max_header_list_bytes = 4096;
  limits.max_buffered_bytes = 256u << 10;
  static GrpcStats stats;  // one for every input: its log lines stay rate-limited
  BufferBudget budget(limits.max_buffered_bytes);
  AnswerAtOnce handler;
  {
    GrpcSession session(limits, kMaxMessage, &stats, &budget, &handler);
    handler.session = &session;
    // The first byte picks the size of the pieces the bytes arrive in.
    const std::size_t piece = 1 + data[0] % 64 * 64;
    std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
    const auto now = GrpcClock::now();
    bool alive = session.Receive("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", now);
    std::string out;
    while (alive && !rest.empty()) {
      const std::size_t n = std::min(piece, rest.size());
      alive = session.Receive(rest.substr(0, n), now);
      rest.remove_prefix(n);
      out.clear();
      session.TakeOutput(&out);
    }
    if (session.requests() != session.answered()) std::abort();
  }
  if (budget.used() != 0) std::abort();  // bytes taken and never given back
  return 0;
}
