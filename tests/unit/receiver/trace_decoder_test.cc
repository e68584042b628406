#include "receiver/trace_decoder.h"

#include <google/protobuf/arena.h>
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/unknown_field_set.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <new>
#include <random>
#include <sstream>
#include <string>

#include "common/allocation_counter.h"
#include "common/sglang_fixture.h"
#include "core/ids.h"
#include "core/semconv.h"
#include "core/static_key.h"
#include "otlp/json.h"

namespace infertel::receiver {
namespace {

namespace sc = semconv;
using google::protobuf::Arena;

// What protobuf's parser makes of `wire`, serialized; nullopt when it refuses it.
std::optional<std::string> ByProtobuf(const std::string& wire) {
  TracesRequest r;
  if (!r.ParseFromString(wire)) return std::nullopt;
  return r.SerializeAsString();
}

// What the decoder makes of `wire` on an arena, serialized; nullopt when it gives up.
std::optional<std::string> ByDecoder(const std::string& wire) {
  Arena arena;
  auto* r = Arena::CreateMessage<TracesRequest>(&arena);
  if (!DecodeTraces(wire, r)) return std::nullopt;
  return r->SerializeAsString();
}

// Where two serialized messages first differ, for a failure's message (they can be long).
std::string FirstDifference(const std::string& a, const std::string& b) {
  std::size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return "sizes " + std::to_string(a.size()) + " and " + std::to_string(b.size()) +
         ", first difference at byte " + std::to_string(i);
}
#define EXPECT_SAME_BYTES(a, b) EXPECT_TRUE((a) == (b)) << FirstDifference((a), (b))
#define ASSERT_SAME_BYTES(a, b) ASSERT_TRUE((a) == (b)) << FirstDifference((a), (b))

// Every KeyValue key of `req` (nested ones included) is the interned key of its name.
void ExpectKeysInterned(const TracesRequest& req) {
  int keys = 0;
  auto check = [&](const auto& attrs, auto& self) -> void {
    for (const KeyValue& kv : attrs) {
      if (kv.key().empty()) continue;
      const StaticKey* k = InternKey(kv.key());
      ASSERT_NE(k, nullptr) << kv.key();
      if (StaticKeysShared()) {
        EXPECT_EQ(&kv.key(), &k->str()) << kv.key();
      }
      ++keys;
      if (kv.value().has_kvlist_value()) self(kv.value().kvlist_value().values(), self);
    }
  };
  for (const auto& rs : req.resource_spans()) {
    check(rs.resource().attributes(), check);
    for (const auto& ss : rs.scope_spans())
      for (const Span& s : ss.spans()) {
        check(s.attributes(), check);
        for (const auto& e : s.events()) check(e.attributes(), check);
        for (const auto& l : s.links()) check(l.attributes(), check);
      }
  }
  EXPECT_GT(keys, 0);
}

std::string ReadFixture(const std::string& name) {
  std::ifstream in(std::string(INFERTEL_FIXTURES_DIR) + "/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// SGLang's spans (fixtures/), as one request.
TracesRequest SglangFixtureRequest() {
  TracesRequest req;
  testing::AddSglangFixtureSpans(req.add_resource_spans()->add_scope_spans()->mutable_spans(),
                                 std::string(AsBytes(NewTraceId())));
  return req;
}

// The engines' real exports (fixtures/), as protobuf on the wire.
TEST(TraceDecoderTest, DecodesTheEnginesFixturesAsProtobufDoes) {
  TracesRequest vllm;
  std::string error;
  ASSERT_TRUE(
      otlp_json::Decode(ReadFixture("vllm-llm_request-otlp-0.29.0-SANITIZED.json"), &vllm, &error))
      << error;
  for (const TracesRequest& from : {vllm, SglangFixtureRequest()}) {
    ASSERT_GT(CountSpans(from), 0u);
    const std::string wire = from.SerializeAsString();
    const auto by_decoder = ByDecoder(wire);
    ASSERT_TRUE(by_decoder.has_value());
    EXPECT_SAME_BYTES(*by_decoder, *ByProtobuf(wire));

    Arena arena;
    auto* r = Arena::CreateMessage<TracesRequest>(&arena);
    ASSERT_TRUE(DecodeTraces(wire, r));
    ExpectKeysInterned(*r);
    EXPECT_EQ(CountSpans(*r), CountSpans(from));
  }
}

// A generator of requests with every field of every message set or not at random, nested
// values, non-ASCII text, and fields the messages do not know (as newer OTLP versions send:
// Span.flags is field 16).
class RandomRequests {
 public:
  explicit RandomRequests(unsigned seed) : rng_(seed) {}

  TracesRequest Make() {
    TracesRequest req;
    for (int i = Below(3); i >= 0; --i) {
      auto* rs = req.add_resource_spans();
      if (Coin()) Attributes(rs->mutable_resource()->mutable_attributes(), 0);
      if (Coin()) rs->mutable_resource()->set_dropped_attributes_count(Int());
      if (Coin()) rs->set_schema_url(Text());
      MaybeUnknown(rs);
      for (int j = Below(3); j >= 0; --j) {
        auto* ss = rs->add_scope_spans();
        if (Coin()) ss->mutable_scope()->set_name(Text());
        if (Coin()) ss->mutable_scope()->set_version(Text());
        if (Coin()) MaybeUnknown(ss->mutable_scope());
        if (Coin()) ss->set_schema_url(Text());
        for (int k = Below(4); k >= 0; --k) MakeSpan(ss->add_spans());
      }
    }
    MaybeUnknown(&req);
    return req;
  }

 private:
  int Below(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  bool Coin() { return Below(2) == 0; }
  std::uint32_t Int() { return static_cast<std::uint32_t>(rng_()); }
  std::uint64_t Long() { return (static_cast<std::uint64_t>(rng_()) << 32) | rng_(); }

  // Text of 0 to 40 characters, sometimes with multi-byte UTF-8.
  std::string Text() {
    static const char* const kPieces[] = {"gen_ai.", "latency", "é", "中文", "x", "_", "0", "🙂"};
    std::string s;
    for (int i = Below(8); i > 0; --i) s += kPieces[Below(8)];
    return s;
  }
  std::string Bytes(std::size_t n) {
    std::string s(n, '\0');
    for (char& c : s) c = static_cast<char>(Below(256));
    return s;
  }
  std::string Key() {
    static const std::string_view kKeys[] = {sc::kGenAiLatencyE2e, sc::kGenAiRequestId,
                                             sc::kGenAiUsagePromptTokens, "k", ""};
    return Coin() ? std::string(kKeys[Below(5)]) : Text();
  }

  void MaybeUnknown(google::protobuf::Message* m) {
    if (Below(3) != 0) return;
    auto* u = m->GetReflection()->MutableUnknownFields(m);
    static const int kNumbers[] = {16, 99, 12345};
    const int n = kNumbers[Below(3)];
    switch (Below(4)) {
      case 0:
        u->AddVarint(n, Long());
        break;
      case 1:
        u->AddFixed32(n, Int());
        break;
      case 2:
        u->AddFixed64(n, Long());
        break;
      default:
        u->AddLengthDelimited(n, Bytes(static_cast<std::size_t>(Below(20))));
    }
  }

  void Value(AnyValue* v, int depth) {
    switch (Below(depth < 3 ? 8 : 5)) {
      case 0:
        v->set_string_value(Text());
        break;
      case 1:
        v->set_bool_value(Coin());
        break;
      case 2:
        v->set_int_value(static_cast<std::int64_t>(Long()));
        break;
      case 3:
        v->set_double_value(static_cast<double>(Int()) / 7.0);
        break;
      case 4:
        v->set_bytes_value(Bytes(static_cast<std::size_t>(Below(20))));
        break;
      case 5:
        for (int i = Below(3); i >= 0; --i)
          Value(v->mutable_array_value()->add_values(), depth + 1);
        break;
      case 6:
        Attributes(v->mutable_kvlist_value()->mutable_values(), depth + 1);
        break;
      default:
        break;  // no value at all
    }
    MaybeUnknown(v);
  }

  template <typename Repeated>
  void Attributes(Repeated* attrs, int depth) {
    for (int i = Below(5); i >= 0; --i) {
      KeyValue* kv = attrs->Add();
      kv->set_key(Key());
      if (Below(5) != 0) Value(kv->mutable_value(), depth);
      MaybeUnknown(kv);
    }
  }

  void MakeSpan(Span* s) {
    s->set_trace_id(Bytes(16));
    s->set_span_id(Bytes(8));
    if (Coin()) s->set_parent_span_id(Bytes(8));
    if (Coin()) s->set_trace_state(Text());
    s->set_name(Text());
    s->set_kind(static_cast<Span::SpanKind>(Below(7)));
    s->set_start_time_unix_nano(Long());
    if (Coin()) s->set_end_time_unix_nano(Long());
    Attributes(s->mutable_attributes(), 0);
    if (Coin()) s->set_dropped_attributes_count(Int());
    for (int i = Below(3) - 1; i >= 0; --i) {
      auto* e = s->add_events();
      e->set_time_unix_nano(Long());
      e->set_name(Text());
      if (Coin()) Attributes(e->mutable_attributes(), 0);
      if (Coin()) e->set_dropped_attributes_count(Int());
      MaybeUnknown(e);
    }
    if (Coin()) s->set_dropped_events_count(Int());
    for (int i = Below(3) - 1; i >= 0; --i) {
      auto* l = s->add_links();
      l->set_trace_id(Bytes(16));
      l->set_span_id(Bytes(8));
      if (Coin()) l->set_trace_state(Text());
      if (Coin()) Attributes(l->mutable_attributes(), 0);
      if (Coin()) l->set_dropped_attributes_count(Int());
      MaybeUnknown(l);
    }
    if (Coin()) s->set_dropped_links_count(Int());
    if (Coin()) {
      s->mutable_status()->set_code(static_cast<otlp_trace::Status::StatusCode>(Below(4)));
      if (Coin()) s->mutable_status()->set_message(Text());
      MaybeUnknown(s->mutable_status());
    }
    MaybeUnknown(s);
  }

  std::mt19937 rng_;
};

TEST(TraceDecoderTest, DecodesRandomRequestsAsProtobufDoes) {
  RandomRequests gen(20261203);
  for (int i = 0; i < 2000; ++i) {
    const std::string wire = gen.Make().SerializeAsString();
    const auto by_decoder = ByDecoder(wire);
    ASSERT_TRUE(by_decoder.has_value()) << "request " << i;
    ASSERT_SAME_BYTES(*by_decoder, *ByProtobuf(wire)) << "request " << i;
  }
}

// Two requests one after the other on the wire are one request to protobuf: repeated fields
// joined, the last of a singular field winning, messages merged.
TEST(TraceDecoderTest, MergesConcatenatedRequestsAsProtobufDoes) {
  RandomRequests gen(7);
  for (int i = 0; i < 300; ++i) {
    const std::string wire = gen.Make().SerializeAsString() + gen.Make().SerializeAsString();
    const auto by_decoder = ByDecoder(wire);
    ASSERT_TRUE(by_decoder.has_value()) << "request " << i;
    ASSERT_SAME_BYTES(*by_decoder, *ByProtobuf(wire)) << "request " << i;
  }
  // A field given twice inside one message: the key's second occurrence wins over an
  // interned first one. One resource attribute whose bytes are two KeyValues one after the
  // other: key "gen_ai.latency.e2e", then key "other.key.longer.than.fifteen".
  KeyValue first, second;
  first.set_key(std::string(sc::kGenAiLatencyE2e));
  second.set_key("other.key.longer.than.fifteen");
  auto framed = [](std::string bytes) {  // field 1, length-delimited; short enough for 1 byte
    return std::string("\x0a") + static_cast<char>(bytes.size()) + bytes;
  };
  const std::string wire =
      framed(framed(framed(first.SerializeAsString() + second.SerializeAsString())));
  Arena arena;
  auto* r = Arena::CreateMessage<TracesRequest>(&arena);
  ASSERT_TRUE(DecodeTraces(wire, r));
  EXPECT_EQ(r->resource_spans(0).resource().attributes(0).key(), "other.key.longer.than.fifteen");
  EXPECT_SAME_BYTES(r->SerializeAsString(), *ByProtobuf(wire));
}

// Damaged input: whenever the decoder takes it, protobuf takes it too and agrees; whatever it
// gives up, DecodeProtobuf leaves to protobuf, so a request is refused only if protobuf
// refuses it.
TEST(TraceDecoderTest, DamagedInputIsTakenOnlyWhenProtobufTakesIt) {
  RandomRequests gen(99);
  std::mt19937 rng(5);
  google::protobuf::LogSilencer quiet;  // protobuf logs every invalid UTF-8 string it refuses
  int taken = 0, refused = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string wire = gen.Make().SerializeAsString();
    if (wire.empty()) continue;
    const auto at = [&] {
      return std::uniform_int_distribution<std::size_t>(0, wire.size() - 1)(rng);
    };
    switch (i % 3) {
      case 0:
        wire.resize(at());
        break;
      case 1:
        wire[at()] = static_cast<char>(rng());
        break;
      default:
        wire[at()] ^= static_cast<char>(1 << (rng() % 8));
        break;
    }
    const auto by_protobuf = ByProtobuf(wire);
    const auto by_decoder = ByDecoder(wire);
    if (by_decoder) {
      ASSERT_TRUE(by_protobuf.has_value()) << "case " << i;
      ASSERT_SAME_BYTES(*by_decoder, *by_protobuf) << "case " << i;
      ++taken;
    } else {
      ++refused;
    }
    pipeline::Held<TracesRequest> held;
    ASSERT_EQ(DecodeProtobuf(wire, &held), by_protobuf.has_value()) << "case " << i;
    if (by_protobuf) {
      ASSERT_SAME_BYTES(held.request->SerializeAsString(), *by_protobuf) << "case " << i;
    }
  }
  // Both outcomes were exercised.
  EXPECT_GT(taken, 100);
  EXPECT_GT(refused, 100);
}

// Inputs found by tests/fuzz/trace_decoder_fuzz.cc: protobuf reads a tag and a length in at
// most 5 bytes, where a value may take 10.
TEST(TraceDecoderTest, TagsAndLengthsLongerThanProtobufReadsAreRefused) {
  for (const std::string& wire : {
           std::string("\xb0\x9c\xb0\x9c\x86\x00\x86\x00", 8),  // a tag of 6 bytes
           std::string("\x0a\x80\x80\x80\x80\x80\x00", 7),      // a length of 6 bytes
           std::string("\x0a\x80\x80\x80\x80\x08", 6),          // a length of 2^31
       }) {
    EXPECT_FALSE(ByProtobuf(wire).has_value());
    EXPECT_FALSE(ByDecoder(wire).has_value());
  }
  // The same lengths in fewer bytes are fine: an empty resource_spans.
  EXPECT_TRUE(ByDecoder(std::string("\x0a\x80\x00", 3)).has_value());
  EXPECT_TRUE(ByProtobuf(std::string("\x0a\x80\x00", 3)).has_value());
}

TracesRequest OneSpan();  // below

// What protobuf's parser makes of `wire` after ApplySpanLimits, serialized.
std::optional<std::string> ByProtobufWithin(const std::string& wire, const SpanLimits& limits,
                                            LimitCounts* counts) {
  TracesRequest r;
  if (!r.ParseFromString(wire)) return std::nullopt;
  ApplySpanLimits(&r, limits, counts);
  counts->unknown_fields += DropUnknownFields(&r);
  return r.SerializeAsString();
}

// What the decoder makes of `wire` within `limits`, serialized.
std::optional<std::string> ByDecoderWithin(const std::string& wire, const SpanLimits& limits,
                                           LimitCounts* counts) {
  Arena arena;
  auto* r = Arena::CreateMessage<TracesRequest>(&arena);
  if (!DecodeTraces(wire, r, &limits, counts)) return std::nullopt;
  return r->SerializeAsString();
}

SpanLimits SmallLimits() {
  SpanLimits l;
  l.attribute_count = 2;
  l.event_count = 1;
  l.link_count = 1;
  l.event_attribute_count = 1;
  l.link_attribute_count = 0;
  l.resource_attribute_count = 3;
  l.attribute_value_length = 4;
  l.value_element_count = 2;
  l.value_depth = 2;
  return l;
}

// The decoder within limits gives what protobuf's parser and then the limits give, and counts
// the same; the limits then find nothing left to do.
TEST(TraceDecoderTest, DecodesRandomRequestsWithinLimitsAsProtobufThenTheLimitsDo) {
  RandomRequests gen(20261204);
  const SpanLimits limits = SmallLimits();
  LimitCounts by_decoder_counts, by_protobuf_counts;
  for (int i = 0; i < 2000; ++i) {
    const std::string wire = gen.Make().SerializeAsString();
    const auto by_decoder = ByDecoderWithin(wire, limits, &by_decoder_counts);
    ASSERT_TRUE(by_decoder.has_value()) << "request " << i;
    ASSERT_SAME_BYTES(*by_decoder, *ByProtobufWithin(wire, limits, &by_protobuf_counts))
        << "request " << i;
    LimitCounts again;
    ByProtobufWithin(*by_decoder, limits, &again);
    ASSERT_EQ(again.total(), 0u) << "request " << i;
  }
  EXPECT_GT(by_decoder_counts.span_attributes, 0u);
  EXPECT_GT(by_decoder_counts.value_length, 0u);
  EXPECT_EQ(by_decoder_counts.span_attributes, by_protobuf_counts.span_attributes);
  EXPECT_EQ(by_decoder_counts.span_events, by_protobuf_counts.span_events);
  EXPECT_EQ(by_decoder_counts.span_links, by_protobuf_counts.span_links);
  EXPECT_EQ(by_decoder_counts.event_attributes, by_protobuf_counts.event_attributes);
  EXPECT_EQ(by_decoder_counts.link_attributes, by_protobuf_counts.link_attributes);
  EXPECT_EQ(by_decoder_counts.resource_attributes, by_protobuf_counts.resource_attributes);
  EXPECT_EQ(by_decoder_counts.value_length, by_protobuf_counts.value_length);
  EXPECT_GT(by_decoder_counts.value_elements, 0u);
  EXPECT_GT(by_decoder_counts.value_depth, 0u);
  EXPECT_GT(by_decoder_counts.unknown_fields, 0u);
  EXPECT_EQ(by_decoder_counts.value_elements, by_protobuf_counts.value_elements);
  EXPECT_EQ(by_decoder_counts.value_depth, by_protobuf_counts.value_depth);
  EXPECT_EQ(by_decoder_counts.unknown_fields, by_protobuf_counts.unknown_fields);
}

// An attribute's value: an array past the element limit keeps its first elements, a
// key-value list too, and collections nested past the depth limit are emptied; the dropped
// elements are checked as protobuf checks them but cost no memory.
TEST(TraceDecoderTest, ValuesPastTheElementAndDepthLimitsAreCutAndCostNoMemory) {
  TracesRequest req = OneSpan();
  Span* s = req.mutable_resource_spans(0)->mutable_scope_spans(0)->mutable_spans(0);
  auto* array = s->add_attributes();
  array->set_key("array");
  for (int i = 0; i < 1'000'000; ++i) array->mutable_value()->mutable_array_value()->add_values();
  auto* list = s->add_attributes();
  list->set_key("list");
  for (int i = 0; i < 2000; ++i)
    AddAttr(list->mutable_value()->mutable_kvlist_value()->mutable_values(), "k", i);
  auto* deep = s->add_attributes();
  deep->set_key("deep");
  AnyValue* v = deep->mutable_value();
  for (int i = 0; i < 12; ++i) v = v->mutable_kvlist_value()->add_values()->mutable_value();
  v->set_int_value(1);
  const std::string wire = req.SerializeAsString();

  const SpanLimits limits;  // 1024 elements, 8 deep
  Arena arena;
  auto* r = Arena::CreateMessage<TracesRequest>(&arena);
  LimitCounts counts;
  ASSERT_TRUE(DecodeTraces(wire, r, &limits, &counts));
  const Span& got = r->resource_spans(0).scope_spans(0).spans(0);
  EXPECT_EQ(got.attributes(1).value().array_value().values_size(), 1024);
  EXPECT_EQ(got.attributes(2).value().kvlist_value().values_size(), 1024);
  EXPECT_EQ(got.attributes(2).value().kvlist_value().values(1023).value().int_value(), 1023);
  const AnyValue* g = &got.attributes(3).value();
  int levels = 0;
  while (g->kvlist_value().values_size() > 0) {
    g = &g->kvlist_value().values(0).value();
    ++levels;
  }
  EXPECT_EQ(levels, 8);
  EXPECT_TRUE(g->has_kvlist_value()) << "the ninth list is there, empty";
  EXPECT_EQ(counts.value_elements, (1'000'000u - 1024u) + (2000u - 1024u));
  EXPECT_EQ(counts.value_depth, 1u);
  EXPECT_LT(arena.SpaceAllocated(), 1u << 20);

  LimitCounts by_protobuf;
  EXPECT_SAME_BYTES(r->SerializeAsString(), *ByProtobufWithin(wire, limits, &by_protobuf));
  EXPECT_EQ(by_protobuf.value_elements, counts.value_elements);
  EXPECT_EQ(by_protobuf.value_depth, counts.value_depth);
}

// Fields OTLP does not define are read as protobuf reads them but not kept within limits, and
// counted; without limits they are kept, as protobuf keeps them.
TEST(TraceDecoderTest, UnknownFieldsAreNotKeptWithinLimits) {
  TracesRequest req = OneSpan();
  Span* s = req.mutable_resource_spans(0)->mutable_scope_spans(0)->mutable_spans(0);
  for (int i = 0; i < 1000; ++i) s->GetReflection()->MutableUnknownFields(s)->AddVarint(99, i);
  AnyValue* v = s->mutable_attributes(0)->mutable_value();
  v->GetReflection()->MutableUnknownFields(v)->AddLengthDelimited(42, std::string(1000, 'x'));
  const std::string wire = req.SerializeAsString();
  LimitCounts counts;
  const auto within = ByDecoderWithin(wire, SpanLimits{}, &counts);
  ASSERT_TRUE(within.has_value());
  EXPECT_SAME_BYTES(*within, OneSpan().SerializeAsString());
  EXPECT_EQ(counts.unknown_fields, 1001u);
  EXPECT_SAME_BYTES(*ByDecoder(wire), wire);

  pipeline::Held<TracesRequest> held;  // protobuf's path (deep nesting) drops them too
  AnyValue* deep = s->add_attributes()->mutable_value();
  for (int i = 0; i < kMaxDecodeDepth / 2; ++i) deep = deep->mutable_array_value()->add_values();
  LimitCounts fallback;
  const SpanLimits limits;
  ASSERT_TRUE(DecodeProtobuf(req.SerializeAsString(), &held, &limits, &fallback));
  EXPECT_EQ(fallback.unknown_fields, 1001u);
  EXPECT_EQ(fallback.value_depth, 1u);
}

// Log records: attributes within OTEL_LOGRECORD_* limits (their own count, and the value
// length), the values inside attributes and the body within the element and depth limits,
// the body's strings never cut; decoded by protobuf, unknown fields dropped.
TEST(SpanLimitsTest, LogRecordsAreBroughtWithinTheLogRecordLimits) {
  LogsRequest req;
  auto* rl = req.add_resource_logs();
  for (int i = 0; i < 5; ++i) AddAttr(rl->mutable_resource()->mutable_attributes(), "r", i);
  auto* rec = rl->add_scope_logs()->add_log_records();
  AddAttr(rec->mutable_attributes(), "long", std::string(100, 'a'));
  for (int i = 1; i < 300; ++i) AddAttr(rec->mutable_attributes(), "k", i);
  rec->set_dropped_attributes_count(2);
  auto* body = rec->mutable_body()->mutable_kvlist_value();
  AddAttr(body->mutable_values(), "content", std::string(100, 'b'));
  for (int i = 1; i < 50; ++i) AddAttr(body->mutable_values(), "m", i);
  rec->GetReflection()->MutableUnknownFields(rec)->AddVarint(77, 1);

  SpanLimits l;
  l.log_attribute_count = 10;
  l.log_attribute_value_length = 8;
  l.resource_attribute_count = 3;
  l.value_element_count = 20;
  pipeline::Held<LogsRequest> held;
  LimitCounts c;
  ASSERT_TRUE(DecodeProtobuf(req.SerializeAsString(), &held, &l, &c));
  const auto& got = held.request->resource_logs(0).scope_logs(0).log_records(0);
  EXPECT_EQ(got.attributes_size(), 10);
  EXPECT_EQ(got.attributes(0).value().string_value(), "aaaaaaaa");
  EXPECT_EQ(got.dropped_attributes_count(), 2u + 290u);
  EXPECT_EQ(got.body().kvlist_value().values_size(), 20);
  EXPECT_EQ(got.body().kvlist_value().values(0).value().string_value(), std::string(100, 'b'));
  EXPECT_EQ(got.GetReflection()->GetUnknownFields(got).field_count(), 0);
  EXPECT_EQ(held.request->resource_logs(0).resource().attributes_size(), 3);
  EXPECT_EQ(c.log_attributes, 290u);
  EXPECT_EQ(c.value_length, 1u);
  EXPECT_EQ(c.value_elements, 30u);
  EXPECT_EQ(c.resource_attributes, 2u);
  EXPECT_EQ(c.unknown_fields, 1u);
  LimitCounts again;
  ApplyLogLimits(held.request, l, &again);
  EXPECT_EQ(again.total(), 0u);
}

TEST(SpanLimitsTest, LogRecordVariablesWinOverTheGeneralOnes) {
  std::map<std::string, std::string> env = {{"OTEL_ATTRIBUTE_COUNT_LIMIT", "10"},
                                            {"OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "50"},
                                            {"OTEL_LOGRECORD_ATTRIBUTE_COUNT_LIMIT", "7"},
                                            {"OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "60"}};
  auto get = [&](const char* name) {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  std::vector<std::string> warnings;
  SpanLimits l = SpanLimitsFromEnv(get, &warnings);
  EXPECT_EQ(l.log_attribute_count, 7u);
  EXPECT_EQ(l.log_attribute_value_length, 50u);
  EXPECT_EQ(l.attribute_value_length, 60u);
  env["OTEL_LOGRECORD_ATTRIBUTE_VALUE_LENGTH_LIMIT"] = "5";
  env.erase("OTEL_LOGRECORD_ATTRIBUTE_COUNT_LIMIT");
  l = SpanLimitsFromEnv(get, &warnings);
  EXPECT_EQ(l.log_attribute_count, 10u);
  EXPECT_EQ(l.log_attribute_value_length, 5u);
  EXPECT_TRUE(warnings.empty());
}

TEST(TraceDecoderTest, ItemsPastTheLimitsAreDroppedAndAddedToTheSendersDroppedCounts) {
  TracesRequest req;
  Span* s = req.add_resource_spans()->add_scope_spans()->add_spans();
  s->set_trace_id(std::string(16, '\1'));
  s->set_span_id(std::string(8, '\2'));
  for (int i = 0; i < 1000; ++i) AddAttr(s->mutable_attributes(), "k" + std::to_string(i), i);
  s->mutable_attributes(0)->mutable_value()->set_string_value(
      "\xc3\xa9t\xc3\xa9 long");  // été long
  s->set_dropped_attributes_count(5);
  for (int i = 0; i < 3; ++i) s->add_events()->set_name("e" + std::to_string(i));
  s->set_dropped_events_count(UINT32_MAX - 1);  // saturates
  for (int i = 0; i < 2; ++i) AddAttr(s->add_links()->mutable_attributes(), "l", i);

  pipeline::Held<TracesRequest> held;
  LimitCounts counts;
  const SpanLimits limits = SmallLimits();
  ASSERT_TRUE(DecodeProtobuf(req.SerializeAsString(), &held, &limits, &counts));
  const Span& got = held.request->resource_spans(0).scope_spans(0).spans(0);
  ASSERT_EQ(got.attributes_size(), 2);
  EXPECT_EQ(got.attributes(0).value().string_value(), "\xc3\xa9t\xc3\xa9 ");  // 4 characters
  EXPECT_EQ(got.attributes(1).key(), "k1");
  EXPECT_EQ(got.dropped_attributes_count(), 5u + 998u);
  EXPECT_EQ(got.events_size(), 1);
  EXPECT_EQ(got.dropped_events_count(), UINT32_MAX);
  ASSERT_EQ(got.links_size(), 1);
  EXPECT_EQ(got.links(0).attributes_size(), 0);
  EXPECT_EQ(got.links(0).dropped_attributes_count(), 1u);
  EXPECT_EQ(got.dropped_links_count(), 1u);
  EXPECT_EQ(counts.span_attributes, 998u);
  EXPECT_EQ(counts.span_events, 2u);
  EXPECT_EQ(counts.span_links, 1u);
  EXPECT_EQ(counts.link_attributes, 1u);
  EXPECT_EQ(counts.value_length, 1u);
}

// A dropped item is still checked: what protobuf refuses is refused even past a limit.
TEST(TraceDecoderTest, AnItemPastALimitIsStillCheckedAsProtobufChecksIt) {
  TracesRequest req = OneSpan();
  Span* s = req.mutable_resource_spans(0)->mutable_scope_spans(0)->mutable_spans(0);
  AddAttr(s->mutable_attributes(), "second", "ok");
  AddAttr(s->mutable_attributes(), "third", "bad \xff");  // past a limit of 2
  const std::string wire = req.SerializePartialAsString();
  LimitCounts counts;
  EXPECT_FALSE(ByProtobuf(wire).has_value());
  EXPECT_FALSE(ByDecoderWithin(wire, SmallLimits(), &counts).has_value());
}

// A million attributes within the limits cost about what the kept ones cost.
TEST(TraceDecoderTest, AMillionAttributesPastTheLimitCostNoMemory) {
  TracesRequest req = OneSpan();
  Span* s = req.mutable_resource_spans(0)->mutable_scope_spans(0)->mutable_spans(0);
  for (int i = 0; i < 1'000'000; ++i) AddAttr(s->mutable_attributes(), "k", i);
  const std::string wire = req.SerializeAsString();
  Arena arena;
  auto* r = Arena::CreateMessage<TracesRequest>(&arena);
  const SpanLimits limits;
  LimitCounts counts;
  ASSERT_TRUE(DecodeTraces(wire, r, &limits, &counts));
  EXPECT_EQ(r->resource_spans(0).scope_spans(0).spans(0).attributes_size(), 128);
  EXPECT_EQ(counts.span_attributes, 1'000'001u - 128u);
  EXPECT_LT(arena.SpaceAllocated(), 1u << 20);
}

TEST(SpanLimitsTest, AModelSpecificVariableWinsOverTheGeneralOneWhichWinsOverTheDefault) {
  std::map<std::string, std::string> env = {{"OTEL_ATTRIBUTE_COUNT_LIMIT", "10"},
                                            {"OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", "20"},
                                            {"OTEL_LINK_COUNT_LIMIT", "3"},
                                            {"OTEL_SPAN_LINK_COUNT_LIMIT", "x"},
                                            {"OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "50"}};
  std::vector<std::string> warnings;
  const SpanLimits l = SpanLimitsFromEnv(
      [&](const char* name) {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      &warnings);
  EXPECT_EQ(l.attribute_count, 20u);
  EXPECT_EQ(l.event_attribute_count, 10u);
  EXPECT_EQ(l.link_attribute_count, 10u);
  EXPECT_EQ(l.resource_attribute_count, 10u);
  EXPECT_EQ(l.event_count, 128u);
  EXPECT_EQ(l.link_count, 128u);  // "x" ignored, with a warning
  EXPECT_EQ(l.attribute_value_length, 50u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("OTEL_SPAN_LINK_COUNT_LIMIT"), std::string::npos);
  const SpanLimits defaults = SpanLimitsFromEnv([](const char*) { return nullptr; }, &warnings);
  EXPECT_EQ(defaults.attribute_count, 128u);
  EXPECT_EQ(defaults.attribute_value_length, 1u << 20);
}

TracesRequest OneSpan() {
  TracesRequest req;
  Span* s = req.add_resource_spans()->add_scope_spans()->add_spans();
  s->set_trace_id(std::string(16, '\1'));
  s->set_span_id(std::string(8, '\2'));
  s->set_name("llm_request");
  AddAttr(s->mutable_attributes(), sc::kGenAiRequestId, "chatcmpl-1");
  return req;
}

TEST(TraceDecoderTest, InvalidUtf8InATextFieldIsRefusedAsProtobufRefusesIt) {
  TracesRequest req = OneSpan();
  req.mutable_resource_spans(0)->mutable_scope_spans(0)->mutable_spans(0)->set_name("bad \xff");
  // Built unchecked: the setter does not check, only the parser does.
  const std::string wire = req.SerializePartialAsString();
  EXPECT_FALSE(ByProtobuf(wire).has_value());
  EXPECT_FALSE(ByDecoder(wire).has_value());
  pipeline::Held<TracesRequest> held;
  EXPECT_FALSE(DecodeProtobuf(wire, &held));

  // In a bytes field (an id) any byte is fine.
  req = OneSpan();
  req.mutable_resource_spans(0)->mutable_scope_spans(0)->mutable_spans(0)->set_span_id(
      "\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8");
  EXPECT_EQ(ByDecoder(req.SerializeAsString()), ByProtobuf(req.SerializeAsString()));
}

TEST(TraceDecoderTest, AKnownFieldWithAnotherWireTypeIsKeptAsUnknownAsProtobufKeepsIt) {
  TracesRequest req = OneSpan();
  Span* s = req.mutable_resource_spans(0)->mutable_scope_spans(0)->mutable_spans(0);
  // Span.name (5) as a varint, Span.kind (6) as length-delimited; in an attribute's value (a
  // oneof, whose members must not be reached), string_value (1) as a varint.
  s->GetReflection()->MutableUnknownFields(s)->AddVarint(Span::kNameFieldNumber, 7);
  s->GetReflection()->MutableUnknownFields(s)->AddLengthDelimited(Span::kKindFieldNumber, "x");
  AnyValue* v = s->add_attributes()->mutable_value();
  v->GetReflection()->MutableUnknownFields(v)->AddVarint(AnyValue::kStringValueFieldNumber, 3);
  const std::string wire = req.SerializeAsString();
  const auto by_decoder = ByDecoder(wire);
  ASSERT_TRUE(by_decoder.has_value());
  EXPECT_SAME_BYTES(*by_decoder, *ByProtobuf(wire));
  TracesRequest back;
  ASSERT_TRUE(back.ParseFromString(*by_decoder));
  const Span& b = back.resource_spans(0).scope_spans(0).spans(0);
  EXPECT_EQ(b.name(), "llm_request");
  EXPECT_EQ(b.GetReflection()->GetUnknownFields(b).field_count(), 2);
  EXPECT_EQ(b.attributes(1).value().value_case(), AnyValue::VALUE_NOT_SET);
}

// What the decoder leaves to protobuf: deep nesting and the deprecated
// instrumentation_library_spans. DecodeProtobuf still decodes both.
TEST(TraceDecoderTest, LeavesDeepNestingAndOldFieldsToProtobuf) {
  TracesRequest deep = OneSpan();
  AnyValue* v = deep.mutable_resource_spans(0)
                    ->mutable_scope_spans(0)
                    ->mutable_spans(0)
                    ->mutable_attributes(0)
                    ->mutable_value();
  // Past the decoder's depth (an AnyValue at 2 + 2 per array), within protobuf's (100).
  for (int i = 0; i < kMaxDecodeDepth / 2; ++i) v = v->mutable_array_value()->add_values();
  v->set_int_value(1);
  std::string wire = deep.SerializeAsString();
  EXPECT_FALSE(ByDecoder(wire).has_value());
  pipeline::Held<TracesRequest> held;
  ASSERT_TRUE(DecodeProtobuf(wire, &held));
  EXPECT_SAME_BYTES(held.request->SerializeAsString(), wire);

  // Deprecated in the proto, and used on purpose here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  TracesRequest old = OneSpan();
  old.mutable_resource_spans(0)->add_instrumentation_library_spans()->add_spans()->set_name("x");
  wire = old.SerializeAsString();
  EXPECT_FALSE(ByDecoder(wire).has_value());
  ASSERT_TRUE(DecodeProtobuf(wire, &held));
  EXPECT_EQ(held.request->resource_spans(0).instrumentation_library_spans(0).spans(0).name(), "x");
#pragma GCC diagnostic pop
}

// The point of the decoder: a span's attribute keys cost no allocation (core/static_key.h).
TEST(TraceDecoderTest, ReceivedKeysAreSharedAcrossRequests) {
  if (!StaticKeysShared()) GTEST_SKIP() << "this protobuf copies keys";
  const std::string wire = OneSpan().SerializeAsString();
  Arena a1, a2;
  auto* r1 = Arena::CreateMessage<TracesRequest>(&a1);
  auto* r2 = Arena::CreateMessage<TracesRequest>(&a2);
  ASSERT_TRUE(DecodeTraces(wire, r1));
  ASSERT_TRUE(DecodeTraces(wire, r2));
  const KeyValue& k1 = r1->resource_spans(0).scope_spans(0).spans(0).attributes(0);
  const KeyValue& k2 = r2->resource_spans(0).scope_spans(0).spans(0).attributes(0);
  EXPECT_EQ(k1.key(), sc::kGenAiRequestId);
  EXPECT_EQ(&k1.key(), &k2.key());
  EXPECT_EQ(&k1.key(), &InternKey(sc::kGenAiRequestId)->str());
}

// What the decoder saves, counted: a span with five keys longer than a std::string holds
// inline decodes with five allocations fewer than protobuf's parse, both onto an arena whose
// first block holds the whole request. What is left is the 16-byte trace id's.
TEST(TraceDecoderTest, AReceivedSpansKeysCostNoAllocation) {
  if (!StaticKeysShared()) GTEST_SKIP() << "this protobuf copies keys";
  TracesRequest req = OneSpan();
  auto* attrs =
      req.mutable_resource_spans(0)->mutable_scope_spans(0)->mutable_spans(0)->mutable_attributes();
  attrs->Clear();
  AddAttr(attrs, sc::kGenAiLatencyTimeToFirstToken, 0.04);
  AddAttr(attrs, sc::kGenAiLatencyE2e, 1.2);
  AddAttr(attrs, sc::kGenAiUsagePromptTokens, 312);
  AddAttr(attrs, sc::kGenAiUsageCompletionTokens, 128);
  AddAttr(attrs, sc::kGenAiRequestMaxTokens, 256);
  const std::string wire = req.SerializeAsString();
  alignas(8) static char block[65536];
  auto count = [&](auto decode) {
    google::protobuf::ArenaOptions options;
    options.initial_block = block;
    options.initial_block_size = sizeof(block);
    Arena arena(options);
    auto* r = Arena::CreateMessage<TracesRequest>(&arena);
    int n = AllocationsIn([&] { ASSERT_TRUE(decode(r)); });
    EXPECT_EQ(r->SerializeAsString(), wire);
    return n;
  };
  ASSERT_TRUE(ByDecoder(wire).has_value());  // the keys interned before counting
  const int by_protobuf = count([&](TracesRequest* r) { return r->ParseFromString(wire); });
  const int by_decoder = count([&](TracesRequest* r) { return DecodeTraces(wire, r); });
  EXPECT_EQ(by_protobuf - by_decoder, 5);
  EXPECT_EQ(by_decoder, 1);
}

}  // namespace
}  // namespace infertel::receiver
