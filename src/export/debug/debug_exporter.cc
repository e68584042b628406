#include "export/debug/debug_exporter.h"

#include <fmt/format.h>

#include "core/hex.h"
#include "core/semconv.h"
#include "otlp/json.h"
#include "otlp/json_util.h"

namespace infertel::exporting {
namespace {

std::string HexOrDash(const std::string& bytes) {
  return bytes.empty() ? std::string("-") : BytesToHex(bytes);
}

std::string Service(const Resource& r) {
  const AnyValue* v = FindAttr(r.attributes(), semconv::kServiceName);
  return v != nullptr && v->has_string_value() ? v->string_value() : std::string("-");
}

template <typename Request>
class DebugExporter final : public pipeline::Exporter<Request> {
 public:
  explicit DebugExporter(const DebugOptions& o) : options_(o) {}
  std::string_view Name() const noexcept override { return "debug"; }
  pipeline::ExportResult Export(const Request& request) noexcept override {
    try {
      std::string text = options_.json ? otlp_json::Encode(request) + "\n" : FormatDebug(request);
      std::fwrite(text.data(), 1, text.size(), options_.out);
      std::fflush(options_.out);
      return pipeline::ExportResult::Ok();
    } catch (const std::exception& e) {
      return pipeline::ExportResult::Permanent(e.what());
    }
  }

 private:
  DebugOptions options_;
};

}  // namespace

std::string FormatDebug(const TracesRequest& request) {
  std::string out;
  for (const auto& rs : request.resource_spans()) {
    const std::string service = Service(rs.resource());
    for (const auto& ss : rs.scope_spans())
      for (const auto& s : ss.spans()) {
        std::string name;
        otlp_json::AppendString(&name, s.name());
        fmt::format_to(
            std::back_inserter(out),
            "span trace={} span={} parent={} name={} kind={} dur_ms={:.3f} status={} service={} "
            "attrs={}\n",
            HexOrDash(s.trace_id()), HexOrDash(s.span_id()), HexOrDash(s.parent_span_id()), name,
            static_cast<int>(s.kind()),
            static_cast<double>(s.end_time_unix_nano() - s.start_time_unix_nano()) / 1e6,
            static_cast<int>(s.status().code()), service,
            otlp_json::PlainAttributes(s.attributes()));
      }
  }
  return out;
}

std::string FormatDebug(const LogsRequest& request) {
  std::string out;
  for (const auto& rl : request.resource_logs())
    for (const auto& sl : rl.scope_logs())
      for (const auto& lr : sl.log_records()) {
        std::string body;
        otlp_json::AppendPlainValue(&body, lr.body());
        fmt::format_to(
            std::back_inserter(out), "log time={} severity={} trace={} span={} body={} attrs={}\n",
            lr.time_unix_nano(), static_cast<int>(lr.severity_number()), HexOrDash(lr.trace_id()),
            HexOrDash(lr.span_id()), body, otlp_json::PlainAttributes(lr.attributes()));
      }
  return out;
}

std::string FormatDebug(const MetricsRequest& request) {
  std::string out;
  auto line = [&](const otlp_metrics::Metric& m, std::string_view type, const auto& p,
                  std::string value) {
    fmt::format_to(std::back_inserter(out), "metric name={} type={} labels={} value={} time={}\n",
                   m.name(), type, otlp_json::PlainAttributes(p.attributes()), value,
                   p.time_unix_nano());
  };
  auto number = [](const otlp_metrics::NumberDataPoint& p) {
    return p.value_case() == otlp_metrics::NumberDataPoint::kAsInt
               ? fmt::format("{}", p.as_int())
               : fmt::format("{}", p.as_double());
  };
  for (const auto& rm : request.resource_metrics())
    for (const auto& sm : rm.scope_metrics())
      for (const auto& m : sm.metrics()) {
        switch (m.data_case()) {
          case otlp_metrics::Metric::kGauge:
            for (const auto& p : m.gauge().data_points()) line(m, "gauge", p, number(p));
            break;
          case otlp_metrics::Metric::kSum:
            for (const auto& p : m.sum().data_points()) line(m, "sum", p, number(p));
            break;
          case otlp_metrics::Metric::kHistogram:
            for (const auto& p : m.histogram().data_points())
              line(m, "histogram", p, fmt::format("count:{},sum:{}", p.count(), p.sum()));
            break;
          case otlp_metrics::Metric::kExponentialHistogram:
            for (const auto& p : m.exponential_histogram().data_points())
              line(m, "exponential_histogram", p,
                   fmt::format("count:{},sum:{}", p.count(), p.sum()));
            break;
          case otlp_metrics::Metric::kSummary:
            for (const auto& p : m.summary().data_points())
              line(m, "summary", p, fmt::format("count:{},sum:{}", p.count(), p.sum()));
            break;
          default:
            break;
        }
      }
  return out;
}

std::unique_ptr<pipeline::TraceExporter> MakeDebugTraceExporter(const DebugOptions& o) {
  return std::make_unique<DebugExporter<TracesRequest>>(o);
}
std::unique_ptr<pipeline::LogExporter> MakeDebugLogExporter(const DebugOptions& o) {
  return std::make_unique<DebugExporter<LogsRequest>>(o);
}
std::unique_ptr<pipeline::MetricExporter> MakeDebugMetricExporter(const DebugOptions& o) {
  return std::make_unique<DebugExporter<MetricsRequest>>(o);
}

}  // namespace infertel::exporting
