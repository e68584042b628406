#include "console/admin_api.h"

#include <fmt/format.h>

#include <cctype>

#include "core/json.h"
#include "core/printable.h"
#include "http/bearer.h"

namespace infertel::console {
namespace {

namespace bhttp = boost::beast::http;

http::StringResponse Json(unsigned status, std::string body) {
  auto res = http::MakeResponse(status, std::move(body), "application/json");
  res.set(bhttp::field::cache_control, "no-store");
  return res;
}

// {"error":{"message":..,"type":..,"param":key|null,"code":status, ...extra}}
http::StringResponse Error(unsigned status, std::string_view type, std::string_view message,
                           std::string_view key = {}, std::string_view accepted = {}) {
  std::string out = R"({"error":{"message":)";
  AppendJsonString(&out, message);
  out += R"(,"type":)";
  AppendJsonString(&out, type);
  out += R"(,"param":)";
  if (key.empty()) {
    out += "null";
  } else {
    AppendJsonString(&out, key);
    out += R"(,"key":)";
    AppendJsonString(&out, key);
  }
  if (!accepted.empty()) {
    out += R"(,"accepted":)";
    AppendJsonString(&out, accepted);
  }
  out += fmt::format(R"(,"code":{}}}}})", status);
  return Json(status, std::move(out));
}

std::string PercentDecode(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

constexpr std::size_t kMaxEchoedKeyBytes = 64;  // of a key quoted back in a 404

std::string_view ApiRefusalName(ApiRefusal reason) {
  switch (reason) {
    case ApiRefusal::kUnauthorized:
      return "unauthorized";
    case ApiRefusal::kDuplicateAuthorization:
      return "duplicate_authorization";
    case ApiRefusal::kInvalidValue:
      return "invalid_value";
    case ApiRefusal::kUnknownKey:
      return "unknown_key";
  }
  return "unknown";
}

}  // namespace

void ApiStats::Register(StatsRegistry* registry) const {
  for (std::size_t i = 0; i < kApiRefusalCount; ++i) {
    registry->Add(
        "infertel_admin_refused_requests",
        "Admin API requests refused (answered 4xx without acting)", StatsRegistry::Type::kCounter,
        fmt::format(R"(reason="{}")", ApiRefusalName(static_cast<ApiRefusal>(i))), &refused[i]);
  }
}

std::vector<KeyReport> BuildReports(const LayeredConfig& config, const KnobController* knobs) {
  std::vector<KeyReport> out;
  for (auto& k : config.Keys()) {
    KeyReport r{k, {}};
    if (knobs != nullptr && config::Spec(k.key).engine_knob) r.engines = knobs->StateOf(k.key);
    out.push_back(std::move(r));
  }
  return out;
}

ConfigApi::ConfigApi(LayeredConfig* config, KnobController* knobs, std::string token)
    : config_(config), knobs_(knobs), token_(std::move(token)) {}

http::StringResponse ConfigApi::Refuse(ApiRefusal reason, http::StringResponse res) const {
  stats_.refused[static_cast<std::size_t>(reason)].fetch_add(1, std::memory_order_relaxed);
  return res;
}

bool ConfigApi::Authorized(const http::StringRequest& req) const {
  return http::BearerTokenMatches(req, token_);
}

http::StringResponse ConfigApi::Handle(const http::StringRequest& req) const {
  std::string_view target = req.target();
  if (auto q = target.find('?'); q != std::string_view::npos) target = target.substr(0, q);
  if (target.substr(0, kApiPrefix.size()) != kApiPrefix)
    return Error(404, "not_found", "no such admin endpoint");
  std::string_view rest = target.substr(kApiPrefix.size());
  if (!rest.empty() && rest.front() != '/')
    return Error(404, "not_found", "no such admin endpoint");
  // Two credentials are ambiguous (a proxy and its client may each have added one): refused,
  // token or not, rather than reading the first.
  if (req.count(bhttp::field::authorization) > 1) {
    return Refuse(ApiRefusal::kDuplicateAuthorization,
                  Error(400, "duplicate_authorization", "more than one Authorization header"));
  }
  if (!Authorized(req)) {
    auto res = Error(401, "unauthorized",
                     "this admin address needs Authorization: Bearer <token> (--admin-token or "
                     "INFERTEL_ADMIN_TOKEN)");
    res.set(bhttp::field::www_authenticate, R"(Bearer realm="infertel")");
    return Refuse(ApiRefusal::kUnauthorized, std::move(res));
  }
  const auto method = req.method();
  auto statuses = [&] {
    LayerStatuses s;
    for (std::size_t i = 0; i < kLayerCount; ++i) s[i] = config_->Status(static_cast<Layer>(i));
    return s;
  };
  if (rest.empty() || rest == "/") {
    if (method != bhttp::verb::get) return Error(405, "method_not_allowed", "use GET");
    return Json(200, ConfigJson(BuildReports(*config_, knobs_), statuses()));
  }
  if (rest == "/status") {
    if (method != bhttp::verb::get) return Error(405, "method_not_allowed", "use GET");
    return Json(200, StatusJson(statuses()));
  }
  const std::string name = PercentDecode(rest.substr(1));
  auto key = config::FindByConsoleKey(name);
  if (!key) {
    const std::string shown = Excerpt(name, kMaxEchoedKeyBytes);
    return Refuse(ApiRefusal::kUnknownKey,
                  Error(404, "unknown_key", fmt::format("unknown key '{}'", shown), shown));
  }
  const config::KeySpec& spec = config::Spec(*key);
  auto report = [&] {
    KeyReport r{config_->KeyOf(*key), {}};
    if (knobs_ != nullptr && spec.engine_knob) r.engines = knobs_->StateOf(*key);
    return Json(200, KeyJson(r));
  };
  switch (method) {
    case bhttp::verb::get:
      return report();
    case bhttp::verb::put: {
      auto v = ValueFromBody(spec, req.body());
      if (auto* err = std::get_if<std::string>(&v)) {
        return Refuse(ApiRefusal::kInvalidValue, Error(400, "invalid_value", *err, spec.console_key,
                                                       config::AcceptedValues(spec)));
      }
      config_->SetApiValue(*key, std::get<config::Value>(std::move(v)));
      return report();
    }
    case bhttp::verb::delete_:
      config_->RemoveApiValue(*key);
      return report();
    default:
      return Error(405, "method_not_allowed", "use GET, PUT or DELETE");
  }
}

}  // namespace infertel::console
