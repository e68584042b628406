#include "metrics/served_models.h"

#include <simdjson.h>

#include <chrono>

#include "http/sync_client.h"

namespace infertel::metrics {

std::optional<std::vector<std::string>> ParseModelList(std::string_view body) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  simdjson::dom::array data;
  if (parser.parse(body.data(), body.size()).get(doc) || doc["data"].get(data)) return std::nullopt;
  std::vector<std::string> ids;
  for (simdjson::dom::element entry : data) {
    std::string_view id;
    if (!entry["id"].get(id)) ids.emplace_back(id);
  }
  return ids;
}

std::optional<std::vector<std::string>> FetchServedModels(const http::Url& base,
                                                          std::string* error) {
  constexpr std::chrono::milliseconds kTimeout(2000);
  http::SyncClient client(http::SyncTimeouts{kTimeout, kTimeout, kTimeout});
  http::Url url = base;
  url.path = "/v1/models";
  http::SyncResponse res;
  if (!client.Send("GET", url, {}, "", "", &res, error, 1u << 20)) return std::nullopt;
  if (res.status != 200) {
    *error = "GET /v1/models answered " + std::to_string(res.status);
    return std::nullopt;
  }
  auto ids = ParseModelList(res.body);
  if (!ids) *error = "GET /v1/models: not a model list";
  return ids;
}

}  // namespace infertel::metrics
