#include "core/resource.h"

#include "core/otel_env.h"
#include "core/semconv.h"

namespace infertel {

std::string PercentDecode(std::string_view s) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      int hi = hex(s[i + 1]), lo = hex(s[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out += static_cast<char>((hi << 4) | lo);
        i += 2;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> ParseResourceAttributes(std::string_view text) {
  std::vector<std::pair<std::string, std::string>> out;
  auto trim = [](std::string_view v) {
    while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
    while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
    return v;
  };
  while (!text.empty()) {
    auto comma = text.find(',');
    std::string_view pair = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    auto eq = pair.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view k = trim(pair.substr(0, eq)), v = trim(pair.substr(eq + 1));
    if (k.empty()) continue;
    out.emplace_back(PercentDecode(k), PercentDecode(v));
  }
  return out;
}

Resource BuildResource(const EnvFn& env, std::string_view default_service_name) {
  Resource r;
  std::string service;
  if (env) {
    if (auto attrs = env(otel_env::kResourceAttributes)) {
      for (auto& [k, v] : ParseResourceAttributes(*attrs)) {
        if (k == semconv::kServiceName) {
          service = v;
          continue;
        }
        AddAttr(r.mutable_attributes(), k, v);
      }
    }
    if (auto name = env(otel_env::kServiceName); name && !name->empty()) service = *name;
  }
  if (service.empty()) service = std::string(default_service_name);
  auto* kv = r.mutable_attributes()->Add();
  kv->set_key(std::string(semconv::kServiceName));
  kv->mutable_value()->set_string_value(service);
  // Keep service.name first: backends and `infertel traces` read it from there.
  r.mutable_attributes()->SwapElements(0, r.attributes_size() - 1);
  AddAttr(r.mutable_attributes(), semconv::kTelemetrySdkName, "infertel");
  AddAttr(r.mutable_attributes(), "telemetry.sdk.language", "cpp");
  return r;
}

}  // namespace infertel
