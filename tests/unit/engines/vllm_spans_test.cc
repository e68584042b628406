#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>

#include "core/semconv.h"
#include "core/static_key.h"
#include "engines/assembler.h"
#include "engines/vllm/vllm_spans.h"
#include "otlp/json.h"

namespace infertel::engines {
namespace {
namespace sc = semconv;

std::string ReadFixture(const std::string& name) {
  std::ifstream in(std::string(INFERTEL_FIXTURES_DIR) + "/" + name);
  EXPECT_TRUE(in) << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const AnyValue& Attr(const Span& s, std::string_view key) {
  const AnyValue* v = FindAttr(s.attributes(), key);
  static AnyValue missing;
  EXPECT_NE(v, nullptr) << "missing " << key;
  return v ? *v : missing;
}

// A V1 span as vLLM emits it (facts §1.3): SERVER, seconds.
Span V1Span(std::string_view request_id) {
  Span s;
  s.set_name("llm_request");
  s.set_kind(otlp_trace::Span::SPAN_KIND_SERVER);
  TraceId t = NewTraceId();
  SpanId id = NewSpanId();
  s.set_trace_id(std::string(AsBytes(t)));
  s.set_span_id(std::string(AsBytes(id)));
  s.set_start_time_unix_nano(1'000'000'000'000ull);
  s.set_end_time_unix_nano(1'000'000'000'000ull + 500'000'000ull);  // 0.5 s
  auto* a = s.mutable_attributes();
  AddAttr(a, sc::kGenAiRequestId, request_id);
  AddAttr(a, sc::kGenAiLatencyTimeToFirstToken, 0.1);
  AddAttr(a, sc::kGenAiLatencyE2e, 0.5);
  AddAttr(a, sc::kGenAiLatencyTimeInQueue, 0.02);
  AddAttr(a, sc::kGenAiLatencyTimeInModelPrefill, 0.05);
  AddAttr(a, sc::kGenAiLatencyTimeInModelDecode, 0.39);
  AddAttr(a, sc::kGenAiLatencyTimeInModelInference, 0.44);
  AddAttr(a, sc::kGenAiUsagePromptTokens, std::int64_t{14});
  AddAttr(a, sc::kGenAiUsageCompletionTokens, std::int64_t{8});
  AddAttr(a, sc::kGenAiRequestMaxTokens, std::int64_t{64});
  AddAttr(a, sc::kGenAiRequestN, std::int64_t{1});
  return s;
}

TEST(VllmSpansTest, JoinKeysStripPrefixesAndSubPromptSuffix) {
  Span s = V1Span("chatcmpl-abc-123");
  auto keys = [](const Span& span) {
    const vllm::JoinKeyList k = vllm::JoinKeys(span);
    return std::vector<std::string>(k.begin(), k.end());
  };
  EXPECT_EQ(keys(s), std::vector<std::string>{"abc-123"});
  s = V1Span("cmpl-xyz_2");
  EXPECT_EQ(keys(s), (std::vector<std::string>{"xyz_2", "xyz"}));
  EXPECT_TRUE(vllm::IsVllmRequestSpan(s));
  s.set_name("other");
  EXPECT_FALSE(vllm::IsVllmRequestSpan(s));
}

// The assembler's one lookup: the request id of an llm_request span, the join keys from it.
TEST(VllmSpansTest, RequestSpanIdFindsTheIdOnlyOnRequestSpans) {
  Span s = V1Span("cmpl-xyz_2");
  const AnyValue* id = vllm::RequestSpanId(s);
  ASSERT_NE(id, nullptr);
  EXPECT_EQ(id->string_value(), "cmpl-xyz_2");
  const vllm::JoinKeyList k = vllm::JoinKeys(*id);
  EXPECT_EQ(std::vector<std::string>(k.begin(), k.end()),
            (std::vector<std::string>{"xyz_2", "xyz"}));
  AnyValue number;
  number.set_int_value(7);
  EXPECT_TRUE(vllm::JoinKeys(number).empty());  // an id that is not a string joins nothing
  s.set_name("other");
  EXPECT_EQ(vllm::RequestSpanId(s), nullptr);
  Span no_id;
  no_id.set_name(std::string(sc::kSpanLlmRequest));
  EXPECT_EQ(vllm::RequestSpanId(no_id), nullptr);
  EXPECT_FALSE(vllm::IsVllmRequestSpan(no_id));
}

TEST(VllmSpansTest, V1NormalizedWithRecordAndPhases) {
  Span s = V1Span("chatcmpl-r1");
  JoinRecord r;
  r.request_id = "r1";
  r.trace_id = NewTraceId();
  r.entry_span_id = NewSpanId();
  r.model = "llama";
  r.cached_tokens = 0;
  r.tracing_level = 1;
  r.engine_index = 0;
  vllm::NormalizeContext ctx;
  ctx.record = &r;
  std::vector<Span> phases;
  vllm::Normalize(&s, "vllm.tracing.otel", ctx, &phases);

  EXPECT_EQ(s.kind(), otlp_trace::Span::SPAN_KIND_INTERNAL);
  EXPECT_EQ(s.trace_id(), std::string(AsBytes(r.trace_id)));
  EXPECT_EQ(s.parent_span_id(), std::string(AsBytes(r.entry_span_id)));
  EXPECT_EQ(Attr(s, sc::kGenAiLatencyE2e).int_value(), 500'000'000);
  EXPECT_EQ(Attr(s, sc::kGenAiLatencyTimeToFirstToken).int_value(), 100'000'000);
  EXPECT_EQ(Attr(s, sc::kGenAiLatencyTimeInModelInference).int_value(), 440'000'000);
  EXPECT_EQ(Attr(s, sc::kGenAiRequestModelName).string_value(), "llama");
  EXPECT_EQ(Attr(s, sc::kGenAiUsageCacheReadInputTokens).int_value(), 0);  // known zero is reported
  EXPECT_EQ(Attr(s, sc::kGenAiEngineIndex).int_value(), 0);
  EXPECT_EQ(Attr(s, sc::kGenAiPdRole).string_value(), "none");
  // Absent from vLLM out of process: never invented.
  for (auto k : {sc::kGenAiLatencyTimeInTokenize, sc::kGenAiLatencyTimeInDetokenize,
                 sc::kGenAiLatencyTimeInKvTransfer, sc::kGenAiRequestPreemptionCount}) {
    EXPECT_EQ(FindAttr(s.attributes(), k), nullptr) << k;
  }

  ASSERT_EQ(phases.size(), 3u);
  const Span& wait = phases[0];
  const Span& prefill = phases[1];
  const Span& decode = phases[2];
  EXPECT_EQ(wait.name(), "wait");
  EXPECT_EQ(prefill.name(), "prefill");
  EXPECT_EQ(decode.name(), "decode");
  const std::uint64_t start = s.start_time_unix_nano();
  EXPECT_EQ(decode.start_time_unix_nano(), start + 100'000'000);  // first token
  EXPECT_EQ(decode.end_time_unix_nano(), start + 490'000'000);
  EXPECT_EQ(prefill.start_time_unix_nano(), start + 50'000'000);
  EXPECT_EQ(prefill.end_time_unix_nano(), start + 100'000'000);
  EXPECT_EQ(wait.start_time_unix_nano(), start + 30'000'000);
  EXPECT_EQ(wait.end_time_unix_nano(), start + 50'000'000);
  for (const Span& p : phases) {
    EXPECT_EQ(p.parent_span_id(), s.span_id());
    EXPECT_EQ(p.trace_id(), s.trace_id());
    EXPECT_EQ(p.kind(), otlp_trace::Span::SPAN_KIND_INTERNAL);
    EXPECT_EQ(Attr(p, sc::kGenAiRequestId).string_value(), "chatcmpl-r1");
    EXPECT_EQ(Attr(p, sc::kGenAiRequestModelName).string_value(), "llama");
    EXPECT_EQ(Attr(p, sc::kGenAiEngineIndex).int_value(), 0);
    EXPECT_EQ(Attr(p, sc::kGenAiPdRole).string_value(), "none");
  }
}

TEST(VllmSpansTest, LevelZeroMakesNoPhasesAndPdRolesKeepTheirPhaseOnly) {
  Span s = V1Span("chatcmpl-a");
  vllm::NormalizeContext ctx;
  ctx.level = 0;
  std::vector<Span> phases;
  vllm::Normalize(&s, "vllm.tracing.otel", ctx, &phases);
  EXPECT_TRUE(phases.empty());
  EXPECT_EQ(FindAttr(s.attributes(), sc::kGenAiUsageCacheReadInputTokens),
            nullptr);  // unknown: absent

  Span p = V1Span("chatcmpl-b");
  ctx.level = 1;
  ctx.pd_role = "producer";
  vllm::Normalize(&p, "vllm.tracing.otel", ctx, &phases);
  ASSERT_EQ(phases.size(), 1u);
  EXPECT_EQ(phases[0].name(), "prefill");
  EXPECT_EQ(Attr(p, sc::kGenAiLatencyTimeInModelDecode).int_value(), 0);
  EXPECT_EQ(Attr(p, sc::kGenAiPdRole).string_value(), "producer");

  phases.clear();
  Span d = V1Span("chatcmpl-c");
  ctx.pd_role = "consumer";
  vllm::Normalize(&d, "vllm.tracing.otel", ctx, &phases);
  ASSERT_EQ(phases.size(), 1u);
  EXPECT_EQ(phases[0].name(), "decode");
  EXPECT_EQ(Attr(d, sc::kGenAiLatencyTimeInModelPrefill).int_value(), 0);
}

// Under PD the KV transfer is what the split costs: a decode node's pull ends at its first
// token (it waits in WAITING_FOR_REMOTE_KVS before it is scheduled), a prefill node's push
// starts when its prefill ends; both are children of the request span.
TEST(VllmSpansTest, PdNodesDeriveTheirKvTransferWhenTheEngineTimesIt) {
  vllm::NormalizeContext ctx;
  ctx.level = 1;
  for (std::string_view role : {"consumer", "producer"}) {
    Span s = V1Span("chatcmpl-kv");
    AddAttr(s.mutable_attributes(), sc::kGenAiLatencyTimeInKvTransfer, 0.03);
    ctx.pd_role = role;
    std::vector<Span> phases;
    vllm::Normalize(&s, "vllm.tracing.otel", ctx, &phases);
    ASSERT_EQ(phases.size(), 2u) << role;
    const Span& kv = phases[1];
    EXPECT_EQ(kv.name(), "kv_transfer");
    EXPECT_EQ(kv.parent_span_id(), s.span_id());
    const std::uint64_t first = s.start_time_unix_nano() + 100'000'000;  // TTFT 0.1 s
    if (role == "consumer") {
      EXPECT_EQ(phases[0].name(), "decode");
      EXPECT_EQ(Attr(kv, sc::kGenAiKvTransferDirection).string_value(), "recv");
      EXPECT_EQ(kv.start_time_unix_nano(), first - 30'000'000);
      EXPECT_EQ(kv.end_time_unix_nano(), first);
    } else {
      EXPECT_EQ(phases[0].name(), "prefill");
      EXPECT_EQ(Attr(kv, sc::kGenAiKvTransferDirection).string_value(), "send");
      EXPECT_EQ(kv.start_time_unix_nano(), first);
      EXPECT_EQ(kv.end_time_unix_nano(), first + 30'000'000);
    }
  }
  // Without the engine's timing no transfer is made up.
  Span s = V1Span("chatcmpl-nokv");
  ctx.pd_role = "consumer";
  std::vector<Span> phases;
  vllm::Normalize(&s, "vllm.tracing.otel", ctx, &phases);
  EXPECT_EQ(phases.size(), 1u);
}

TEST(VllmSpansTest, LevelTwoEventsHonourTheEventLimit) {
  Span s = V1Span("chatcmpl-e");
  JoinRecord r;
  r.tracing_level = 2;
  r.engine_index = 0;
  r.dispatch_wall_ns = s.start_time_unix_nano() + 1000;
  for (int i = 0; i < 5; ++i) {
    openai::Exchange::Delta d;
    d.mono_ns = s.start_time_unix_nano() + 100'000'000 + i * 1000;
    d.texts = {"tok" + std::to_string(i)};
    d.logprobs = {-0.5 * i};
    d.token_count = 1;
    r.deltas.push_back(d);
  }
  r.deltas_dropped = 2;
  vllm::NormalizeContext ctx;
  ctx.record = &r;
  ctx.max_events = 4;
  std::vector<Span> phases;
  vllm::Normalize(&s, "vllm.tracing.otel", ctx, &phases);
  ASSERT_EQ(s.events_size(), 4);
  EXPECT_EQ(s.events(0).name(), "WAIT");
  EXPECT_EQ(s.events(1).name(), "PREFILL");
  EXPECT_EQ(s.events(2).name(), "DECODE");
  EXPECT_EQ(s.dropped_events_count(), 4u);  // 1 WAIT + 5 deltas + 2 dropped upstream - 4 kept
  const auto& ev = s.events(2);
  EXPECT_EQ(FindAttr(ev.attributes(), sc::kGenAiTokenCount)->int_value(), 1);
  EXPECT_EQ(FindAttr(ev.attributes(), sc::kGenAiTokenTexts)->array_value().values(0).string_value(),
            "tok1");
  EXPECT_DOUBLE_EQ(
      FindAttr(ev.attributes(), sc::kGenAiTokenLogprobs)->array_value().values(0).double_value(),
      -0.5);
  EXPECT_EQ(FindAttr(ev.attributes(), sc::kGenAiEngineIndex)->int_value(), 0);
  EXPECT_EQ(FindAttr(ev.attributes(), sc::kGenAiTokenIds), nullptr);  // engine returned none
  // The event says which fields are the engine's and which the agent's.
  auto names = [&](const otlp_trace::Span::Event& e, std::string_view key) {
    std::vector<std::string> out;
    for (const auto& v : FindAttr(e.attributes(), key)->array_value().values())
      out.push_back(v.string_value());
    return out;
  };
  EXPECT_EQ(names(ev, sc::kInfertelEventMeasured),
            (std::vector<std::string>{"gen_ai.token.count", "gen_ai.token.texts",
                                      "gen_ai.token.logprobs"}));
  EXPECT_EQ(names(ev, sc::kInfertelEventDerived), (std::vector<std::string>{"time"}));
  EXPECT_EQ(names(s.events(0), sc::kInfertelEventDerived), (std::vector<std::string>{"time"}));
}

// Without logprobs (an engine asked for none, a replayed stream), a DECODE event's texts and
// count come from the delta's content, and say so.
TEST(VllmSpansTest, LevelTwoEventsWithoutTokenDetailTakeTheContent) {
  Span s = V1Span("chatcmpl-c");
  JoinRecord r;
  r.tracing_level = 2;
  openai::Exchange::Delta d;
  d.mono_ns = s.start_time_unix_nano() + 100'000'000;
  d.texts = {"Hello"};
  d.token_count = 1;
  d.texts_derived = true;
  r.deltas = {d, d};
  vllm::NormalizeContext ctx;
  ctx.record = &r;
  std::vector<Span> phases;
  vllm::Normalize(&s, "vllm.tracing.otel", ctx, &phases);
  ASSERT_EQ(s.events_size(), 2);
  const auto& ev = s.events(1);
  EXPECT_EQ(ev.name(), "DECODE");
  EXPECT_EQ(FindAttr(ev.attributes(), sc::kGenAiTokenCount)->int_value(), 1);
  EXPECT_EQ(FindAttr(ev.attributes(), sc::kGenAiTokenTexts)->array_value().values(0).string_value(),
            "Hello");
  const auto& derived = FindAttr(ev.attributes(), sc::kInfertelEventDerived)->array_value();
  ASSERT_EQ(derived.values_size(), 3);
  EXPECT_EQ(derived.values(1).string_value(), "gen_ai.token.count");
  EXPECT_EQ(derived.values(2).string_value(), "gen_ai.token.texts");
  EXPECT_EQ(FindAttr(ev.attributes(), sc::kInfertelEventMeasured)->array_value().values_size(), 0);
}

TEST(VllmSpansTest, RemoteKvWaitIsNestedInTheWaitPhase) {
  Span s = V1Span("chatcmpl-kv");
  AddAttr(s.mutable_attributes(), sc::kGenAiLatencyTimeInKvTransfer, 0.015);
  vllm::NormalizeContext ctx;
  std::vector<Span> phases;
  vllm::Normalize(&s, "vllm.tracing.otel", ctx, &phases);
  ASSERT_EQ(phases.size(), 4u);  // wait, kv_transfer (in wait), prefill, decode
  EXPECT_EQ(phases[0].name(), "wait");
  EXPECT_EQ(phases[1].name(), sc::kSpanKvTransfer);
  EXPECT_EQ(phases[1].parent_span_id(), phases[0].span_id());
  EXPECT_NE(phases[0].span_id(), phases[1].span_id());
  EXPECT_EQ(phases[1].start_time_unix_nano(), phases[0].start_time_unix_nano());
  EXPECT_EQ(phases[1].end_time_unix_nano(), phases[0].start_time_unix_nano() + 15'000'000);
  EXPECT_EQ(Attr(phases[1], sc::kGenAiKvTransferDirection).string_value(), "recv");
  EXPECT_EQ(Attr(s, sc::kGenAiLatencyTimeInKvTransfer).int_value(), 15'000'000);
}

// On the arena (the assembler's path) the phases point at the parent's KeyValues instead of
// copying them, and still go on the wire exactly as copies would. The kv_transfer phase's own
// attribute is added after the shared ones without touching the parent. The heap overload
// gives copies that the caller may change freely.
TEST(VllmSpansTest, PhasesOnTheArenaShareTheParentsAttributes) {
  google::protobuf::Arena arena;
  Span* s = google::protobuf::Arena::CreateMessage<Span>(&arena);
  *s = V1Span("chatcmpl-shared");
  AddAttr(s->mutable_attributes(), sc::kGenAiLatencyTimeInKvTransfer, 0.015);
  vllm::NormalizeContext ctx;
  ctx.engine_index = 3;
  std::vector<Span*> phases;
  vllm::Normalize(s, "vllm.tracing.otel", ctx, &arena, &phases);
  ASSERT_EQ(phases.size(), 4u);  // wait, kv_transfer, prefill, decode
  const int parent_attrs = s->attributes_size();
  auto index_in_parent = [&](const KeyValue* kv) {
    for (int i = 0; i < s->attributes_size(); ++i)
      if (&s->attributes(i) == kv) return i;
    return -1;
  };
  for (const Span* p : phases) {
    // request id, engine index, PD role (no model: unmatched and none sent)
    const int shared = p->name() == sc::kSpanKvTransfer ? 4 : 3;
    ASSERT_EQ(p->attributes_size(), shared) << p->name();
    for (int i = 0; i < 3; ++i) EXPECT_GE(index_in_parent(&p->attributes(i)), 0) << p->name();
    // Its trace id, parent id and name point at the parent's ids and the model's name
    // (core/static_key.h ShareSpanStrings); kv_transfer's parent id is its own, wait's id.
    EXPECT_EQ(p->trace_id(), s->trace_id());
    if (StaticKeysShared()) {
      EXPECT_EQ(&p->trace_id(), &s->trace_id()) << p->name();
      if (p != phases[1]) {
        EXPECT_EQ(&p->parent_span_id(), &s->span_id()) << p->name();
      }
    }
    EXPECT_EQ(p->parent_span_id(), p == phases[1] ? phases[0]->span_id() : s->span_id());
    // On the wire, the same bytes as a phase that owns copies of those attributes.
    Span copy;
    copy.CopyFrom(*p);
    EXPECT_EQ(copy.SerializeAsString(), p->SerializeAsString());
  }
  EXPECT_EQ(Attr(*phases[1], sc::kGenAiKvTransferDirection).string_value(), "recv");
  EXPECT_EQ(s->attributes_size(), parent_attrs);
  EXPECT_EQ(FindAttr(s->attributes(), sc::kGenAiKvTransferDirection), nullptr);
  EXPECT_EQ(Attr(*phases[2], sc::kGenAiRequestId).string_value(), "chatcmpl-shared");
  EXPECT_EQ(Attr(*phases[2], sc::kGenAiEngineIndex).int_value(), 3);

  Span heap = V1Span("chatcmpl-heap");
  std::vector<Span> copies;
  vllm::Normalize(&heap, "vllm.tracing.otel", ctx, &copies);
  ASSERT_FALSE(copies.empty());
  copies[0].mutable_attributes(0)->mutable_value()->set_string_value("changed");
  EXPECT_EQ(Attr(heap, sc::kGenAiRequestId).string_value(), "chatcmpl-heap");
}

TEST(VllmSpansTest, RepeatedKeysFirstOneCountsAndPhasesCopyEveryOne) {
  Span s = V1Span("chatcmpl-dup");
  AddAttr(s.mutable_attributes(), sc::kGenAiLatencyE2e, 0.7);             // a second e2e
  AddAttr(s.mutable_attributes(), sc::kGenAiRequestId, "chatcmpl-dup2");  // a second id
  vllm::NormalizeContext ctx;
  ctx.pd_role = "producer";
  std::vector<Span> phases;
  vllm::Normalize(&s, "vllm.tracing.otel", ctx, &phases);
  int e2e = 0;
  for (const auto& kv : s.attributes()) {
    if (kv.key() != sc::kGenAiLatencyE2e) continue;
    // Only the first is converted, as a lookup by key finds the first.
    if (e2e++ == 0) {
      EXPECT_EQ(kv.value().int_value(), 500'000'000);
    } else {
      EXPECT_DOUBLE_EQ(kv.value().double_value(), 0.7);
    }
  }
  EXPECT_EQ(e2e, 2);
  EXPECT_EQ(Attr(s, sc::kGenAiLatencyTimeInModelDecode).int_value(), 0);  // producer: no decode
  ASSERT_EQ(phases.size(), 1u);                                           // prefill only
  std::vector<std::string> keys, ids;
  for (const auto& kv : phases[0].attributes()) {
    keys.push_back(kv.key());
    if (kv.key() == sc::kGenAiRequestId) ids.push_back(kv.value().string_value());
  }
  EXPECT_EQ(ids, (std::vector<std::string>{"chatcmpl-dup", "chatcmpl-dup2"}));
  EXPECT_EQ(keys, (std::vector<std::string>{std::string(sc::kGenAiRequestId),
                                            std::string(sc::kGenAiRequestId),
                                            std::string(sc::kGenAiPdRole)}));
}

TEST(VllmSpansTest, IntegerSecondsFromAnotherSdkAndAlreadyNormalizedSpans) {
  Span s = V1Span("chatcmpl-i");
  for (auto& kv : *s.mutable_attributes())
    if (kv.key() == sc::kGenAiLatencyE2e)
      kv.mutable_value()->set_int_value(1);  // 1.0 s sent as an int
  vllm::NormalizeContext ctx;
  std::vector<Span> phases;
  vllm::Normalize(&s, "", ctx, &phases);
  EXPECT_EQ(Attr(s, sc::kGenAiLatencyE2e).int_value(), 1'000'000'000);
  // Normalizing again (an infertel behind another) changes nothing.
  Span again = s;
  phases.clear();
  vllm::Normalize(&again, "", ctx, &phases);
  EXPECT_EQ(Attr(again, sc::kGenAiLatencyE2e).int_value(), 1'000'000'000);
  EXPECT_EQ(Attr(again, sc::kGenAiLatencyTimeToFirstToken).int_value(), 100'000'000);
}

// Set `key`'s value to `v` (a double).
void SetLatency(Span* s, std::string_view key, double v) {
  for (auto& kv : *s->mutable_attributes())
    if (kv.key() == key) kv.mutable_value()->set_double_value(v);
}

TEST(VllmSpansTest, LatenciesNotFiniteOrOutOfRangeAreRemovedCountedAndMakeNoPhase) {
  Span s = V1Span("chatcmpl-bad");
  SetLatency(&s, sc::kGenAiLatencyTimeToFirstToken, std::nan(""));
  SetLatency(&s, sc::kGenAiLatencyE2e, -INFINITY);
  SetLatency(&s, sc::kGenAiLatencyTimeInQueue, -0.5);
  SetLatency(&s, sc::kGenAiLatencyTimeInModelPrefill, vllm::kMaxLatencySeconds * 2);
  vllm::NormalizeContext ctx;
  std::vector<Span> phases;
  const vllm::NormalizeReport report = vllm::Normalize(&s, "", ctx, &phases);
  EXPECT_EQ(report.latency_not_finite, 2u);
  EXPECT_EQ(report.latency_out_of_range, 2u);
  for (std::string_view k : {sc::kGenAiLatencyTimeToFirstToken, sc::kGenAiLatencyE2e,
                             sc::kGenAiLatencyTimeInQueue, sc::kGenAiLatencyTimeInModelPrefill})
    EXPECT_EQ(FindAttr(s.attributes(), k), nullptr) << k;
  EXPECT_EQ(Attr(s, sc::kGenAiLatencyTimeInModelDecode).int_value(), 390'000'000);
  EXPECT_EQ(Attr(s, sc::kGenAiRequestId).string_value(), "chatcmpl-bad");
  EXPECT_TRUE(phases.empty()) << "no phase without a valid time to first token";

  // The largest latency taken is kMaxLatencySeconds; an already normalized span's integer
  // nanoseconds are bounded alike.
  Span edge = V1Span("chatcmpl-edge");
  SetLatency(&edge, sc::kGenAiLatencyE2e, vllm::kMaxLatencySeconds);
  phases.clear();
  EXPECT_EQ(vllm::Normalize(&edge, "", ctx, &phases).latency_out_of_range, 0u);
  EXPECT_EQ(Attr(edge, sc::kGenAiLatencyE2e).int_value(), 604'800'000'000'000);
  Span again = edge;
  for (auto& kv : *again.mutable_attributes())
    if (kv.key() == sc::kGenAiLatencyTimeInQueue) kv.mutable_value()->set_int_value(INT64_MAX);
  phases.clear();
  EXPECT_EQ(vllm::Normalize(&again, "", ctx, &phases).latency_out_of_range, 1u);
  EXPECT_EQ(FindAttr(again.attributes(), sc::kGenAiLatencyTimeInQueue), nullptr);
}

TEST(VllmSpansTest, RealV1SampleFromVllm029) {
  TracesRequest req;
  std::string err;
  ASSERT_TRUE(otlp_json::DecodeTraces(ReadFixture("vllm-llm_request-otlp-0.29.0-SANITIZED.json"),
                                      &req, &err))
      << err;
  Span s = req.resource_spans(0).scope_spans(0).spans(0);
  ASSERT_TRUE(vllm::IsVllmRequestSpan(s));
  EXPECT_EQ(vllm::DetectShape(s, "", vllm::SpanShape::kAuto), vllm::SpanShape::kV1);
  vllm::NormalizeContext ctx;
  std::vector<Span> phases;
  vllm::Normalize(&s, "", ctx, &phases);
  EXPECT_EQ(Attr(s, sc::kGenAiLatencyTimeToFirstToken).int_value(), 115545988);
  EXPECT_EQ(Attr(s, sc::kGenAiLatencyTimeInQueue).int_value(), 54589);
  EXPECT_EQ(Attr(s, sc::kGenAiUsagePromptTokens).int_value(), 14);
  ASSERT_EQ(phases.size(), 3u);  // wait, prefill, decode at the default level 1
  EXPECT_LE(phases[2].end_time_unix_nano(), s.end_time_unix_nano());
}

// The V0 sample (an otel-collector debug print from vLLM PR #7089) rebuilt as a span.
TEST(VllmSpansTest, RealV0SampleKeepsSecondsAndHasNoPhases) {
  std::string text = ReadFixture("vllm-llm_request-otelcol-debug-pr7089.txt");
  Span s;
  s.set_name("llm_request");
  s.set_start_time_unix_nano(1);
  s.set_end_time_unix_nano(4'000'000'001);
  std::regex line(R"(-> ([a-z0-9_.]+): (Str|Double|Int)\(([^)]*)\))");
  int n = 0;
  for (std::sregex_iterator it(text.begin(), text.end(), line), end; it != end; ++it, ++n) {
    std::string key = (*it)[1], type = (*it)[2], value = (*it)[3];
    if (type == "Str") AddAttr(s.mutable_attributes(), key, value);
    if (type == "Double") AddAttr(s.mutable_attributes(), key, std::stod(value));
    if (type == "Int")
      AddAttr(s.mutable_attributes(), key, static_cast<std::int64_t>(std::stoll(value)));
  }
  ASSERT_EQ(n, 16);
  EXPECT_EQ(vllm::DetectShape(s, "vllm.llm_engine", vllm::SpanShape::kAuto), vllm::SpanShape::kV0);
  vllm::NormalizeContext ctx;
  std::vector<Span> phases;
  vllm::Normalize(&s, "vllm.llm_engine", ctx, &phases);
  EXPECT_TRUE(phases.empty());  // phases are V1 only
  EXPECT_EQ(s.kind(), otlp_trace::Span::SPAN_KIND_INTERNAL);
  EXPECT_DOUBLE_EQ(Attr(s, sc::kGenAiLatencyE2e).double_value(), 3.775825023651123);  // seconds
  EXPECT_DOUBLE_EQ(Attr(s, sc::kGenAiLatencyTimeInModelExecute).double_value(), 3.6468167304992676);
  EXPECT_EQ(Attr(s, sc::kGenAiUsageNumSequences).int_value(), 1);
}

}  // namespace
}  // namespace infertel::engines
