#pragma once
// The OTLP resource of the spans, logs and metrics infertel makes itself: service.name from
// OTEL_SERVICE_NAME, extra attributes from OTEL_RESOURCE_ATTRIBUTES (W3C baggage-style
// `k=v,k2=v2`, values percent-decoded), and telemetry.sdk.*.

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/telemetry.h"

namespace infertel {

using EnvFn = std::function<std::optional<std::string>(std::string_view)>;

// `default_service_name` is used when OTEL_SERVICE_NAME is unset and
// OTEL_RESOURCE_ATTRIBUTES has no service.name.
Resource BuildResource(const EnvFn& env, std::string_view default_service_name);

// Parses OTEL_RESOURCE_ATTRIBUTES; malformed pairs are skipped.
std::vector<std::pair<std::string, std::string>> ParseResourceAttributes(std::string_view text);

// Percent-decoding as OTEL_RESOURCE_ATTRIBUTES and OTEL_EXPORTER_OTLP_HEADERS need it.
std::string PercentDecode(std::string_view s);

}  // namespace infertel
