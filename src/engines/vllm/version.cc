#include "engines/vllm/version.h"

#include <simdjson.h>

#include <charconv>

#include "http/sync_client.h"

namespace infertel::engines::vllm {

std::optional<SpanShape> ShapeFromVersion(std::string_view v) {
  if (!v.empty() && v.front() == 'v') v.remove_prefix(1);
  int major = 0, minor = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), major);
  if (ec != std::errc() || p == v.data() + v.size() || *p != '.') return std::nullopt;
  auto [q, ec2] = std::from_chars(p + 1, v.data() + v.size(), minor);
  if (ec2 != std::errc()) return std::nullopt;
  if (major == 0 && minor < 11) return SpanShape::kV0;
  return SpanShape::kV1;
}

std::optional<std::string> ProbeVersion(const http::Url& base, std::string* error) {
  http::SyncClient client(http::SyncTimeouts{std::chrono::milliseconds(2000),
                                             std::chrono::milliseconds(2000),
                                             std::chrono::milliseconds(2000)});
  http::Url url = base;
  url.path = "/version";
  http::SyncResponse res;
  if (!client.Send("GET", url, {}, "", "", &res, error, 64 * 1024)) return std::nullopt;
  if (res.status != 200) {
    *error = "GET /version answered " + std::to_string(res.status);
    return std::nullopt;
  }
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  std::string_view version;
  if (parser.parse(res.body).get(doc) || doc["version"].get(version)) {
    *error = "GET /version: no version in the body";
    return std::nullopt;
  }
  return std::string(version);
}

}  // namespace infertel::engines::vllm
