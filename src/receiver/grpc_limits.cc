#include "receiver/grpc_limits.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <string>

#include "core/stats.h"

namespace infertel::receiver {

std::string_view GrpcRefusalName(GrpcRefusal reason) {
  switch (reason) {
    case GrpcRefusal::kConnections:
      return "connections";
    case GrpcRefusal::kHandshakeTimeout:
      return "handshake_timeout";
    case GrpcRefusal::kIdleTimeout:
      return "idle_timeout";
    case GrpcRefusal::kStreams:
      return "streams";
    case GrpcRefusal::kHeaderList:
      return "header_list";
    case GrpcRefusal::kResetRate:
      return "reset_rate";
    case GrpcRefusal::kProtocol:
      return "protocol";
    case GrpcRefusal::kMessageSize:
      return "message_size";
    case GrpcRefusal::kInflatedSize:
      return "inflated_size";
    case GrpcRefusal::kBufferFull:
      return "buffer_full";
    case GrpcRefusal::kEncoding:
      return "encoding";
    case GrpcRefusal::kContentType:
      return "content_type";
    case GrpcRefusal::kMethod:
      return "method";
    case GrpcRefusal::kMalformed:
      return "malformed";
    case GrpcRefusal::kCount:
      break;
  }
  return "unknown";
}

void GrpcStats::Refuse(GrpcRefusal reason, std::string_view detail) noexcept {
  const auto i = static_cast<std::size_t>(reason);
  const std::uint64_t n = refused_[i].fetch_add(1, std::memory_order_relaxed) + 1;
  const std::int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                               std::chrono::steady_clock::now().time_since_epoch())
                               .count();
  std::int64_t last = last_log_s_[i].load(std::memory_order_relaxed);
  if (last != 0 && now - last < 10) return;
  // One thread wins the interval; the others stay silent and are counted in the next line.
  if (!last_log_s_[i].compare_exchange_strong(last, now, std::memory_order_relaxed)) return;
  const std::uint64_t unlogged = n - logged_at_[i].exchange(n, std::memory_order_relaxed) - 1;
  try {
    spdlog::warn("OTLP gRPC receiver: refused ({}): {}{}", GrpcRefusalName(reason), detail,
                 unlogged
                     ? fmt::format("; {} more for this reason since the last message", unlogged)
                     : std::string());
  } catch (...) {
    // Logging is best effort; the counter has it.
  }
}

void GrpcStats::Register(StatsRegistry* r) const {
  using T = StatsRegistry::Type;
  for (std::size_t i = 0; i < kReasons; ++i) {
    r->Add("infertel_receiver_grpc_refused",
           "OTLP/gRPC connections, streams and calls refused by a bound of the receiver "
           "(docs/limits.md)",
           T::kCounter, fmt::format(R"(reason="{}")", GrpcRefusalName(static_cast<GrpcRefusal>(i))),
           &refused_[i]);
  }
  r->Add("infertel_receiver_grpc_connections", "OTLP/gRPC connections open now", T::kGauge, "",
         &connections_);
}

}  // namespace infertel::receiver
