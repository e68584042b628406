#pragma once
// The agent's own request log (spec C3/C4 "request logs"): one line when a request is
// received, when it is dispatched to the engine, and when it finishes, is aborted or fails,
// with request id, model, tokens, TTFT and end-to-end latency. No content is ever logged.
//
// Whether an exchange is logged is decided when it arrives (Exchange::log_requests, from the
// engine's log_requests key of that request's config snapshot), so a switched-off log costs
// one branch per event. Lines go to an asynchronous spdlog logger with a bounded queue that
// drops the oldest line when full: a slow stderr never holds a gateway worker.

#include <cstddef>
#include <memory>
#include <string>

#include "openai/exchange.h"

namespace spdlog {
class logger;
namespace details {
class thread_pool;
}
}  // namespace spdlog

namespace infertel::gateway {

enum class RequestLogEvent { kReceived, kDispatched, kFinished };

// The text of one line (without the logger's time/level prefix). kFinished gives
// "Finished request", "Aborted request" or "Failed request" by the exchange's outcome. With
// Exchange::log_trace_context the line starts with "[trace_id=<32 hex> span_id=<16 hex>] ".
// Identifiers from the client are bounded and stripped of control characters.
std::string FormatRequestLogLine(RequestLogEvent event, const openai::Exchange& ex);

class RequestLog : public openai::ExchangeListener {
 public:
  // Lines go to stderr through an asynchronous logger of its own (`queue_lines` bounded,
  // one thread, oldest dropped when full).
  explicit RequestLog(std::size_t queue_lines = 8192);
  // Lines go to `logger` (tests use a synchronous one).
  explicit RequestLog(std::shared_ptr<spdlog::logger> logger);
  ~RequestLog() override;
  RequestLog(const RequestLog&) = delete;
  RequestLog& operator=(const RequestLog&) = delete;

  void OnExchangeStarted(const openai::Exchange& ex) noexcept override;
  void OnExchangeDispatched(const openai::Exchange& ex) noexcept override;
  void OnExchangeFinished(const openai::Exchange& ex) noexcept override;

 private:
  void Write(RequestLogEvent event, const openai::Exchange& ex) noexcept;

  std::shared_ptr<spdlog::details::thread_pool> pool_;  // before logger_: outlives it
  std::shared_ptr<spdlog::logger> logger_;
};

}  // namespace infertel::gateway
