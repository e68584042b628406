#include "sim/otlp/python_resource.h"

#include <string>

#include "core/resource.h"
#include "core/semconv.h"

namespace infertel::sim {

void SetResourceString(Resource* resource, std::string_view key, std::string_view value) {
  auto* attrs = resource->mutable_attributes();
  for (auto& kv : *attrs) {
    if (kv.key() == key) {
      kv.mutable_value()->set_string_value(std::string(value));
      return;
    }
  }
  AddAttr(attrs, key, value);
}

Resource PythonSdkResource(const SimEnvFn& env) {
  Resource r;
  auto* attrs = r.mutable_attributes();
  AddAttr(attrs, kTelemetrySdkLanguage, "python");
  AddAttr(attrs, semconv::kTelemetrySdkName, "opentelemetry");
  AddAttr(attrs, kTelemetrySdkVersion, kPythonSdkVersion);
  if (env) {
    if (auto text = env("OTEL_RESOURCE_ATTRIBUTES")) {
      for (auto& [k, v] : ParseResourceAttributes(*text)) SetResourceString(&r, k, v);
    }
  }
  return r;
}

}  // namespace infertel::sim
