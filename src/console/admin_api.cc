#include "console/admin_api.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <cctype>

#include "core/json.h"

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

// Same length or not, the comparison takes the same time for a given candidate length.
bool ConstantTimeEqual(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  return diff == 0;
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

// The typed value of a PUT body, or the message of a 400.
std::variant<config::Value, std::string> ValueFromBody(const config::KeySpec& spec,
                                                       std::string_view body) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc, v;
  simdjson::dom::object obj;
  if (parser.parse(body.data(), body.size()).get(doc) || doc.get(obj) || obj["value"].get(v)) {
    return fmt::format(R"(body must be a JSON object {{"value": …}} setting {}: expected {})",
                       spec.console_key, config::AcceptedValues(spec));
  }
  auto mismatch = [&] {
    return fmt::format("invalid value {} for {}: expected {}", simdjson::minify(v),
                       spec.console_key, config::AcceptedValues(spec));
  };
  std::string text;
  switch (v.type()) {
    case simdjson::dom::element_type::BOOL:
      if (spec.type != config::ValueType::kBool) return mismatch();
      return config::Value{v.get_bool().value_unsafe()};
    case simdjson::dom::element_type::INT64:
    case simdjson::dom::element_type::UINT64:
      if (spec.type != config::ValueType::kInt) return mismatch();
      text = simdjson::minify(v);
      break;
    case simdjson::dom::element_type::STRING:
      text = std::string(v.get_string().value_unsafe());
      break;
    case simdjson::dom::element_type::NULL_VALUE:
      return fmt::format("null is not a value for {}: DELETE /api/config/{} removes it",
                         spec.console_key, spec.console_key);
    default:
      return mismatch();
  }
  auto parsed = config::ParseValue(spec, text);
  if (auto* err = std::get_if<std::string>(&parsed)) return *err;
  return std::get<config::Value>(std::move(parsed));
}

}  // namespace

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

bool ConfigApi::Authorized(const http::StringRequest& req) const {
  if (token_.empty()) return true;
  auto it = req.find(bhttp::field::authorization);
  if (it == req.end()) return false;
  std::string_view v = it->value();
  constexpr std::string_view kScheme = "bearer ";
  if (v.size() < kScheme.size()) return false;
  for (std::size_t i = 0; i < kScheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(v[i])) != kScheme[i]) return false;
  v.remove_prefix(kScheme.size());
  while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  return ConstantTimeEqual(v, token_);
}

http::StringResponse ConfigApi::Handle(const http::StringRequest& req) const {
  std::string_view target = req.target();
  if (auto q = target.find('?'); q != std::string_view::npos) target = target.substr(0, q);
  if (target.substr(0, kApiPrefix.size()) != kApiPrefix)
    return Error(404, "not_found", "no such admin endpoint");
  std::string_view rest = target.substr(kApiPrefix.size());
  if (!rest.empty() && rest.front() != '/')
    return Error(404, "not_found", "no such admin endpoint");
  if (!Authorized(req)) {
    auto res = Error(401, "unauthorized",
                     "this admin address needs Authorization: Bearer <token> (--admin-token or "
                     "INFERTEL_ADMIN_TOKEN)");
    res.set(bhttp::field::www_authenticate, R"(Bearer realm="infertel")");
    return res;
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
  if (!key) return Error(404, "unknown_key", fmt::format("unknown key '{}'", name), name);
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
      if (auto* err = std::get_if<std::string>(&v))
        return Error(400, "invalid_value", *err, spec.console_key, config::AcceptedValues(spec));
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
