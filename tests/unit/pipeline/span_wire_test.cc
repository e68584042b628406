#include "pipeline/span_wire.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <string>

#include "pipeline/encode.h"

namespace infertel::pipeline {
namespace {

// What the encoder puts on the wire for one span: its fields written by WriteSpanFields into
// a heap buffer of exactly the cached size (under AddressSanitizer, a byte past it fails).
std::string Written(const Span& span) {
  span.ByteSizeLong();
  const auto size = static_cast<std::size_t>(span.GetCachedSize());
  auto buf = std::make_unique<std::uint8_t[]>(size);
  const std::uint8_t* end = WriteSpanFields(span, buf.get());
  EXPECT_EQ(end - buf.get(), span.GetCachedSize());
  return std::string(reinterpret_cast<const char*>(buf.get()), size);
}

// Every field of a span, and an attribute of every value type.
Span EveryField() {
  Span s;
  s.set_trace_id(std::string(16, '\x01'));
  s.set_span_id(std::string(8, '\x02'));
  s.set_trace_state("vendor=a,other=b");
  s.set_parent_span_id(std::string(8, '\x03'));
  s.set_name("llm_request");
  s.set_kind(otlp_trace::Span::SPAN_KIND_SERVER);
  s.set_start_time_unix_nano(1764633600000000000ull);
  s.set_end_time_unix_nano(1764633600123456789ull);
  auto* attrs = s.mutable_attributes();
  AddAttr(attrs, "gen_ai.request.id", "cmpl-0123456789abcdef0123456789abcdef");
  AddAttr(attrs, "empty.string", "");
  AddAttr(attrs, "bool.true", true);
  AddAttr(attrs, "bool.false", false);
  AddAttr(attrs, "int.zero", static_cast<std::int64_t>(0));
  AddAttr(attrs, "int.negative", static_cast<std::int64_t>(-7));
  AddAttr(attrs, "int.max", std::numeric_limits<std::int64_t>::max());
  AddAttr(attrs, "double", 0.125);
  AddAttr(attrs, "double.zero", 0.0);
  AddAttr(attrs, "long.value", std::string(300, 'x'));  // a two-byte length
  auto* arr = attrs->Add();
  arr->set_key("array");
  arr->mutable_value()->mutable_array_value()->add_values()->set_string_value("a");
  arr->mutable_value()->mutable_array_value()->add_values()->set_int_value(2);
  auto* map = attrs->Add();
  map->set_key("kvlist");
  AddAttr(map->mutable_value()->mutable_kvlist_value()->mutable_values(), "k", "v");
  auto* bytes = attrs->Add();
  bytes->set_key("bytes");
  bytes->mutable_value()->set_bytes_value(std::string("\x00\xff", 2));
  attrs->Add()->set_key("no.value");
  attrs->Add()->mutable_value();  // an unset value under an empty key
  attrs->Add()->mutable_value()->set_int_value(1);
  s.set_dropped_attributes_count(3);
  auto* ev = s.add_events();
  ev->set_name("first_token");
  ev->set_time_unix_nano(5);
  AddAttr(ev->mutable_attributes(), "n", static_cast<std::int64_t>(1));
  s.set_dropped_events_count(300);
  auto* link = s.add_links();
  link->set_trace_id(std::string(16, '\x04'));
  link->set_span_id(std::string(8, '\x05'));
  s.set_dropped_links_count(1);
  s.mutable_status()->set_code(otlp_trace::Status::STATUS_CODE_ERROR);
  s.mutable_status()->set_message("engine error");
  return s;
}

TEST(SpanWireTest, EveryFieldAndValueTypeAsProtobufWritesIt) {
  const Span s = EveryField();
  EXPECT_EQ(Written(s), s.SerializeAsString());
}

TEST(SpanWireTest, ZeroAndEmptyFieldsAreLeftOutAsProtobufDoes) {
  Span s;
  EXPECT_EQ(Written(s), "");
  s.mutable_status();  // present but empty: protobuf still writes the field
  EXPECT_EQ(Written(s), s.SerializeAsString());
  EXPECT_FALSE(Written(s).empty());
}

TEST(SpanWireTest, AKindOutsideTheEnumIsWrittenAsProtobufWritesIt) {
  // proto3 enums are open: a value another sender set is kept, and a negative one is a
  // sign-extended ten-byte varint.
  for (int kind : {-1, 99, 200}) {
    Span s;
    s.set_kind(static_cast<otlp_trace::Span::SpanKind>(kind));
    EXPECT_EQ(Written(s), s.SerializeAsString()) << kind;
  }
}

TEST(SpanWireTest, UnknownFieldsAnywhereAreKeptAsProtobufKeepsThem) {
  // A newer OTLP's fields on the span (Span.flags is field 16), on an attribute and on a
  // value: each must reach the wire, as protobuf would write them.
  for (int where = 0; where < 3; ++where) {
    Span s = EveryField();
    google::protobuf::Message* m = &s;
    if (where == 1) m = s.mutable_attributes(0);
    if (where == 2) m = s.mutable_attributes(2)->mutable_value();
    m->GetReflection()->MutableUnknownFields(m)->AddFixed32(16, 0x301);
    const std::string wire = Written(s);
    EXPECT_EQ(wire, s.SerializeAsString()) << where;
    Span back;
    ASSERT_TRUE(back.ParseFromString(wire));
    const google::protobuf::Message* b = &back;
    if (where == 1) b = &back.attributes(0);
    if (where == 2) b = &back.attributes(2).value();
    EXPECT_EQ(b->GetReflection()->GetUnknownFields(*b).field_count(), 1) << where;
  }
}

TEST(SpanWireTest, RandomSpansAsProtobufWritesThem) {
  std::mt19937_64 rng(20261202);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<std::uint64_t>(n)); };
  auto text = [&](int max) { return std::string(static_cast<std::size_t>(pick(max)), 'a'); };
  for (int round = 0; round < 2000; ++round) {
    Span s;
    if (pick(2) != 0) s.set_trace_id(text(20));
    if (pick(2) != 0) s.set_span_id(text(10));
    if (pick(4) == 0) s.set_trace_state(text(40));
    if (pick(2) != 0) s.set_parent_span_id(text(10));
    if (pick(2) != 0) s.set_name(text(200));
    s.set_kind(static_cast<otlp_trace::Span::SpanKind>(pick(6)));
    s.set_start_time_unix_nano(pick(3) == 0 ? 0 : rng());
    s.set_end_time_unix_nano(pick(3) == 0 ? 0 : rng());
    for (int n = pick(12); n > 0; --n) {
      auto* kv = s.add_attributes();
      if (pick(8) != 0) kv->set_key(text(30));
      if (pick(8) == 0) continue;
      auto* v = kv->mutable_value();
      switch (pick(6)) {
        case 0:
          v->set_string_value(text(400));
          break;
        case 1:
          v->set_bool_value(pick(2) != 0);
          break;
        case 2:
          v->set_int_value(static_cast<std::int64_t>(rng()) >> pick(64));
          break;
        case 3:
          v->set_double_value(static_cast<double>(rng()) / 3.0);
          break;
        case 4:
          v->mutable_array_value()->add_values()->set_int_value(pick(1000));
          break;
        default:
          break;  // a value with nothing set
      }
    }
    if (pick(3) == 0) s.set_dropped_attributes_count(static_cast<std::uint32_t>(rng()));
    if (pick(4) == 0) s.add_events()->set_name(text(10));
    if (pick(4) == 0) s.set_dropped_events_count(static_cast<std::uint32_t>(pick(1000)));
    if (pick(4) == 0) s.add_links()->set_span_id(text(10));
    if (pick(4) == 0) s.set_dropped_links_count(static_cast<std::uint32_t>(pick(1000)));
    if (pick(3) == 0) s.mutable_status()->set_code(otlp_trace::Status::STATUS_CODE_OK);
    ASSERT_EQ(Written(s), s.SerializeAsString()) << "round " << round;
  }
}

TEST(SpanWireTest, ARequestOfSuchSpansEncodesAsProtobufWritesIt) {
  // Through Encode(): spans written here next to one that falls back to protobuf, in the
  // buffer sized for the whole request.
  TracesRequest req;
  auto* ss = req.add_resource_spans()->add_scope_spans();
  for (int i = 0; i < 3; ++i) *ss->add_spans() = EveryField();
  Span* odd = ss->mutable_spans(1);
  odd->GetReflection()->MutableUnknownFields(odd)->AddVarint(16, 1);
  req.ByteSizeLong();
  EXPECT_EQ(Encode(req), req.SerializeAsString());
}

}  // namespace
}  // namespace infertel::pipeline
