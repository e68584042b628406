#include "analytics/slo_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "core/printable.h"
#include "core/semconv.h"

namespace infertel::analytics {
namespace {

namespace sc = semconv;
constexpr std::int64_t kMinuteNs = 60'000'000'000;

struct Attrs {
  std::optional<bool> met;
  std::vector<std::string> missed;
  std::string model, tenant, cause;
};

// What the report reads of a span's attributes.
Attrs ReadAttrs(const TraceSpan& span) {
  Attrs a;
  auto find = [&](std::string_view key) -> const AttrValue* {
    auto it = span.attributes.find(key);
    return it == span.attributes.end() ? nullptr : &it->second;
  };
  auto text = [&](std::string_view key) {
    const AttrValue* v = find(key);
    const auto* s = v ? std::get_if<std::string>(v) : nullptr;
    return s ? *s : std::string();
  };
  if (const AttrValue* v = find(sc::kInfertelSloMet))
    if (const bool* b = std::get_if<bool>(v)) a.met = *b;
  if (const AttrValue* v = find(sc::kInfertelSloMissed))
    if (const auto* list = std::get_if<std::vector<std::string>>(v)) a.missed = *list;
  a.model = text(sc::kGenAiRequestModel);
  a.tenant = text(sc::kInfertelTenant);
  a.cause = text(sc::kInfertelLatencyCause);
  return a;
}

std::string Percent(std::uint64_t met, std::uint64_t judged) {
  if (judged == 0) return "-";
  return fmt::format("{:.1f}%", 100.0 * static_cast<double>(met) / static_cast<double>(judged));
}

std::string Seconds(std::int64_t ns) {
  const double s = static_cast<double>(ns) / 1e9;
  return s < 1 ? fmt::format("{:.0f} ms", s * 1000) : fmt::format("{:.2f} s", s);
}

struct Row {
  std::uint64_t judged = 0, met = 0, m1_judged = 0, m1_met = 0, m5_judged = 0, m5_met = 0;
  std::map<std::string, std::uint64_t> misses;
};

std::string AttainmentTable(const std::vector<RequestRecord>& records, std::int64_t now) {
  std::map<std::pair<std::string, std::string>, Row> rows;
  for (const RequestRecord& r : records) {
    if (!r.judged) continue;
    Row& row = rows[{r.model, r.tenant}];
    ++row.judged;
    row.met += r.met;
    const std::int64_t end = r.start_unix_nano + r.duration_ns;
    if (end >= now - kMinuteNs) ++row.m1_judged, row.m1_met += r.met;
    if (end >= now - 5 * kMinuteNs) ++row.m5_judged, row.m5_met += r.met;
    for (const auto& m : r.missed) ++row.misses[m];
  }
  if (rows.empty())
    return "no request in the store was judged against latency objectives (set "
           "INFERTEL_SLO_TTFT_MS, INFERTEL_SLO_TPOT_MS or INFERTEL_SLO_E2E_MS)\n";
  std::string out =
      fmt::format("{:<32} {:<16} {:>7} {:>7} {:>9} {:>7} {:>7}  {}\n", "model", "tenant", "judged",
                  "met", "attained", "1m", "5m", "missed (ttft tpot e2e error)");
  for (const auto& entry : rows) {
    const auto& key = entry.first;
    const Row& row = entry.second;  // a plain reference: lambdas may not capture bindings
    auto miss = [&](std::string_view n) {
      auto it = row.misses.find(std::string(n));
      return it == row.misses.end() ? std::uint64_t{0} : it->second;
    };
    out += fmt::format("{:<32} {:<16} {:>7} {:>7} {:>9} {:>7} {:>7}  {} {} {} {}\n",
                       Printable(key.first.empty() ? "-" : key.first),
                       Printable(key.second.empty() ? "-" : key.second), row.judged, row.met,
                       Percent(row.met, row.judged), Percent(row.m1_met, row.m1_judged),
                       Percent(row.m5_met, row.m5_judged), miss(sc::kSloObjectiveTtft),
                       miss(sc::kSloObjectiveTpot), miss(sc::kSloObjectiveE2e),
                       miss(sc::kSloObjectiveError));
  }
  return out;
}

std::string Slowest(std::vector<RequestRecord> records, std::size_t n) {
  std::sort(records.begin(), records.end(), [](const RequestRecord& a, const RequestRecord& b) {
    return std::tie(a.duration_ns, a.trace_id) > std::tie(b.duration_ns, b.trace_id);
  });
  if (records.size() > n) records.resize(n);
  std::string out = fmt::format("{:>10}  {:<24} {:<12} {:<14} {:<18} {}\n", "duration", "model",
                                "tenant", "missed", "cause", "trace");
  for (const RequestRecord& r : records) {
    std::string missed;
    for (const auto& m : r.missed) missed += (missed.empty() ? "" : ",") + m;
    if (missed.empty()) missed = r.judged ? "none" : "-";
    out += fmt::format("{:>10}  {:<24} {:<12} {:<14} {:<18} {}\n", Seconds(r.duration_ns),
                       Printable(r.model.empty() ? "-" : r.model),
                       Printable(r.tenant.empty() ? "-" : r.tenant), Printable(missed),
                       Printable(r.cause.empty() ? "-" : r.cause), r.trace_id);
  }
  return out;
}

}  // namespace

std::optional<RequestRecord> RecordOfTrace(std::string_view trace_id,
                                           const std::vector<TraceSpan>& spans) {
  std::optional<RequestRecord> rec;
  // The engine span's cause (it saw the phases) wins over the entry span's.
  std::string entry_cause, engine_cause;
  for (const TraceSpan& s : spans) {
    Attrs a = ReadAttrs(s);
    if (!a.cause.empty()) (a.met.has_value() ? entry_cause : engine_cause) = a.cause;
    const bool entry = a.met.has_value() || (!rec && s.parent_span_id.empty() && !a.model.empty());
    if (!entry || (rec && rec->judged)) continue;
    RequestRecord r;
    r.trace_id = std::string(trace_id);
    r.model = std::move(a.model);
    r.tenant = std::move(a.tenant);
    r.judged = a.met.has_value();
    r.met = a.met.value_or(false);
    r.missed = std::move(a.missed);
    r.error = s.error;
    r.start_unix_nano = s.start_ns;
    r.duration_ns = std::max<std::int64_t>(0, s.end_ns - s.start_ns);
    rec = std::move(r);
  }
  if (rec) rec->cause = engine_cause.empty() ? entry_cause : engine_cause;
  return rec;
}

std::string RenderSloReport(const std::vector<RequestRecord>& records, const ReportOptions& o) {
  std::string out = "SLO attainment by model and tenant";
  if (!o.scope_note.empty()) out += fmt::format(" ({})", o.scope_note);
  out += "\n\n" + AttainmentTable(records, o.now_unix_nano);
  if (o.slowest > 0 && !records.empty()) {
    out += fmt::format("\nThe {} slowest requests\n\n", std::min(o.slowest, records.size()));
    out += Slowest(records, o.slowest);
  }
  return out;
}

}  // namespace infertel::analytics
