#pragma once
// The SLO report `infertel slo` prints from the store: attainment per model and tenant, and
// the slowest requests with the objectives they missed and their latency cause. Pure: the
// command reads the store and hands each trace's spans here.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analytics/explain.h"

namespace infertel::analytics {

// One request as the store holds it: its entry span's verdict and tenant, and the latency
// cause found on any of its spans.
struct RequestRecord {
  std::string trace_id, model, tenant, cause;
  bool judged = false, met = false, error = false;
  std::vector<std::string> missed;
  std::int64_t start_unix_nano = 0, duration_ns = 0;
};

// The request of trace `trace_id` from its spans (as the explanation reads them: explain.h): the
// span carrying infertel.slo.met (else the first root span with a gen_ai.request.model), or
// nullopt when the trace holds no entry span.
std::optional<RequestRecord> RecordOfTrace(std::string_view trace_id,
                                           const std::vector<TraceSpan>& spans);

struct ReportOptions {
  std::size_t slowest = 10;        // requests listed
  std::int64_t now_unix_nano = 0;  // for the 1m and 5m columns
  std::string scope_note;          // what was read, printed under the title
};

// The report as text for a terminal (every outside text made printable).
std::string RenderSloReport(const std::vector<RequestRecord>& records, const ReportOptions& o);

}  // namespace infertel::analytics
