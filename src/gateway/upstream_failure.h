#pragma once
// When the engine fails the gateway: the upstream timeouts of one exchange, the reasons an
// exchange can fail on the engine's side, and what the client, the entry span and the admin
// /metrics get for each (docs/operations.md, "Upstream timeouts" and "When the engine fails
// mid-stream").

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "config/settings.h"

namespace infertel::gateway {

// The upstream timeouts of one exchange, read from the live settings when it arrives.
struct UpstreamTimeouts {
  // Opening a connection to the engine.
  std::chrono::milliseconds connect{10'000};
  // From the request's sending to the engine's first answer: the response header, and for an
  // SSE stream its first event as well (vLLM and SGLang send a stream's header at once and
  // its first event only once the request has left the queue and been prefilled).
  std::chrono::milliseconds first_byte{600'000};
  // Between two pieces of a response body or stream, once it has begun.
  std::chrono::milliseconds idle{300'000};

  static UpstreamTimeouts From(const config::Settings& settings);
};

// Why an exchange failed on the engine's side; the `reason` label of
// infertel_gateway_upstream_failures_total.
enum class UpstreamFailure : std::uint8_t {
  kConnectTimeout,    // no connection within the connect timeout
  kConnectError,      // the connection was refused or could not be made
  kFirstByteTimeout,  // connected and sent, no answer within the first-byte timeout
  kIdleTimeout,       // the answer began, then the engine went silent past the idle timeout
  kClosed,            // the engine closed or reset the connection before the answer ended
  kCount,
};
inline constexpr std::size_t kUpstreamFailureCount =
    static_cast<std::size_t>(UpstreamFailure::kCount);
std::string_view UpstreamFailureReason(UpstreamFailure f);
bool IsTimeout(UpstreamFailure f);
// Which failure ended a response once its header had arrived: a timeout before an SSE stream's
// first event is the first-byte timeout's, any later one the idle timeout's; anything else the
// engine closing (or breaking) the connection.
UpstreamFailure BodyFailure(bool timed_out, bool sse, bool body_started);

// What the client and the entry span are told about a failure.
struct FailureReport {
  unsigned status = 0;          // 504 for a timeout, 502 otherwise
  std::string_view json_type;   // the OpenAI error object's `type`
  std::string_view error_type;  // the entry span's error.type
  std::string message;          // the error object's message and the span's status message
};
// `detail` is the system's words for a failure that is not a timeout (e.g. "Connection
// refused"); `engine` is HOST:PORT.
FailureReport DescribeFailure(UpstreamFailure f, const UpstreamTimeouts& timeouts,
                              std::string_view engine, std::string_view detail);

// The bytes that end an SSE stream the engine failed, as vLLM and SGLang end a stream that
// failed inside the engine: one event carrying an OpenAI error object, then `data: [DONE]`.
// The openai clients raise an APIError on an event with an `error` field. A leading blank line
// ends an event whose `data:` line had arrived without its blank separator.
std::string SseErrorEvent(const FailureReport& report);

// Per-reason failure counters (admin /metrics) and a warning logged at most once per reason
// and interval, with the count of those not logged.
class UpstreamFailureLog {
 public:
  void Record(UpstreamFailure f, std::string_view upstream, const FailureReport& report);
  const std::atomic<std::uint64_t>& count(UpstreamFailure f) const {
    return counts_[static_cast<std::size_t>(f)];
  }

  static constexpr std::chrono::seconds kLogInterval{10};

 private:
  std::array<std::atomic<std::uint64_t>, kUpstreamFailureCount> counts_{};
  std::array<std::atomic<std::int64_t>, kUpstreamFailureCount> last_log_ns_{};
  std::array<std::atomic<std::uint64_t>, kUpstreamFailureCount> logged_at_count_{};
};

}  // namespace infertel::gateway
