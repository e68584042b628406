#pragma once
// Telemetry builders shared by the OTLP codec and export tests.

#include <string>

#include "core/hex.h"
#include "core/semconv.h"
#include "core/telemetry.h"

namespace infertel::testing {

inline std::string Bytes(std::string_view hex) {
  std::string out;
  HexToBytes(hex, &out);
  return out;
}

inline constexpr std::string_view kTrace = "0af7651916cd43dd8448eb211c80319c";

// A span with the given ids (hex; parent may be empty) and timing in nanoseconds.
inline Span* AddSpan(TracesRequest* req, std::string_view span_hex, std::string_view parent_hex,
                     std::string name, std::uint64_t start, std::uint64_t end,
                     std::string_view trace_hex = kTrace) {
  if (req->resource_spans_size() == 0) {
    auto* rs = req->add_resource_spans();
    AddAttr(rs->mutable_resource()->mutable_attributes(), semconv::kServiceName, "infertel-test");
    rs->add_scope_spans()->mutable_scope()->set_name("infertel.gateway");
  }
  Span* s = req->mutable_resource_spans(0)->mutable_scope_spans(0)->add_spans();
  s->set_trace_id(Bytes(trace_hex));
  s->set_span_id(Bytes(span_hex));
  if (!parent_hex.empty()) s->set_parent_span_id(Bytes(parent_hex));
  s->set_name(std::move(name));
  s->set_kind(otlp_trace::Span::SPAN_KIND_INTERNAL);
  s->set_start_time_unix_nano(start);
  s->set_end_time_unix_nano(end);
  return s;
}

// One span with every kind of attribute value, events, links and an error status.
inline TracesRequest RichRequest() {
  TracesRequest req;
  Span* s = AddSpan(&req, "b7ad6b7169203331", "00f067aa0ba902b7", "chat m", 1700000000000000000ull,
                    1700000000123456789ull);
  s->set_kind(otlp_trace::Span::SPAN_KIND_SERVER);
  auto* a = s->mutable_attributes();
  AddAttr(a, semconv::kGenAiRequestModel, "m");
  AddAttr(a, semconv::kGenAiUsageInputTokens, std::int64_t{42});
  AddAttr(a, "big", std::int64_t{9007199254740993});  // above 2^53
  AddAttr(a, semconv::kGenAiRequestTemperature, 0.25);
  AddAttr(a, semconv::kGenAiRequestIsStream, true);
  AddAttr(a, "quote", "a \"q\" \\ \n\t\x01 é");
  auto* arr = a->Add();
  arr->set_key(std::string(semconv::kGenAiResponseFinishReasons));
  arr->mutable_value()->mutable_array_value()->add_values()->set_string_value("stop");
  arr->mutable_value()->mutable_array_value()->add_values()->set_int_value(7);
  auto* kv = a->Add();
  kv->set_key("kv");
  AddAttr(kv->mutable_value()->mutable_kvlist_value()->mutable_values(), "inner", "x");
  auto* bytes = a->Add();
  bytes->set_key("raw");
  bytes->mutable_value()->set_bytes_value(std::string("\x00\xff\x10", 3));
  auto* ev = s->add_events();
  ev->set_name("gen_ai.content.prompt");
  ev->set_time_unix_nano(1700000000000000500ull);
  AddAttr(ev->mutable_attributes(), "n", std::int64_t{1});
  auto* link = s->add_links();
  link->set_trace_id(Bytes("11111111111111111111111111111111"));
  link->set_span_id(Bytes("2222222222222222"));
  AddAttr(link->mutable_attributes(), "why", "retry");
  s->mutable_status()->set_code(otlp_trace::Status::STATUS_CODE_ERROR);
  s->mutable_status()->set_message("boom");
  AddAttr(a, semconv::kErrorType, "timeout");
  return req;
}

}  // namespace infertel::testing
