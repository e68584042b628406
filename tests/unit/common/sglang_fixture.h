#pragma once
// SGLang's published spans (fixtures/sglang-otlp-spans-0.5.20-SANITIZED.json): a list of spans
// with their names, times and typed attributes, whose ids the poster redacted.

#include <simdjson.h>

#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "core/ids.h"
#include "core/telemetry.h"

namespace infertel::testing {

// The fixture's spans appended to `spans`, in its order, each with `trace_id`, an id of its
// own, INTERNAL kind, its times and its attributes; parents and links are the caller's.
template <typename Repeated>
void AddSglangFixtureSpans(Repeated* spans, const std::string& trace_id) {
  std::ifstream in(std::string(INFERTEL_FIXTURES_DIR) + "/sglang-otlp-spans-0.5.20-SANITIZED.json",
                   std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  simdjson::dom::parser parser;
  simdjson::padded_string json(text.str());
  for (simdjson::dom::element e : parser.parse(json)["spans"].get_array()) {
    Span* s = spans->Add();
    s->set_name(std::string(std::string_view(e["name"])));
    s->set_trace_id(trace_id);
    s->set_span_id(std::string(AsBytes(NewSpanId())));
    s->set_kind(otlp_trace::Span::SPAN_KIND_INTERNAL);
    s->set_start_time_unix_nano(std::stoull(std::string(std::string_view(e["startTimeUnixNano"]))));
    s->set_end_time_unix_nano(std::stoull(std::string(std::string_view(e["endTimeUnixNano"]))));
    for (simdjson::dom::element a : e["attributes"].get_array()) {
      const std::string key{std::string_view(a["key"])};
      simdjson::dom::object v = a["value"];
      std::string_view sv;
      double d;
      if (!v["intValue"].get_string().get(sv)) {
        AddAttr(s->mutable_attributes(), key,
                static_cast<std::int64_t>(std::stoll(std::string(sv))));
      } else if (!v["doubleValue"].get_double().get(d)) {
        AddAttr(s->mutable_attributes(), key, d);
      } else if (!v["stringValue"].get_string().get(sv)) {
        AddAttr(s->mutable_attributes(), key, sv);
      }
    }
  }
}

}  // namespace infertel::testing
