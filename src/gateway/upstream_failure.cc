#include "gateway/upstream_failure.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/semconv.h"
#include "http/simple_server.h"

namespace infertel::gateway {

namespace sc = semconv;

UpstreamTimeouts UpstreamTimeouts::From(const config::Settings& settings) {
  using config::Key;
  using ms = std::chrono::milliseconds;
  return {ms(settings.GetInt(Key::kUpstreamConnectTimeoutMs)),
          ms(settings.GetInt(Key::kUpstreamFirstByteTimeoutMs)),
          ms(settings.GetInt(Key::kUpstreamIdleTimeoutMs))};
}

std::string_view UpstreamFailureReason(UpstreamFailure f) {
  switch (f) {
    case UpstreamFailure::kConnectTimeout:
      return "connect_timeout";
    case UpstreamFailure::kConnectError:
      return "connect_error";
    case UpstreamFailure::kFirstByteTimeout:
      return "first_byte_timeout";
    case UpstreamFailure::kIdleTimeout:
      return "idle_timeout";
    case UpstreamFailure::kInvalidStatus:
      return "invalid_status";
    case UpstreamFailure::kMalformed:
      return "malformed_response";
    case UpstreamFailure::kClosed:
    case UpstreamFailure::kCount:
      break;
  }
  return "closed";
}

std::string_view InvalidAnswerReason(InvalidAnswer a) {
  switch (a) {
    case InvalidAnswer::kUsage:
      return "usage";
    case InvalidAnswer::kNotJson:
      return "not_json";
    default:
      return "unfinished_stream";
  }
}

bool IsTimeout(UpstreamFailure f) {
  return f == UpstreamFailure::kConnectTimeout || f == UpstreamFailure::kFirstByteTimeout ||
         f == UpstreamFailure::kIdleTimeout;
}

UpstreamFailure BodyFailure(bool timed_out, bool malformed, bool sse, bool body_started) {
  if (malformed) return UpstreamFailure::kMalformed;
  if (!timed_out) return UpstreamFailure::kClosed;
  return sse && !body_started ? UpstreamFailure::kFirstByteTimeout : UpstreamFailure::kIdleTimeout;
}

FailureReport DescribeFailure(UpstreamFailure f, const UpstreamTimeouts& timeouts,
                              std::string_view engine, std::string_view detail) {
  FailureReport r;
  const bool timeout = IsTimeout(f);
  r.status = timeout ? 504 : 502;
  r.json_type = timeout ? "GatewayTimeout" : "BadGateway";
  switch (f) {
    case UpstreamFailure::kConnectTimeout:
      r.error_type = sc::kErrorTimeout;
      r.message = fmt::format("no connection to the engine at {} within {} ms (connect timeout)",
                              engine, timeouts.connect.count());
      break;
    case UpstreamFailure::kConnectError:
      r.error_type = sc::kErrorUpstreamConnection;
      r.message = fmt::format("engine at {} unavailable: {}", engine, detail);
      break;
    case UpstreamFailure::kFirstByteTimeout:
      r.error_type = sc::kErrorTimeout;
      r.message = fmt::format("engine at {} did not answer within {} ms (first-byte timeout)",
                              engine, timeouts.first_byte.count());
      break;
    case UpstreamFailure::kIdleTimeout:
      r.error_type = sc::kErrorTimeout;
      r.message = fmt::format("engine at {} sent nothing for {} ms mid-response (idle timeout)",
                              engine, timeouts.idle.count());
      break;
    case UpstreamFailure::kInvalidStatus:
      r.error_type = sc::kErrorUpstreamInvalidStatus;
      r.message =
          fmt::format("engine at {} answered with status {}, outside 100-599", engine, detail);
      break;
    case UpstreamFailure::kMalformed:
      r.error_type = sc::kErrorUpstreamMalformed;
      r.message = fmt::format("engine at {} sent a malformed HTTP response: {}", engine, detail);
      break;
    case UpstreamFailure::kClosed:
    case UpstreamFailure::kCount:
      r.error_type = sc::kErrorUpstreamClosed;
      r.message = fmt::format(
          "engine at {} closed the connection before the response was "
          "complete: {}",
          engine, detail);
      break;
  }
  return r;
}

std::string SseErrorEvent(const FailureReport& report) {
  std::string out = "\ndata: ";
  out += http::JsonErrorBody(report.status, report.json_type, report.message);
  out += "\n\ndata: [DONE]\n\n";
  return out;
}

template <std::size_t kReasons>
bool ReasonLog<kReasons>::Count(std::size_t i, std::uint64_t* unlogged) {
  const std::uint64_t n = counts_[i].fetch_add(1, std::memory_order_relaxed) + 1;
  const std::int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::steady_clock::now().time_since_epoch())
                               .count();
  std::int64_t last = last_log_ns_[i].load(std::memory_order_relaxed);
  const std::int64_t interval = std::chrono::nanoseconds(kLogInterval).count();
  if (last != 0 && now - last < interval) return false;
  // One thread wins the interval; the others stay silent and are counted in the next line.
  if (!last_log_ns_[i].compare_exchange_strong(last, now, std::memory_order_relaxed)) return false;
  const std::uint64_t before = logged_at_count_[i].exchange(n, std::memory_order_relaxed);
  *unlogged = n - before - 1;
  return true;
}

namespace {
std::string Unlogged(std::uint64_t n) {
  return n ? fmt::format("; {} more of this reason since the last message", n) : std::string();
}
}  // namespace

void UpstreamFailureLog::Record(UpstreamFailure f, std::string_view upstream,
                                const FailureReport& report) {
  std::uint64_t unlogged = 0;
  if (!log_.Count(static_cast<std::size_t>(f), &unlogged)) return;
  spdlog::warn("gateway: upstream {}: {} ({}){}", upstream, report.message,
               UpstreamFailureReason(f), Unlogged(unlogged));
}

void InvalidAnswerLog::Record(InvalidAnswer a, std::string_view upstream, std::string_view what) {
  std::uint64_t unlogged = 0;
  if (!log_.Count(static_cast<std::size_t>(a), &unlogged)) return;
  spdlog::warn("gateway: upstream {}: {} ({}){}", upstream, what, InvalidAnswerReason(a),
               Unlogged(unlogged));
}

template class ReasonLog<kUpstreamFailureCount>;
template class ReasonLog<kInvalidAnswerCount>;

}  // namespace infertel::gateway
