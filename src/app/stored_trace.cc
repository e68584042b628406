#include "app/stored_trace.h"

#include <simdjson.h>

#include "core/printable.h"

namespace infertel {
namespace {

// A stored attribute value as the explanation reads it (analytics/explain.h).
analytics::AttrValue ValueOf(simdjson::dom::element e) {
  std::int64_t i;
  double d;
  bool b;
  std::string_view sv;
  simdjson::dom::array arr;
  if (e.get_int64().get(i) == simdjson::SUCCESS) return i;
  if (e.get_double().get(d) == simdjson::SUCCESS) return d;
  if (e.get_bool().get(b) == simdjson::SUCCESS) return b;
  if (e.get_string().get(sv) == simdjson::SUCCESS) return std::string(sv);
  if (e.get_array().get(arr) == simdjson::SUCCESS) {
    std::vector<std::string> out;
    for (simdjson::dom::element x : arr)
      if (x.get_string().get(sv) == simdjson::SUCCESS) out.emplace_back(sv);
    return out;
  }
  return std::monostate{};
}

}  // namespace

analytics::TraceSpan ToTraceSpan(const exporting::StoredSpan& s) {
  analytics::TraceSpan t;
  t.span_id = s.span_id;
  t.parent_span_id = s.parent_span_id;
  t.name = Printable(s.name);  // a client's model name: no controls to the terminal
  t.scope = s.scope;
  t.start_ns = s.start_time_unix_nano;
  t.end_ns = s.end_time_unix_nano;
  t.error = s.status_code == 2;
  simdjson::dom::parser parser;
  simdjson::dom::object attrs;
  if (parser.parse(s.attributes).get_object().get(attrs) == simdjson::SUCCESS)
    for (auto [key, value] : attrs) t.attributes.emplace(std::string(key), ValueOf(value));
  simdjson::dom::array events;
  if (parser.parse(s.events).get_array().get(events) == simdjson::SUCCESS) {
    for (simdjson::dom::element ev : events) {
      std::string_view name;
      if (ev["name"].get_string().get(name) == simdjson::SUCCESS) t.event_names.emplace_back(name);
    }
  }
  return t;
}

}  // namespace infertel
