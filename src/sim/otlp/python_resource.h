#pragma once
// The OTLP resource of the OpenTelemetry Python SDK, which both simulated engines' tracer
// providers report (Resource.create()): telemetry.sdk.* first, then OTEL_RESOURCE_ATTRIBUTES.
// Each engine then sets its own attributes over it. Pure functions; thread-safe.

#include <string_view>

#include "core/telemetry.h"
#include "sim/otlp/span_exporter.h"

namespace infertel::sim {

// The Python SDK's own resource attributes.
inline constexpr std::string_view kTelemetrySdkLanguage = "telemetry.sdk.language";
inline constexpr std::string_view kTelemetrySdkVersion = "telemetry.sdk.version";
inline constexpr std::string_view kPythonSdkVersion = "1.37.0";

// telemetry.sdk.{language,name,version}, then the pairs of OTEL_RESOURCE_ATTRIBUTES (read with
// `env`, if any) set over them.
Resource PythonSdkResource(const SimEnvFn& env);

// Sets `key` to a string: in place when present (a Python dict keeps a key's first position),
// else appended.
void SetResourceString(Resource* resource, std::string_view key, std::string_view value);

}  // namespace infertel::sim
