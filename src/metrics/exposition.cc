#include "metrics/exposition.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "core/stats.h"

namespace infertel::metrics {
namespace {

// HELP text: backslash and line feed escaped, quotes left (label values: AppendLabelValue).
void AppendHelp(std::string* out, std::string_view v) {
  for (char c : v) {
    if (c == '\\') {
      *out += "\\\\";
    } else if (c == '\n') {
      *out += "\\n";
    } else {
      *out += c;
    }
  }
}

void AppendValue(std::string* out, double v) {
  if (std::isnan(v)) {
    *out += "NaN";
  } else if (std::isinf(v)) {
    *out += v > 0 ? "+Inf" : "-Inf";
  } else {
    fmt::format_to(std::back_inserter(*out), "{}", v);
  }
}

}  // namespace

std::string RenderPrometheus(std::span<const MetricPoint> points) {
  std::string out;
  out.reserve(points.size() * 96);
  MetricId current = MetricId::kNone;
  std::string name;
  for (const auto& p : points) {
    const MetricFamily& f = Family(p.id);
    if (p.id != current) {
      current = p.id;
      name = PrometheusName(f);
      out += "# HELP ";
      out += name;
      out += ' ';
      AppendHelp(&out, f.help);
      out += " (";
      out += f.unit;
      out += ")\n# TYPE ";
      out += name;
      out += f.kind == MetricKind::kCounter ? " counter\n" : " gauge\n";
    }
    out += name;
    if (!p.labels.empty()) {
      out += '{';
      bool first = true;
      for (const auto& [k, v] : p.labels) {
        if (!first) out += ',';
        first = false;
        out += k;
        out += "=\"";
        AppendLabelValue(&out, v);
        out += '"';
      }
      out += '}';
    }
    out += ' ';
    AppendValue(&out, p.value);
    out += '\n';
  }
  return out;
}

bool WantsOpenMetrics(std::string_view accept) {
  return accept.find("application/openmetrics-text") != std::string_view::npos;
}

namespace {

// `# KIND NAME REST` split; false for other lines.
bool MetaLine(std::string_view line, std::string_view kind, std::string_view* name,
              std::string_view* rest) {
  if (line.substr(0, kind.size()) != kind) return false;
  line.remove_prefix(kind.size());
  const std::size_t sp = line.find(' ');
  *name = line.substr(0, sp);
  *rest = sp == std::string_view::npos ? std::string_view() : line.substr(sp + 1);
  return true;
}

std::string_view FamilyName(std::string_view name, const std::set<std::string_view>& counters) {
  if (counters.contains(name) && name.ends_with("_total")) name.remove_suffix(6);
  return name;
}

}  // namespace

std::string ToOpenMetrics(std::string_view text) {
  std::set<std::string_view> counters;  // exposed names of counter families
  std::string_view name, rest;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t nl = std::min(text.find('\n', at), text.size());
    if (MetaLine(text.substr(at, nl - at), "# TYPE ", &name, &rest) && rest == "counter")
      counters.insert(name);
    at = nl + 1;
  }
  std::string out;
  out.reserve(text.size() + 16);
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t nl = std::min(text.find('\n', at), text.size());
    const std::string_view line = text.substr(at, nl - at);
    at = nl + 1;
    if (MetaLine(line, "# TYPE ", &name, &rest)) {
      fmt::format_to(std::back_inserter(out), "# TYPE {} {}\n", FamilyName(name, counters),
                     rest == "untyped" ? "unknown" : rest);
    } else if (MetaLine(line, "# HELP ", &name, &rest)) {
      fmt::format_to(std::back_inserter(out), "# HELP {} ", FamilyName(name, counters));
      for (char c : rest) {
        if (c == '"') out += '\\';
        out += c;
      }
      out += '\n';
    } else if (!line.empty()) {
      out += line;
      out += '\n';
    }
  }
  out += "# EOF\n";
  return out;
}

MetricsRequest BuildOtlpMetrics(std::span<const MetricPoint> points, const Resource& resource,
                                std::uint64_t start_unix_nano, std::uint64_t now_unix_nano,
                                std::string_view scope_version) {
  MetricsRequest req;
  if (points.empty()) return req;
  auto* rm = req.add_resource_metrics();
  *rm->mutable_resource() = resource;
  auto* sm = rm->add_scope_metrics();
  sm->mutable_scope()->set_name("infertel");
  sm->mutable_scope()->set_version(std::string(scope_version));
  MetricId current = MetricId::kNone;
  otlp_metrics::Metric* metric = nullptr;
  for (const auto& p : points) {
    const MetricFamily& f = Family(p.id);
    if (p.id != current || !metric) {
      current = p.id;
      metric = sm->add_metrics();
      metric->set_name(std::string(f.name));
      metric->set_unit(std::string(f.unit));
      metric->set_description(std::string(f.help));
      if (f.kind == MetricKind::kCounter) {
        auto* sum = metric->mutable_sum();
        sum->set_is_monotonic(true);
        sum->set_aggregation_temporality(
            otlp_metrics::AggregationTemporality::AGGREGATION_TEMPORALITY_CUMULATIVE);
      } else {
        metric->mutable_gauge();
      }
    }
    otlp_metrics::NumberDataPoint* dp = f.kind == MetricKind::kCounter
                                            ? metric->mutable_sum()->add_data_points()
                                            : metric->mutable_gauge()->add_data_points();
    if (f.kind == MetricKind::kCounter) dp->set_start_time_unix_nano(start_unix_nano);
    dp->set_time_unix_nano(now_unix_nano);
    dp->set_as_double(p.value);
    for (const auto& [k, v] : p.labels) AddAttr(dp->mutable_attributes(), k, v);
  }
  return req;
}

otlp_metrics::Histogram* AddCumulativeHistogram(otlp_metrics::ScopeMetrics* sm,
                                                std::string_view name, std::string_view unit,
                                                std::string_view help) {
  auto* m = sm->add_metrics();
  m->set_name(std::string(name));
  m->set_unit(std::string(unit));
  m->set_description(std::string(help));
  auto* h = m->mutable_histogram();
  h->set_aggregation_temporality(
      otlp_metrics::AggregationTemporality::AGGREGATION_TEMPORALITY_CUMULATIVE);
  return h;
}

}  // namespace infertel::metrics
