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
  kInvalidStatus,     // the engine's status code is outside 100–599
  kMalformed,         // the engine's answer broke HTTP/1.1 framing (a bad chunk size, header)
  kCount,
};
inline constexpr std::size_t kUpstreamFailureCount =
    static_cast<std::size_t>(UpstreamFailure::kCount);
std::string_view UpstreamFailureReason(UpstreamFailure f);
bool IsTimeout(UpstreamFailure f);
// Which failure ended a response once its header had arrived: a timeout before an SSE stream's
// first event is the first-byte timeout's, any later one the idle timeout's; a framing error
// (`malformed`) kMalformed; anything else the engine closing (or breaking) the connection.
UpstreamFailure BodyFailure(bool timed_out, bool malformed, bool sse, bool body_started);

// What the client and the entry span are told about a failure.
struct FailureReport {
  unsigned status = 0;          // 504 for a timeout, 502 otherwise
  std::string_view json_type;   // the OpenAI error object's `type`
  std::string_view error_type;  // the entry span's error.type
  std::string message;          // the error object's message and the span's status message
};
// `detail` is the system's words for a failure that is not a timeout (e.g. "Connection
// refused"), or for kInvalidStatus the status the engine sent; `engine` is HOST:PORT.
FailureReport DescribeFailure(UpstreamFailure f, const UpstreamTimeouts& timeouts,
                              std::string_view engine, std::string_view detail);

// The bytes that end an SSE stream the engine failed, as vLLM and SGLang end a stream that
// failed inside the engine: one event carrying an OpenAI error object, then `data: [DONE]`.
// The openai clients raise an APIError on an event with an `error` field. A leading blank line
// ends an event whose `data:` line had arrived without its blank separator.
std::string SseErrorEvent(const FailureReport& report);

// Counters by reason (admin /metrics) and a warning logged at most once per reason and
// interval, with the count of those not logged.
template <std::size_t kReasons>
class ReasonLog {
 public:
  // Counts one for `reason`; returns true when it is to be logged, with *unlogged set to how
  // many of the reason went unlogged since its last message.
  bool Count(std::size_t reason, std::uint64_t* unlogged);
  const std::atomic<std::uint64_t>& count(std::size_t reason) const { return counts_[reason]; }

  static constexpr std::chrono::seconds kLogInterval{10};

 private:
  std::array<std::atomic<std::uint64_t>, kReasons> counts_{};
  std::array<std::atomic<std::int64_t>, kReasons> last_log_ns_{};
  std::array<std::atomic<std::uint64_t>, kReasons> logged_at_count_{};
};

// Failures on the engine's side: infertel_gateway_upstream_failures_total{reason}.
class UpstreamFailureLog {
 public:
  void Record(UpstreamFailure f, std::string_view upstream, const FailureReport& report);
  const std::atomic<std::uint64_t>& count(UpstreamFailure f) const {
    return log_.count(static_cast<std::size_t>(f));
  }

 private:
  ReasonLog<kUpstreamFailureCount> log_;
};

// What an engine answered that the gateway does not take as it came, though the answer itself
// reaches the client: infertel_gateway_invalid_upstream_answers_total{reason}.
enum class InvalidAnswer : std::uint8_t {
  kUsage,    // usage counts that are not token counts: dropped from the span and the metrics
  kNotJson,  // a 2xx body on a JSON endpoint that is not JSON: the entry span is an error
  kUnfinishedStream,  // a stream ended without a finish_reason for a choice: an error
  kCount,
};
inline constexpr std::size_t kInvalidAnswerCount = static_cast<std::size_t>(InvalidAnswer::kCount);
std::string_view InvalidAnswerReason(InvalidAnswer a);

class InvalidAnswerLog {
 public:
  // `what` says what was wrong, for the log line.
  void Record(InvalidAnswer a, std::string_view upstream, std::string_view what);
  const std::atomic<std::uint64_t>& count(InvalidAnswer a) const {
    return log_.count(static_cast<std::size_t>(a));
  }

 private:
  ReasonLog<kInvalidAnswerCount> log_;
};

}  // namespace infertel::gateway
