#pragma once
// The Prometheus text format as the engines' Python servers write it (prometheus_client, text
// format 0.0.4), shared by the simulated engines' /metrics: the Content-Type, float rendering
// and label sets. Pure functions; thread-safe.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace infertel::sim {

// Text of the /metrics Content-Type header.
inline constexpr std::string_view kPrometheusContentType =
    "text/plain; version=0.0.4; charset=utf-8";

// prometheus_client's float rendering (Python repr, Go-style exponent for large values).
std::string PromFloat(double v);

using PromLabels = std::vector<std::pair<std::string, std::string>>;

// `{k="v",…}` with keys sorted and values escaped, as the real scrapes show them; empty for no
// labels.
std::string PromLabelText(PromLabels labels);

}  // namespace infertel::sim
