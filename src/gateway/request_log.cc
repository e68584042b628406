#include "gateway/request_log.h"

#include "engines/registry.h"

#include <fmt/format.h>
#include <spdlog/async.h>
#include <spdlog/async_logger.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <iterator>

#include "core/ids.h"

namespace infertel::gateway {
namespace {

// Client-controlled text (request id header, model name) goes into a line of its own: bounded,
// and without control characters, so that it can neither forge lines nor flood the log.
constexpr std::size_t kMaxFieldChars = 256;

void AppendClean(std::string* out, std::string_view s) {
  if (s.empty()) {
    out->append("-");
    return;
  }
  const std::size_t n = std::min(s.size(), kMaxFieldChars);
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    out->push_back(c < 0x20 || c == 0x7f || c == ' ' ? '_' : static_cast<char>(c));
  }
  if (s.size() > n) out->append("...");
}

double Seconds(std::uint64_t from_ns, std::uint64_t to_ns) {
  return to_ns > from_ns ? static_cast<double>(to_ns - from_ns) / 1e9 : 0.0;
}

void AppendResult(std::string* out, const openai::Exchange& ex) {
  auto it = std::back_inserter(*out);
  fmt::format_to(it, " status={}", ex.http_status);
  const auto& rs = ex.response;
  const auto& model = rs.model ? rs.model : ex.request.model;
  if (model) {
    out->append(" model=");
    AppendClean(out, *model);
  }
  if (rs.id) {
    out->append(" response_id=");
    AppendClean(out, *rs.id);
  }
  if (!rs.finish_reasons.empty()) {
    out->append(" finish_reasons=");
    for (std::size_t i = 0; i < rs.finish_reasons.size() && i < 16; ++i) {
      if (i > 0) out->push_back(',');
      AppendClean(out, rs.finish_reasons[i]);
    }
  }
  if (rs.usage.input_tokens) fmt::format_to(it, " input_tokens={}", *rs.usage.input_tokens);
  if (rs.usage.output_tokens) fmt::format_to(it, " output_tokens={}", *rs.usage.output_tokens);
  if (rs.usage.cached_tokens) fmt::format_to(it, " cached_tokens={}", *rs.usage.cached_tokens);
  if (ex.streamed && ex.first_token_mono_ns != 0) {
    fmt::format_to(it, " ttft={:.3f}s", Seconds(ex.start.mono_start_ns, ex.first_token_mono_ns));
  }
  fmt::format_to(it, " e2e={:.3f}s", Seconds(ex.start.mono_start_ns, ex.end_mono_ns));
}

}  // namespace

std::string FormatRequestLogLine(RequestLogEvent event, const openai::Exchange& ex) {
  std::string out;
  out.reserve(256);
  auto it = std::back_inserter(out);
  if (ex.log_trace_context) {
    fmt::format_to(it, "[trace_id={} span_id={}] ", ToHex(ex.trace_id), ToHex(ex.span_id));
  }
  switch (event) {
    case RequestLogEvent::kReceived:
      out.append("Received request ");
      AppendClean(&out, ex.request_id);
      out.append(": operation=");
      out.append(openai::OperationName(ex.op));
      if (ex.request.model) {
        out.append(" model=");
        AppendClean(&out, *ex.request.model);
      }
      if (ex.request.parsed) fmt::format_to(it, " stream={}", ex.request.stream);
      if (ex.request.max_tokens) fmt::format_to(it, " max_tokens={}", *ex.request.max_tokens);
      if (ex.request.n) fmt::format_to(it, " n={}", *ex.request.n);
      if (!ex.request.parsed) out.append(" body=unparsed");
      break;
    case RequestLogEvent::kDispatched:
      out.append("Dispatched request ");
      AppendClean(&out, ex.request_id);
      out.append(" to ");
      out.append(engines::Profile(ex.engine).name());
      out.append(" upstream ");
      AppendClean(&out, ex.upstream_name);
      break;
    case RequestLogEvent::kFinished:
      switch (ex.outcome) {
        case openai::Outcome::kOk:
          out.append("Finished request ");
          break;
        case openai::Outcome::kClientAborted:
          out.append("Aborted request ");
          break;
        default:
          out.append("Failed request ");
          break;
      }
      AppendClean(&out, ex.request_id);
      out.push_back(':');
      AppendResult(&out, ex);
      if (ex.outcome != openai::Outcome::kOk) {
        out.append(" error.type=");
        AppendClean(&out, ex.error_type);
      }
      break;
  }
  return out;
}

RequestLog::RequestLog(std::size_t queue_lines)
    : pool_(std::make_shared<spdlog::details::thread_pool>(std::max<std::size_t>(queue_lines, 1),
                                                           1)) {
  auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  logger_ = std::make_shared<spdlog::async_logger>("infertel.request", std::move(sink), pool_,
                                                   spdlog::async_overflow_policy::overrun_oldest);
  logger_->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%n] [%l] %v");
  logger_->set_level(spdlog::level::info);
}

RequestLog::RequestLog(std::shared_ptr<spdlog::logger> logger) : logger_(std::move(logger)) {}

RequestLog::~RequestLog() {
  if (logger_) logger_->flush();
}

void RequestLog::Write(RequestLogEvent event, const openai::Exchange& ex) noexcept {
  try {
    const bool failed = event == RequestLogEvent::kFinished && ex.outcome != openai::Outcome::kOk &&
                        ex.outcome != openai::Outcome::kClientAborted;
    logger_->log(failed ? spdlog::level::warn : spdlog::level::info,
                 FormatRequestLogLine(event, ex));
  } catch (...) {  // a line lost to an allocation failure is not worth the request
  }
}

void RequestLog::OnExchangeStarted(const openai::Exchange& ex) noexcept {
  if (ex.log_requests) Write(RequestLogEvent::kReceived, ex);
}
void RequestLog::OnExchangeDispatched(const openai::Exchange& ex) noexcept {
  if (ex.log_requests) Write(RequestLogEvent::kDispatched, ex);
}
void RequestLog::OnExchangeFinished(const openai::Exchange& ex) noexcept {
  if (ex.log_requests) Write(RequestLogEvent::kFinished, ex);
}

}  // namespace infertel::gateway
