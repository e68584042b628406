#include "engines/sglang/control.h"

#include <fmt/format.h>
#include <simdjson.h>

#include "core/json.h"
#include "http/sync_client.h"

namespace infertel::engines::sglang {
namespace {

constexpr std::size_t kMaxServerInfoBytes = 4u << 20;  // server args + per-DP internal states

http::Url Endpoint(const http::Url& base, std::string_view path_and_query) {
  http::Url url = base;
  std::string prefix = base.path;
  if (auto q = prefix.find('?'); q != std::string::npos) prefix.resize(q);
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  url.path = prefix + std::string(path_and_query);
  return url;
}

http::SyncClient MakeClient(std::chrono::milliseconds timeout) {
  return http::SyncClient(http::SyncTimeouts{timeout, timeout, timeout});
}

std::string Snippet(std::string_view body) {
  constexpr std::size_t kMax = 200;
  return std::string(body.substr(0, kMax)) + (body.size() > kMax ? "…" : "");
}

std::optional<bool> ReadBool(simdjson::dom::element e) {
  bool b;
  if (!e.get(b)) return b;
  return std::nullopt;
}

std::optional<std::int64_t> ReadInt(simdjson::dom::element e) {
  std::int64_t i;
  if (!e.get(i)) return i;
  return std::nullopt;
}

std::optional<std::string> ReadString(simdjson::dom::element e) {
  std::string_view s;
  if (!e.get(s)) return std::string(s);
  return std::nullopt;
}

}  // namespace

std::optional<ServerInfo> ParseServerInfo(std::string_view body, std::string* error) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  simdjson::dom::object obj;
  if (parser.parse(body.data(), body.size()).get(doc) || doc.get(obj)) {
    *error = fmt::format("server_info: not a JSON object: {}", Snippet(body));
    return std::nullopt;
  }
  ServerInfo info;
  for (auto field : obj) {
    std::string_view k = field.key;
    if (k == "version") {
      info.version = ReadString(field.value);
    } else if (k == "stream_interval") {
      info.stream_interval = ReadInt(field.value);
    } else if (k == "log_requests") {
      info.log_requests = ReadBool(field.value);
    } else if (k == "log_requests_level") {
      info.log_requests_level = ReadInt(field.value);
    } else if (k == "log_level") {
      info.log_level = ReadString(field.value);
    } else if (k == "enable_trace") {
      info.enable_trace = ReadBool(field.value);
    } else if (k == "trace_level") {
      info.trace_level = ReadInt(field.value);
    }
  }
  return info;
}

std::optional<ServerInfo> FetchServerInfo(const http::Url& base, std::string* error,
                                          std::chrono::milliseconds timeout) {
  auto client = MakeClient(timeout);
  http::SyncResponse res;
  for (std::string_view path : {"/server_info", "/get_server_info"}) {
    http::Url url = Endpoint(base, path);
    if (!client.Send("GET", url, {}, "", "", &res, error, kMaxServerInfoBytes)) return std::nullopt;
    if (res.status == 404) continue;  // an older server: only the deprecated alias
    if (res.status != 200) {
      *error = fmt::format("GET {} answered {}: {}", path, res.status, Snippet(res.body));
      return std::nullopt;
    }
    return ParseServerInfo(res.body, error);
  }
  *error = "GET /server_info and /get_server_info answered 404";
  return std::nullopt;
}

bool SetTraceLevel(const http::Url& base, int level, std::string* error,
                   std::chrono::milliseconds timeout) {
  if (level < 0) {
    *error = fmt::format("trace level {} is below 0", level);
    return false;
  }
  auto client = MakeClient(timeout);
  http::SyncResponse res;
  // `level` is a query parameter, not a body field (facts §1.2).
  http::Url url = Endpoint(base, fmt::format("/set_trace_level?level={}", level));
  if (!client.Send("POST", url, {}, "", "", &res, error, 64 * 1024)) return false;
  if (res.status != 200) {
    *error = fmt::format("POST /set_trace_level?level={} answered {}: {}", level, res.status,
                         Snippet(res.body));
    return false;
  }
  return true;
}

std::string LoggingConfigJson(const LoggingConfig& c) {
  std::string out = "{";
  auto key = [&](std::string_view k) {
    if (out.size() > 1) out += ',';
    AppendJsonString(&out, k);
    out += ':';
  };
  if (c.log_requests) {
    key("log_requests");
    out += *c.log_requests ? "true" : "false";
  }
  if (c.log_requests_level) {
    key("log_requests_level");
    out += std::to_string(*c.log_requests_level);
  }
  if (c.log_requests_format) {
    key("log_requests_format");
    AppendJsonString(&out, *c.log_requests_format);
  }
  if (c.log_level) {
    key("log_level");
    AppendJsonString(&out, *c.log_level);
  }
  if (c.dump_requests_folder) {
    key("dump_requests_folder");
    AppendJsonString(&out, *c.dump_requests_folder);
  }
  if (c.dump_requests_threshold) {
    key("dump_requests_threshold");
    out += std::to_string(*c.dump_requests_threshold);
  }
  if (c.crash_dump_folder) {
    key("crash_dump_folder");
    AppendJsonString(&out, *c.crash_dump_folder);
  }
  out += '}';
  return out;
}

bool ConfigureLogging(const http::Url& base, const LoggingConfig& config, std::string* error,
                      std::chrono::milliseconds timeout) {
  auto client = MakeClient(timeout);
  http::SyncResponse res;
  std::string body = LoggingConfigJson(config);
  if (!client.Send("POST", Endpoint(base, "/configure_logging"), {}, "application/json", body, &res,
                   error, 64 * 1024)) {
    return false;
  }
  if (res.status != 200) {
    *error = fmt::format("POST /configure_logging {} answered {}: {}", body, res.status,
                         Snippet(res.body));
    return false;
  }
  return true;
}

}  // namespace infertel::engines::sglang
