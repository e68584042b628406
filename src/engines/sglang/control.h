#pragma once
// SGLang's own control surface over HTTP: what the server reports about itself
// (/server_info) and the two endpoints that change its observability at run time
// (/set_trace_level, /configure_logging). See facts/sglang.md §1.2, §3.1, §3.2.
//
// Every call blocks on the network (bounded by `timeout` per phase): call from a thread that
// may wait, never from a gateway worker or the admin server's thread.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "http/url.h"

namespace infertel::engines::sglang {

inline constexpr std::chrono::milliseconds kControlTimeout{2000};

// The fields of /server_info that infertel uses. /server_info carries every server argument
// plus scheduler state; absent or mistyped fields stay nullopt.
struct ServerInfo {
  std::optional<std::string> version;              // "version"
  std::optional<std::int64_t> stream_interval;     // --stream-interval (default 1)
  std::optional<bool> log_requests;                // --log-requests (default false)
  std::optional<std::int64_t> log_requests_level;  // --log-requests-level (default 2)
  std::optional<std::string> log_level;            // --log-level as given, e.g. "info"
  std::optional<bool> enable_trace;                // --enable-trace
  // The trace level, when the server reports one ("trace_level"). The level is not a server
  // argument (it comes from SGLANG_TRACE_LEVEL or /set_trace_level), so most servers don't.
  std::optional<std::int64_t> trace_level;
};

// Parses a /server_info body; nullopt and *error when it is not a JSON object.
std::optional<ServerInfo> ParseServerInfo(std::string_view body, std::string* error);

// GET <base>/server_info; on a 404 falls back to the deprecated /get_server_info.
std::optional<ServerInfo> FetchServerInfo(const http::Url& base, std::string* error,
                                          std::chrono::milliseconds timeout = kControlTimeout);

// POST <base>/set_trace_level?level=N (0 turns native tracing off); applies to new requests.
bool SetTraceLevel(const http::Url& base, int level, std::string* error,
                   std::chrono::milliseconds timeout = kControlTimeout);

// The body of /configure_logging (ConfigureLoggingReq): every field optional, only the set
// ones are sent, so the server leaves the others as they are.
struct LoggingConfig {
  std::optional<bool> log_requests;
  std::optional<int> log_requests_level;           // 0..3
  std::optional<std::string> log_requests_format;  // "text" | "json" (2026 servers)
  std::optional<std::string> log_level;            // newest servers only
  std::optional<std::string> dump_requests_folder;
  std::optional<int> dump_requests_threshold;
  std::optional<std::string> crash_dump_folder;
};
std::string LoggingConfigJson(const LoggingConfig& config);

// POST <base>/configure_logging with LoggingConfigJson(config).
bool ConfigureLogging(const http::Url& base, const LoggingConfig& config, std::string* error,
                      std::chrono::milliseconds timeout = kControlTimeout);

}  // namespace infertel::engines::sglang
