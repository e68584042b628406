// The simulator's native SGLang spans (facts/sglang.md §1, spec M4): the span builder on
// hand-made timelines, compared with the published 0.5.20 trace, and the spans a running
// simulator exports over OTLP.

#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>

#include "core/semconv.h"
#include "sglang_test_util.h"
#include "sim/sglang/sglang_tracing.h"

namespace infertel::sim {
namespace {

using testing::AllNamed;
using testing::AttrKeys;
using testing::ById;
using testing::ByName;
using testing::ByPrefix;
using testing::SimPost;
using testing::SpanAttr;
using testing::WaitFor;

constexpr std::uint64_t kMs = 1'000'000;

// A unified request: created at 1 s, tokenized, dispatched, one prefill step, three decode
// steps. Engine monotonic time equals wall time here.
SglangRequestTimeline Timeline() {
  SglangRequestTimeline tl;
  tl.rid = "0123456789abcdef0123456789abcdef";
  tl.created_ns = 1000 * kMs;
  tl.tokenize_end_ns = 1004 * kMs;
  tl.dispatch_start_ns = 1004 * kMs + 50'000;
  tl.dispatch_end_ns = 1005 * kMs;
  tl.recv_ns = 1005 * kMs + 500'000;
  tl.wait_queue_ns = 1005 * kMs + 600'000;
  auto step = [](StepTrace::Kind k, std::uint64_t s, std::uint64_t e, bool done, int bs) {
    StepTrace t;
    t.kind = k;
    t.start_mono_ns = s;
    t.end_mono_ns = e;
    t.prefill_done = done;
    t.batch_size = bs;
    t.batch_id = static_cast<std::uint32_t>(s / kMs);
    t.num_tokens = 1;
    return t;
  };
  tl.steps.push_back(step(StepTrace::Kind::kPrefill, 1027 * kMs, 1053 * kMs, true, 1));
  tl.steps.push_back(step(StepTrace::Kind::kDecode, 1054 * kMs, 1072 * kMs, false, 2));
  tl.steps.push_back(step(StepTrace::Kind::kDecode, 1072 * kMs, 1100 * kMs, false, 2));
  tl.steps.push_back(step(StepTrace::Kind::kDecode, 1100 * kMs, 1190 * kMs, false, 1));
  tl.mono_to_wall = 0;
  tl.completion_ns = 1190 * kMs;
  tl.finished_ns = 1191 * kMs;
  return tl;
}

SglangTraceStyle Style(const char* version = "0.5.20", int tp = 1) {
  SglangVersion v;
  EXPECT_TRUE(ParseSglangVersion(version, &v));
  SglangTraceStyle s{SglangEra(v)};
  s.host_id = "3f2a9c1d0011223344556677";
  s.tokenizer_tid = 100;
  s.scheduler_tids.clear();
  for (int r = 0; r < tp; ++r) s.scheduler_tids.push_back(101 + r);
  return s;
}

SglangSpanInput Input(SglangRequestTimeline tl = Timeline(), int level = 3) {
  SglangSpanInput in;
  in.timeline = std::move(tl);
  in.trace_level = level;
  in.first_token_ns = 1053 * kMs + 100'000;
  SglangRootAttrs a;
  a.completion_tokens = 4;
  a.prompt_tokens = 14;
  a.cached_tokens = 1;
  a.request_id = in.timeline.rid;
  a.max_tokens = 8;
  a.model = "demo-model";
  a.finish_reason = "stop";
  in.root = a;
  return in;
}

std::set<std::string> Names(const std::vector<Span>& spans) {
  std::set<std::string> out;
  for (const auto& s : spans) out.insert(s.name());
  return out;
}

// "Scheduler [TP 0]  [PP 0] (host:… | pid:…)" → "Scheduler [TP 0] [PP 0]"; "x Req abc" → "Req".
std::string Normalize(std::string name) {
  auto host = name.find("(host:");
  if (host != std::string::npos) name = name.substr(0, host);
  name = std::regex_replace(name, std::regex(" +"), " ");
  while (!name.empty() && name.back() == ' ') name.pop_back();
  while (!name.empty() && name.front() == ' ') name.erase(0, 1);
  if (name.rfind("Req ", 0) == 0 || name.find(" Req ") != std::string::npos) return "Req";
  return name;
}

TEST(SglangSpanBuilder, NamesHierarchyAndThreadAttributes) {
  auto spans = BuildSglangSpans(Input(), Style());
  const std::string tok_name = "Tokenizer(host:3f2a9c1d | pid:100)";
  const std::string sched_name = "Scheduler [TP 0]  [PP 0] (host:3f2a9c1d | pid:101)";
  EXPECT_EQ(Names(spans),
            (std::set<std::string>{" Req 01234567", tok_name, sched_name, "tokenize",
                                   "api_server_dispatch", "request_process", "prefill_waiting",
                                   "prefill_forward", "decode_forward", "decode_loop"}));
  const Span* root = ByName(spans, " Req 01234567");
  const Span* tok = ByName(spans, tok_name);
  const Span* sched = ByName(spans, sched_name);
  ASSERT_TRUE(root && tok && sched);
  for (const auto& s : spans) {
    EXPECT_EQ(s.kind(), otlp_trace::Span::SPAN_KIND_INTERNAL) << s.name();
    EXPECT_EQ(s.trace_id(), root->trace_id());
    EXPECT_FALSE(s.has_status()) << s.name();
  }
  // SGLang's id generator makes 64-bit trace ids when it starts the trace itself.
  EXPECT_EQ(root->trace_id().substr(0, 8), std::string(8, '\0'));
  EXPECT_TRUE(root->parent_span_id().empty());
  EXPECT_EQ(tok->parent_span_id(), root->span_id());
  EXPECT_EQ(sched->parent_span_id(), root->span_id());
  for (const char* n : {"tokenize", "api_server_dispatch"})
    EXPECT_EQ(ByName(spans, n)->parent_span_id(), tok->span_id()) << n;
  for (const char* n : {"request_process", "prefill_waiting", "prefill_forward", "decode_forward"})
    EXPECT_EQ(ByName(spans, n)->parent_span_id(), sched->span_id()) << n;
  const Span* decode_forward = ByName(spans, "decode_forward");
  auto loops = AllNamed(spans, "decode_loop");
  ASSERT_EQ(loops.size(), 3u);
  for (std::size_t i = 0; i < loops.size(); ++i) {
    EXPECT_EQ(loops[i]->parent_span_id(), decode_forward->span_id());
    EXPECT_EQ(SpanAttr(*loops[i], "decode_ct")->int_value(), static_cast<std::int64_t>(i));
    EXPECT_EQ(loops[i]->links_size(), 0);  // nested slices have no links
  }

  // Thread spans: ranks first, then host_id, pid, thread_label.
  EXPECT_EQ(AttrKeys(*tok), (std::vector<std::string>{"host_id", "pid", "thread_label"}));
  EXPECT_EQ(SpanAttr(*tok, "host_id")->string_value(), "3f2a9c1d0011223344556677");
  EXPECT_EQ(SpanAttr(*tok, "pid")->int_value(), 100);
  EXPECT_EQ(SpanAttr(*tok, "thread_label")->string_value(), "Tokenizer");
  EXPECT_EQ(AttrKeys(*sched),
            (std::vector<std::string>{"tp_rank", "pp_rank", "host_id", "pid", "thread_label"}));
  EXPECT_EQ(SpanAttr(*sched, "tp_rank")->int_value(), 0);
  EXPECT_EQ(SpanAttr(*sched, "thread_label")->string_value(), "Scheduler");

  // Root: rid and module at start, the gen_ai attributes at the end, in SGLang's order.
  EXPECT_EQ(AttrKeys(*root),
            (std::vector<std::string>{
                "rid", "module", "gen_ai.usage.completion_tokens", "gen_ai.usage.prompt_tokens",
                "gen_ai.usage.cached_tokens", "gen_ai.request.id", "gen_ai.request.max_tokens",
                "gen_ai.request.top_p", "gen_ai.request.temperature", "gen_ai.request.top_k",
                "gen_ai.request.n", "gen_ai.response.model", "gen_ai.response.finish_reasons",
                "gen_ai.latency.time_to_first_token", "gen_ai.latency.e2e",
                "gen_ai.latency.time_in_model_decode", "gen_ai.latency.time_in_model_inference",
                "gen_ai.latency.time_in_model_prefill"}));
  EXPECT_EQ(SpanAttr(*root, "module")->string_value(), "sglang::request");
  EXPECT_EQ(SpanAttr(*root, "gen_ai.response.finish_reasons")->string_value(), "[\"stop\"]");
  EXPECT_NEAR(SpanAttr(*root, "gen_ai.latency.e2e")->double_value(), 0.191, 1e-9);
  EXPECT_NEAR(SpanAttr(*root, "gen_ai.latency.time_in_model_prefill")->double_value() +
                  SpanAttr(*root, "gen_ai.latency.time_in_model_decode")->double_value(),
              SpanAttr(*root, "gen_ai.latency.time_in_model_inference")->double_value(), 1e-9);
}

TEST(SglangSpanBuilder, FirstLevelStagesAreLinkedInOrder) {
  auto spans = BuildSglangSpans(Input(), Style());
  auto link_of = [&](const char* name) -> const Span* {
    const Span* s = ByName(spans, name);
    if (!s || s->links_size() != 1) return nullptr;
    return ById(spans, s->links(0).span_id());
  };
  EXPECT_EQ(ByName(spans, "tokenize")->links_size(), 0);
  const std::vector<std::pair<const char*, const char*>> chain = {
      {"api_server_dispatch", "tokenize"},
      {"request_process", "api_server_dispatch"},  // handed over with the pickled context
      {"prefill_waiting", "request_process"},
      {"prefill_forward", "prefill_waiting"},
      {"decode_forward", "prefill_forward"}};
  for (const auto& [from, to] : chain) {
    const Span* target = link_of(from);
    ASSERT_NE(target, nullptr) << from;
    EXPECT_EQ(target->name(), to) << from;
  }
}

// The published 0.5.20 trace: every span name it shows, its root attributes with their OTLP
// types, and every timing relation between its (uniquely named) spans hold for the simulation.
TEST(SglangSpanBuilder, HasTheShapeOfThePublished0520Trace) {
  std::ifstream f(std::string(INFERTEL_FIXTURES_DIR) + "/sglang-otlp-spans-0.5.20-SANITIZED.json");
  ASSERT_TRUE(f) << "fixture missing";
  std::stringstream ss;
  ss << f.rdbuf();
  simdjson::dom::parser p;
  simdjson::dom::element doc = p.parse(ss.str());
  struct FSpan {
    std::string name;
    std::uint64_t start, end;
  };
  std::vector<FSpan> fixture;
  std::map<std::string, std::string> fixture_root_types;
  for (simdjson::dom::element s : doc["spans"].get_array()) {
    FSpan fs;
    fs.name = Normalize(std::string(std::string_view(s["name"])));
    fs.start = std::stoull(std::string(std::string_view(s["startTimeUnixNano"])));
    fs.end = std::stoull(std::string(std::string_view(s["endTimeUnixNano"])));
    if (fs.name == "Req") {
      for (simdjson::dom::element a : s["attributes"].get_array()) {
        simdjson::dom::object v = a["value"];
        for (auto [k, x] : v)
          fixture_root_types[std::string(std::string_view(a["key"]))] = std::string(k);
      }
    }
    fixture.push_back(fs);
  }
  ASSERT_EQ(fixture.size(), 10u);

  auto spans = BuildSglangSpans(Input(), Style());
  std::map<std::string, std::vector<const Span*>> sim;
  for (const auto& s : spans) sim[Normalize(s.name())].push_back(&s);
  for (const auto& fs : fixture) EXPECT_TRUE(sim.count(fs.name)) << "missing " << fs.name;

  const Span* root = sim["Req"][0];
  for (const auto& [key, type] : fixture_root_types) {
    const AnyValue* v = SpanAttr(*root, key);
    ASSERT_NE(v, nullptr) << key;
    if (type == "intValue") EXPECT_EQ(v->value_case(), AnyValue::kIntValue) << key;
    if (type == "doubleValue") EXPECT_EQ(v->value_case(), AnyValue::kDoubleValue) << key;
    if (type == "stringValue") EXPECT_EQ(v->value_case(), AnyValue::kStringValue) << key;
  }

  // Relations between span edges: equal in the fixture → equal here; before → not after.
  auto edge = [](std::uint64_t start, std::uint64_t end, int which) { return which ? end : start; };
  int checked = 0;
  for (const auto& a : fixture) {
    for (const auto& b : fixture) {
      if (&a == &b || a.name == "decode_loop" || b.name == "decode_loop") continue;
      const Span* sa = sim[a.name][0];
      const Span* sb = sim[b.name][0];
      for (int wa = 0; wa < 2; ++wa) {
        for (int wb = 0; wb < 2; ++wb) {
          std::uint64_t fa = edge(a.start, a.end, wa), fb = edge(b.start, b.end, wb);
          std::uint64_t xa = edge(sa->start_time_unix_nano(), sa->end_time_unix_nano(), wa);
          std::uint64_t xb = edge(sb->start_time_unix_nano(), sb->end_time_unix_nano(), wb);
          if (fa == fb) {
            EXPECT_EQ(xa, xb) << a.name << (wa ? ".end" : ".start") << " == " << b.name
                              << (wb ? ".end" : ".start");
            ++checked;
          } else if (fa < fb) {
            EXPECT_LE(xa, xb) << a.name << (wa ? ".end" : ".start") << " < " << b.name
                              << (wb ? ".end" : ".start");
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 100);
  // The fixture's decode_loop lies inside decode_forward; so do all of ours.
  const Span* df = sim["decode_forward"][0];
  for (const Span* l : sim["decode_loop"]) {
    EXPECT_GE(l->start_time_unix_nano(), df->start_time_unix_nano());
    EXPECT_LE(l->end_time_unix_nano(), df->end_time_unix_nano());
  }
}

TEST(SglangSpanBuilder, TraceLevelsFilterStages) {
  EXPECT_TRUE(BuildSglangSpans(Input(Timeline(), 0), Style()).empty());

  auto l1 = BuildSglangSpans(Input(Timeline(), 1), Style());
  std::set<std::string> n1;
  for (const auto& s : l1) n1.insert(Normalize(s.name()));
  EXPECT_EQ(n1, (std::set<std::string>{"Req", "Tokenizer", "Scheduler [TP 0] [PP 0]", "tokenize",
                                       "prefill_waiting", "prefill_forward", "decode_forward"}));
  // Without the dispatch slice nothing finishes the tokenizer thread before the request ends.
  EXPECT_EQ(ByPrefix(l1, "Tokenizer")->end_time_unix_nano(), 1191 * kMs);
  // The first scheduler slice then links to tokenize.
  const Span* pw = ByName(l1, "prefill_waiting");
  ASSERT_EQ(pw->links_size(), 1);
  EXPECT_EQ(pw->links(0).span_id(), ByName(l1, "tokenize")->span_id());

  auto l2 = BuildSglangSpans(Input(Timeline(), 2), Style());
  EXPECT_NE(ByName(l2, "request_process"), nullptr);
  EXPECT_NE(ByName(l2, "api_server_dispatch"), nullptr);
  EXPECT_EQ(ByName(l2, "decode_loop"), nullptr);
  EXPECT_EQ(ByName(l2, "schedule"), nullptr);
  for (const auto& s : l2) EXPECT_EQ(s.events_size(), 0) << s.name();
}

TEST(SglangSpanBuilder, ScheduleAndRetractEvents) {
  SglangRequestTimeline tl = Timeline();
  StepTrace retract;
  retract.kind = StepTrace::Kind::kRetract;
  retract.start_mono_ns = retract.end_mono_ns = 1101 * kMs;
  StepTrace re_prefill;
  re_prefill.kind = StepTrace::Kind::kPrefill;
  re_prefill.start_mono_ns = 1110 * kMs;
  re_prefill.end_mono_ns = 1120 * kMs;
  re_prefill.prefill_done = true;
  re_prefill.batch_size = 1;
  StepTrace last = tl.steps.back();
  last.start_mono_ns = 1121 * kMs;
  tl.steps.back() = retract;
  tl.steps.push_back(re_prefill);
  tl.steps.push_back(last);
  auto spans = BuildSglangSpans(Input(tl), Style());
  int schedule = 0, retracts = 0;
  for (const auto& s : spans) {
    for (const auto& e : s.events()) {
      if (e.name() == "schedule") {
        ++schedule;
        EXPECT_EQ(FindAttr(e.attributes(), "bid")->string_value().size(), 8u);
        EXPECT_GT(FindAttr(e.attributes(), "batch_size")->int_value(), 0);
        const std::string mode = FindAttr(e.attributes(), "forward_mode")->string_value();
        EXPECT_TRUE(mode == "prefill" || mode == "decode") << mode;
        EXPECT_GE(e.time_unix_nano(), s.start_time_unix_nano());
        EXPECT_LT(e.time_unix_nano(), s.end_time_unix_nano());
      }
      if (e.name() == "retract") {
        ++retracts;
        EXPECT_EQ(e.attributes_size(), 0);
        EXPECT_EQ(e.time_unix_nano(), 1101 * kMs);
      }
    }
  }
  EXPECT_EQ(schedule, 5);  // every scheduled batch
  EXPECT_EQ(retracts, 1);
  // The recomputation after the retraction is a second prefill_forward inside the open
  // decode_forward; the next decode then opens decode_waiting and a second decode_forward
  // nested in the first (SchedulerReqTimeStats resets its decode marks on a retraction).
  auto pf = AllNamed(spans, "prefill_forward");
  ASSERT_EQ(pf.size(), 2u);
  EXPECT_EQ(ById(spans, pf[1]->parent_span_id())->name(), "decode_forward");
  auto dfs = AllNamed(spans, "decode_forward");
  ASSERT_EQ(dfs.size(), 2u);
  EXPECT_EQ(ById(spans, dfs[0]->parent_span_id())->name(), "decode_forward");
  EXPECT_NE(ByName(spans, "decode_waiting"), nullptr);

  // At level 1 the retract event is kept, the schedule events are not.
  auto l1 = BuildSglangSpans(Input(tl, 1), Style());
  int r1 = 0, s1 = 0;
  for (const auto& s : l1)
    for (const auto& e : s.events()) (e.name() == "retract" ? r1 : s1)++;
  EXPECT_EQ(r1, 1);
  EXPECT_EQ(s1, 0);
}

TEST(SglangSpanBuilder, AbortMarksTheThreadSpanNotTheRequestSpan) {
  SglangRequestTimeline tl = Timeline();
  tl.steps.resize(2);
  tl.aborted = true;
  tl.abort_message = "Aborted";
  tl.completion_ns = 1080 * kMs;
  tl.finished_ns = 1081 * kMs;
  SglangSpanInput in = Input(tl);
  in.root.reset();  // attributes only at a normal finish
  auto spans = BuildSglangSpans(in, Style());
  const Span* sched = ByPrefix(spans, "Scheduler");
  ASSERT_NE(sched, nullptr);
  EXPECT_EQ(sched->status().code(), otlp_trace::Status::STATUS_CODE_ERROR);
  EXPECT_EQ(SpanAttr(*sched, "type")->string_value(), "abort");
  EXPECT_EQ(SpanAttr(*sched, "message")->string_value(), "Aborted");
  EXPECT_EQ(sched->end_time_unix_nano(), 1080 * kMs);
  // The open decode_forward is closed at the abort.
  EXPECT_EQ(ByName(spans, "decode_forward")->end_time_unix_nano(), 1080 * kMs);
  const Span* root = ByPrefix(spans, " Req ");
  EXPECT_FALSE(root->has_status());
  EXPECT_EQ(AttrKeys(*root), (std::vector<std::string>{"rid", "module"}));
  EXPECT_EQ(root->end_time_unix_nano(), 1081 * kMs);
}

TEST(SglangSpanBuilder, CallerContextTpRanksAndChunkedPrefill) {
  SglangRequestTimeline tl = Timeline();
  // A prompt prefilled in three chunks.
  StepTrace c1 = tl.steps[0], c2 = tl.steps[0], c3 = tl.steps[0];
  c1.end_mono_ns = 1035 * kMs;
  c1.prefill_done = false;
  c2.start_mono_ns = 1035 * kMs;
  c2.end_mono_ns = 1045 * kMs;
  c2.prefill_done = false;
  c3.start_mono_ns = 1045 * kMs;
  tl.steps.erase(tl.steps.begin());
  tl.steps.insert(tl.steps.begin(), {c1, c2, c3});
  SglangSpanInput in = Input(tl);
  in.traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  in.tracestate = "vendor=value";
  auto spans = BuildSglangSpans(in, Style("0.5.20", 2));
  const Span* root = ByPrefix(spans, " Req ");
  EXPECT_EQ(ToHex(*TraceIdFromHex("4bf92f3577b34da6a3ce929d0e0e4736")),
            "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(root->trace_id(),
            std::string(AsBytes(*TraceIdFromHex("4bf92f3577b34da6a3ce929d0e0e4736"))));
  EXPECT_EQ(root->parent_span_id(), std::string(AsBytes(*SpanIdFromHex("00f067aa0ba902b7"))));
  for (const auto& s : spans) EXPECT_EQ(s.trace_state(), "vendor=value") << s.name();
  // One scheduler thread span per TP rank, each with its own stages.
  auto t0 = ByPrefix(spans, "Scheduler [TP 0]");
  auto t1 = ByPrefix(spans, "Scheduler [TP 1]");
  ASSERT_TRUE(t0 && t1);
  EXPECT_EQ(SpanAttr(*t1, "tp_rank")->int_value(), 1);
  EXPECT_EQ(AllNamed(spans, "prefill_forward").size(), 2u);
  // Three chunks of 3 chunked_prefill slices per rank, nested in prefill_forward.
  auto chunks = AllNamed(spans, "chunked_prefill");
  EXPECT_EQ(chunks.size(), 6u);
  for (const Span* c : chunks) {
    const Span* parent = ById(spans, c->parent_span_id());
    ASSERT_NE(parent, nullptr);
    EXPECT_EQ(parent->name(), "prefill_forward");
  }
  // An unsampled caller: nothing is recorded.
  in.traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";
  EXPECT_TRUE(BuildSglangSpans(in, Style()).empty());
}

TEST(SglangSpanBuilder, OverlapOffAddsDecodeWaiting) {
  SglangTraceStyle st = Style();
  st.overlap_schedule = false;
  auto spans = BuildSglangSpans(Input(), st);
  const Span* dw = ByName(spans, "decode_waiting");
  ASSERT_NE(dw, nullptr);
  EXPECT_EQ(dw->start_time_unix_nano(), 1053 * kMs);
  EXPECT_EQ(dw->end_time_unix_nano(), 1054 * kMs);
  EXPECT_EQ(ByName(spans, "decode_forward")->start_time_unix_nano(), 1054 * kMs);
}

TEST(SglangSpanBuilder, SpeculativeDecodingStages) {
  SglangRequestTimeline tl = Timeline();
  for (auto& s : tl.steps) {
    if (s.kind != StepTrace::Kind::kDecode) continue;
    s.spec_proposed = 3;
    s.spec_accepted = 2;
  }
  auto spans = BuildSglangSpans(Input(tl), Style());
  const Span* df = ByName(spans, "decode_forward");
  for (const char* n : {"spec_draft", "spec_verify", "spec_draft_extend"}) {
    auto v = AllNamed(spans, n);
    ASSERT_EQ(v.size(), 3u) << n;
    for (const Span* s : v) EXPECT_EQ(s->parent_span_id(), df->span_id()) << n;
  }
  const Span* verify = ByName(spans, "spec_verify");
  EXPECT_EQ(SpanAttr(*verify, "num_correct_drafts")->int_value(), 2);
  EXPECT_EQ(SpanAttr(*verify, "accepted_tokens")->int_value(), 2);
  // spec_draft_extend is level 3.
  EXPECT_EQ(ByName(BuildSglangSpans(Input(tl, 2), Style()), "spec_draft_extend"), nullptr);
}

TEST(SglangSpanBuilder, PdPrefillAndDecodeNodes) {
  SglangRequestTimeline p = Timeline();
  p.role = "prefill";
  p.bootstrap_room = 0x1f2e;
  p.pd_queue1_ns = 1005 * kMs + 550'000;
  p.steps.resize(1);
  p.transfer_start_ns = 1054 * kMs;
  p.transfer_end_ns = 1060 * kMs;
  p.completion_ns = 1060 * kMs;
  p.finished_ns = 1061 * kMs;
  auto ps = BuildSglangSpans(Input(p), Style());
  std::set<std::string> pn;
  for (const auto& s : ps) pn.insert(Normalize(s.name()));
  EXPECT_EQ(pn, (std::set<std::string>{"Req", "PrefillTokenizer", "Prefill Scheduler [TP 0] [PP 0]",
                                       "tokenize", "api_server_dispatch", "prefill_prepare",
                                       "prefill_bootstrap", "prefill_waiting", "prefill_forward",
                                       "prefill_transfer_kv_cache"}));
  const Span* root = ByPrefix(ps, "prefill Req ");
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->name(), "prefill Req 01234567");
  EXPECT_EQ(SpanAttr(*root, "bootstrap_room")->string_value(), "0x1f2e");

  SglangRequestTimeline d = Timeline();
  d.role = "decode";
  d.bootstrap_room = 0x1f2e;
  d.pd_queue1_ns = 1005 * kMs + 520'000;
  d.pd_queue2_ns = 1005 * kMs + 560'000;
  auto ds = BuildSglangSpans(Input(d), Style());
  std::set<std::string> dn;
  for (const auto& s : ds) dn.insert(Normalize(s.name()));
  for (const char* n : {"decode_prepare", "decode_bootstrap", "decode_transferred",
                        "decode_waiting", "decode_forward", "fake_output", "decode_loop",
                        "DecodeTokenizer", "Decode Scheduler [TP 0] [PP 0]"})
    EXPECT_TRUE(dn.count(n)) << n;
  EXPECT_FALSE(dn.count("request_process"));
  EXPECT_FALSE(dn.count("prefill_forward"));
  const Span* fake = ByName(ds, "fake_output");
  EXPECT_EQ(ById(ds, fake->parent_span_id())->name(), "decode_forward");
  for (const auto& s : ds)
    for (const auto& e : s.events())
      if (e.name() == "schedule" &&
          FindAttr(e.attributes(), "forward_mode")->string_value() != "decode")
        EXPECT_EQ(FindAttr(e.attributes(), "forward_mode")->string_value(), "prebuilt");
}

TEST(SglangSpanBuilder, OlderReleases) {
  // 0.5.5: before the observability package: `dispatch`, no gen_ai attributes, no [PP],
  // and in PD a "Bootstrap Room 0x…" span above the Req span.
  SglangRequestTimeline tl = Timeline();
  tl.role = "decode";
  tl.bootstrap_room = 0xabc;
  tl.pd_queue1_ns = tl.pd_queue2_ns = tl.recv_ns;
  auto spans = BuildSglangSpans(Input(tl, 1), Style("0.5.5"));
  EXPECT_NE(ByName(spans, "dispatch"), nullptr);
  EXPECT_NE(ByName(spans, "decode_loop"), nullptr);  // no levels yet: every slice
  const Span* room = ByName(spans, "Bootstrap Room 0xabc");
  ASSERT_NE(room, nullptr);
  const Span* root = ByPrefix(spans, "decode Req ");
  EXPECT_EQ(root->parent_span_id(), room->span_id());
  EXPECT_EQ(AttrKeys(*root), (std::vector<std::string>{"rid", "bootstrap_room"}));
  EXPECT_NE(ByPrefix(spans, "Decode Scheduler [TP 0] (host:"), nullptr);
}

TEST(SglangSpanBuilder, RidWithUnderscoreUsesItsLastSegment) {
  SglangRequestTimeline tl = Timeline();
  tl.rid = "worker3_abcdef123456";
  auto spans = BuildSglangSpans(Input(tl), Style());
  const Span* root = ByPrefix(spans, " Req ");
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->name(), " Req abcdef12");
  EXPECT_EQ(SpanAttr(*root, "rid")->string_value(), "abcdef123456");
}

// ---------------------------------------------------------------------------------------------
// A running simulator.

class SglangSpansServerTest : public ::testing::Test {
 protected:
  std::unique_ptr<SimServer> Start(SimOptions o, std::map<std::string, std::string> env = {}) {
    env.emplace("SGLANG_OTLP_EXPORTER_SCHEDULE_DELAY_MILLIS", "20");
    o.sglang.enable_trace = true;
    o.sglang.otlp_traces_endpoint = collector_.endpoint();
    return testing::StartSglang(std::move(o), std::move(env));
  }
  testing::SglCollector collector_;
};

TEST_F(SglangSpansServerTest, ChatRequestIsTracedUnderTheCallersSpan) {
  auto server = Start(SimOptions{});
  ASSERT_TRUE(server);
  const std::string tid = "4bf92f3577b34da6a3ce929d0e0e4736", sid = "00f067aa0ba902b7";
  auto res = SimPost(
      server->port(), "/v1/chat/completions",
      R"({"model":"demo-model","messages":[{"role":"user","content":"hi there"}],"max_tokens":6,"ignore_eos":true})",
      {{"traceparent", "00-" + tid + "-" + sid + "-01"}});
  ASSERT_EQ(res.status, 200) << res.body;
  const std::string rid = testing::JsonId(res.body);
  ASSERT_EQ(rid.size(), 32u);
  auto spans = collector_.TraceOf(rid.substr(0, 8));
  ASSERT_FALSE(spans.empty()) << collector_.count();
  const Span* root = ByPrefix(spans, " Req ");
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->trace_id(), std::string(AsBytes(*TraceIdFromHex(tid))));
  EXPECT_EQ(root->parent_span_id(), std::string(AsBytes(*SpanIdFromHex(sid))));
  EXPECT_EQ(SpanAttr(*root, "gen_ai.request.id")->string_value(), rid);
  EXPECT_EQ(SpanAttr(*root, "gen_ai.usage.completion_tokens")->int_value(), 6);
  EXPECT_EQ(SpanAttr(*root, "gen_ai.response.finish_reasons")->string_value(), "[\"length\"]");
  for (const char* n : {"tokenize", "api_server_dispatch", "request_process", "prefill_waiting",
                        "prefill_forward", "decode_forward", "decode_loop"})
    EXPECT_NE(ByName(spans, n), nullptr) << n;
  EXPECT_EQ(AllNamed(spans, "decode_loop").size(), 5u);  // one per token after the first
  auto all = collector_.all();
  EXPECT_EQ(all[0].scope, "sglang server");
  EXPECT_EQ(FindAttr(all[0].resource.attributes(), "service.name")->string_value(), "sglang");
  // Children of the root stay inside it.
  for (const auto& s : spans) {
    EXPECT_GE(s.start_time_unix_nano(), root->start_time_unix_nano()) << s.name();
    EXPECT_LE(s.end_time_unix_nano(), root->end_time_unix_nano()) << s.name();
  }
}

TEST_F(SglangSpansServerTest, TraceLevelFromEnvAndLive) {
  auto server = Start(SimOptions{}, {{"SGLANG_TRACE_LEVEL", "1"}});
  ASSERT_TRUE(server);
  EXPECT_EQ(server->sglang_trace_level(), 1);
  auto body = R"({"model":"m","messages":[{"role":"user","content":"a b c"}],"max_tokens":3})";
  auto r1 = SimPost(server->port(), "/v1/chat/completions", body);
  auto s1 = collector_.TraceOf(testing::JsonId(r1.body).substr(0, 8));
  ASSERT_FALSE(s1.empty());
  EXPECT_EQ(ByName(s1, "request_process"), nullptr);
  EXPECT_NE(ByName(s1, "prefill_forward"), nullptr);

  auto set = testing::SimGet(server->port(), "/set_trace_level?level=3");
  EXPECT_EQ(set.status, 200);
  EXPECT_EQ(set.body, "success");
  EXPECT_EQ(server->sglang_trace_level(), 3);
  auto r2 = SimPost(server->port(), "/v1/chat/completions", body);
  auto s2 = collector_.TraceOf(testing::JsonId(r2.body).substr(0, 8));
  EXPECT_NE(ByName(s2, "request_process"), nullptr);
  EXPECT_NE(ByName(s2, "decode_loop"), nullptr);

  EXPECT_EQ(testing::SimGet(server->port(), "/set_trace_level?level=0").status, 200);
  const std::size_t before = collector_.count();
  auto r3 = SimPost(server->port(), "/v1/chat/completions", body);
  ASSERT_EQ(r3.status, 200);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(collector_.count(), before);

  EXPECT_EQ(testing::SimGet(server->port(), "/set_trace_level").status, 400);
  EXPECT_EQ(testing::SimGet(server->port(), "/set_trace_level?level=-1").status, 400);
}

TEST_F(SglangSpansServerTest, StreamDisconnectAbortsWithErrorOnTheThreadSpan) {
  SimOptions o;
  o.sglang.stream_abort_delay_ms = 50;
  auto server = Start(o);
  ASSERT_TRUE(server);
  testing::SimStreamThenDisconnect(
      server->port(),
      R"({"model":"m","messages":[{"role":"user","content":"go"}],"stream":true,"max_tokens":5000,"ignore_eos":true,"rid":"abortme0000"})");
  ASSERT_TRUE(WaitFor([&] { return server->engine().Stats().aborted == 1; }));
  // The root and the thread's span may come in different export batches: wait for both.
  std::vector<Span> spans;
  ASSERT_TRUE(WaitFor([&] {
    spans = collector_.TraceOf("abortme0");
    return ByPrefix(spans, "Scheduler") != nullptr && ByPrefix(spans, " Req ") != nullptr;
  }));
  const Span* sched = ByPrefix(spans, "Scheduler");
  EXPECT_EQ(sched->status().code(), otlp_trace::Status::STATUS_CODE_ERROR);
  ASSERT_NE(SpanAttr(*sched, "type"), nullptr);
  EXPECT_EQ(SpanAttr(*sched, "type")->string_value(), "abort");
  ASSERT_NE(SpanAttr(*sched, "message"), nullptr);
  EXPECT_EQ(SpanAttr(*sched, "message")->string_value(), "Aborted");
  const Span* root = ByPrefix(spans, " Req ");
  EXPECT_FALSE(root->has_status());
  EXPECT_EQ(SpanAttr(*root, "gen_ai.request.id"), nullptr);
}

TEST_F(SglangSpansServerTest, TensorParallelSpeculativeAndPd) {
  SimOptions o;
  o.sglang.tp_size = 2;
  o.sglang.speculative_algorithm = "EAGLE";
  auto server = Start(o);
  ASSERT_TRUE(server);
  auto r = SimPost(
      server->port(), "/generate",
      R"({"text":"one two three","sampling_params":{"max_new_tokens":12,"ignore_eos":true},"rid":"specreq0001"})");
  ASSERT_EQ(r.status, 200) << r.body;
  auto spans = collector_.TraceOf("specreq0");
  EXPECT_NE(ByPrefix(spans, "Scheduler [TP 0]"), nullptr);
  EXPECT_NE(ByPrefix(spans, "Scheduler [TP 1]"), nullptr);
  EXPECT_FALSE(AllNamed(spans, "spec_verify").empty());
  EXPECT_EQ(AllNamed(spans, "spec_verify").size() % 2, 0u);  // same stages on both ranks

  SimOptions p;
  p.sglang.disaggregation_mode = "prefill";
  auto prefill = Start(p);
  ASSERT_TRUE(prefill);
  auto pr = SimPost(
      prefill->port(), "/generate",
      R"({"text":"one two","sampling_params":{"max_new_tokens":8},"rid":"pdreq00001","bootstrap_room":4660})");
  ASSERT_EQ(pr.status, 200) << pr.body;
  auto ps = collector_.TraceOf("pdreq000");
  const Span* root = ByPrefix(ps, "prefill Req ");
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(SpanAttr(*root, "bootstrap_room")->string_value(), "0x1234");
  EXPECT_NE(ByName(ps, "prefill_transfer_kv_cache"), nullptr);
  EXPECT_NE(ByName(ps, "prefill_bootstrap"), nullptr);
}

}  // namespace
}  // namespace infertel::sim
