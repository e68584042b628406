// SGLang's native spans (spec M4.2-M4.4): recognition, levels, re-attachment past dropped
// spans, PD links, and the agent's resource, on the SGLang 0.5.20 span fixture and on spans
// shaped as facts/sglang.md §1.4 describes.

#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>

#include "common/engine_ids.h"
#include "common/sglang_fixture.h"
#include "core/semconv.h"
#include "engines/assembler.h"
#include "engines/sglang/sglang_keys.h"
#include "engines/sglang/sglang_spans.h"
#include "engines/sglang/tracker.h"

namespace infertel::engines::sglang {
namespace {
namespace sc = semconv;
using Spans = google::protobuf::RepeatedPtrField<Span>;

std::string Id8() { return std::string(AsBytes(NewSpanId())); }

// The fixture's spans (its ids were redacted by the poster): names, times and attributes as
// published; ids given here, and the tree and links SGLang makes (facts §1.4): the request
// span under the entry span, the thread spans under it, the stages under their thread,
// decode_loop under decode_forward, each first-level stage linked to the previous one.
struct FixtureTree {
  std::string trace;
  std::string entry;
  Spans spans;
  std::map<std::string, std::string> ids;  // name → span id
};

FixtureTree LoadFixture() {
  FixtureTree t;
  t.trace = std::string(AsBytes(NewTraceId()));
  t.entry = Id8();
  testing::AddSglangFixtureSpans(&t.spans, t.trace);
  for (const Span& s : t.spans) t.ids[s.name()] = s.span_id();
  const std::map<std::string, std::string> parent{
      {"Req req-sglang-001", ""},  // → entry
      {"Tokenizer", "Req req-sglang-001"},
      {"tokenize", "Tokenizer"},
      {"api_server_dispatch", "Tokenizer"},
      {"Scheduler [TP 0] [PP 0]", "Req req-sglang-001"},
      {"request_process", "Scheduler [TP 0] [PP 0]"},
      {"prefill_waiting", "Scheduler [TP 0] [PP 0]"},
      {"prefill_forward", "Scheduler [TP 0] [PP 0]"},
      {"decode_forward", "Scheduler [TP 0] [PP 0]"},
      {"decode_loop", "decode_forward"},
  };
  const std::map<std::string, std::string> link{
      {"api_server_dispatch", "tokenize"},    {"request_process", "api_server_dispatch"},
      {"prefill_waiting", "request_process"}, {"prefill_forward", "prefill_waiting"},
      {"decode_forward", "prefill_forward"},
  };
  for (Span& s : t.spans) {
    auto p = parent.at(s.name());
    s.set_parent_span_id(p.empty() ? t.entry : t.ids.at(p));
    if (auto l = link.find(s.name()); l != link.end()) {
      auto* nl = s.add_links();
      nl->set_trace_id(t.trace);
      nl->set_span_id(t.ids.at(l->second));
    }
  }
  return t;
}

std::set<std::string> Names(const Spans& spans) {
  std::set<std::string> out;
  for (const auto& s : spans) out.insert(s.name());
  return out;
}

const Span& ByName(const Spans& spans, std::string_view name) {
  for (const auto& s : spans)
    if (s.name() == name) return s;
  ADD_FAILURE() << "no span " << name;
  static Span none;
  return none;
}

TEST(SglangSpans, FixtureRolesAndLevels) {
  FixtureTree t = LoadFixture();
  ASSERT_EQ(t.spans.size(), 10);
  std::map<std::string, SpanRole> roles;
  for (const auto& s : t.spans) roles[s.name()] = Classify(s);
  EXPECT_EQ(roles["Req req-sglang-001"], SpanRole::kRequest);
  EXPECT_EQ(roles["Tokenizer"], SpanRole::kThread);
  EXPECT_EQ(roles["Scheduler [TP 0] [PP 0]"], SpanRole::kThread);
  for (auto n : {"tokenize", "api_server_dispatch", "request_process", "prefill_waiting",
                 "prefill_forward", "decode_loop", "decode_forward"}) {
    EXPECT_EQ(roles[n], SpanRole::kStage) << n;
  }
  EXPECT_EQ(StageLevel("tokenize"), 1);
  EXPECT_EQ(StageLevel("api_server_dispatch"), 2);
  EXPECT_EQ(StageLevel("request_process"), 2);
  EXPECT_EQ(StageLevel("decode_loop"), 3);
  EXPECT_EQ(StageLevel("chunked_prefill"), 3);
  EXPECT_EQ(StageLevel("spec_verify"), 2);
  EXPECT_EQ(StageLevel("spec_draft_extend"), 3);
  EXPECT_EQ(StageLevel("run_batch_cpu"), 4);
  EXPECT_EQ(StageLevel("fake_output"), 3);
  EXPECT_EQ(StageLevel("decode_transferred"), 1);
  EXPECT_EQ(StageLevel("dispatch"), 2);  // the name before api_server_dispatch
  EXPECT_EQ(StageLevel("llm_request"), std::nullopt);
  EXPECT_EQ(EventLevel("retract"), 1);
  EXPECT_EQ(EventLevel("schedule"), 3);
}

TEST(SglangSpans, NamesFromFactsAreRecognised) {
  auto span = [](std::string name) {
    Span s;
    s.set_name(std::move(name));
    return s;
  };
  EXPECT_EQ(Classify(span(" Req 1a2b3c4d")), SpanRole::kRequest);
  EXPECT_EQ(Classify(span("prefill Req 1a2b3c4d")), SpanRole::kRequest);
  EXPECT_EQ(Classify(span("decode Req 1a2b3c4d")), SpanRole::kRequest);
  EXPECT_EQ(Classify(span("Scheduler [TP 0] (host:3f2a9c1d | pid:12345)")), SpanRole::kThread);
  EXPECT_EQ(Classify(span("Tokenizer(host:3f2a9c1d | pid:12001)")), SpanRole::kThread);
  EXPECT_EQ(Classify(span("Prefill Scheduler [TP 1]  [DP 0] (host:a | pid:1)")), SpanRole::kThread);
  EXPECT_EQ(Classify(span("MultiTokenizer-2")), SpanRole::kThread);
  EXPECT_EQ(Classify(span("DP Controller")), SpanRole::kThread);
  EXPECT_EQ(Classify(span("Bootstrap Room 0x1f")), SpanRole::kOther);
  EXPECT_EQ(Classify(span("Request")), SpanRole::kOther);
  EXPECT_EQ(RequestRole("prefill Req 1a2b3c4d"), "prefill");
  EXPECT_EQ(RequestRole("decode Req 1a2b3c4d"), "decode");
  EXPECT_EQ(RequestRole(" Req 1a2b3c4d"), "");

  Span thread = span("whatever");
  AddAttr(thread.mutable_attributes(), sc::kSglThreadLabel, "Scheduler");
  AddAttr(thread.mutable_attributes(), sc::kSglHostId, "3f2a9c1d0000");
  EXPECT_TRUE(IsUnmistakablySglang(thread));
  EXPECT_EQ(Classify(thread), SpanRole::kThread);
  Span req = span("x");
  AddAttr(req.mutable_attributes(), sc::kSglModule, "sglang::request");
  EXPECT_TRUE(IsUnmistakablySglang(req));
  EXPECT_FALSE(IsUnmistakablySglang(span("tokenize")));  // a stage name alone is not enough
  AddAttr(req.mutable_attributes(), sc::kSglBootstrapRoom, static_cast<std::int64_t>(255));
  EXPECT_EQ(BootstrapRoom(req), "0xff");

  Resource r;
  otlp_common::InstrumentationScope scope;
  scope.set_name("sglang server");
  EXPECT_TRUE(IsSglangScope(r, scope));
  scope.set_name("other");
  EXPECT_FALSE(IsSglangScope(r, scope));
  AddAttr(r.mutable_attributes(), sc::kServiceName, "sglang");
  EXPECT_TRUE(IsSglangScope(r, scope));
}

// Level by level, the fixture keeps exactly the spans facts §1.4's upstream tests expect.
TEST(SglangSpans, FixtureThroughTheTrackerAtEachLevel) {
  const std::set<std::string> always{"Req req-sglang-001", "Tokenizer", "Scheduler [TP 0] [PP 0]"};
  const std::map<int, std::set<std::string>> stages{
      {1, {"tokenize", "prefill_waiting", "prefill_forward", "decode_forward"}},
      {2,
       {"tokenize", "api_server_dispatch", "request_process", "prefill_waiting", "prefill_forward",
        "decode_forward"}},
      {3,
       {"tokenize", "api_server_dispatch", "request_process", "prefill_waiting", "prefill_forward",
        "decode_forward", "decode_loop"}},
  };
  for (int level = 0; level <= 4; ++level) {
    FixtureTree t = LoadFixture();
    const Spans original = t.spans;
    Tracker tracker;
    ProcessResult r = tracker.Process(&t.spans, level);
    std::set<std::string> want;
    if (level > 0) {
      want = always;
      auto& st = stages.at(std::min(level, 3));
      want.insert(st.begin(), st.end());
    }
    EXPECT_EQ(Names(t.spans), want) << "level " << level;
    EXPECT_EQ(r.kept, want.size());
    EXPECT_EQ(r.dropped, 10 - want.size());
    // Kept spans travel unchanged, except links that pointed past a dropped span.
    for (const auto& s : t.spans) {
      const Span& o = ByName(original, s.name());
      EXPECT_EQ(s.attributes_size(), o.attributes_size());
      EXPECT_EQ(s.parent_span_id(), o.parent_span_id()) << s.name();
      EXPECT_EQ(s.start_time_unix_nano(), o.start_time_unix_nano());
      EXPECT_EQ(s.end_time_unix_nano(), o.end_time_unix_nano());
    }
    if (level == 1) {
      // SGLang at level 1 links prefill_waiting to the previous first-level stage it made:
      // tokenize (request_process and api_server_dispatch were never made).
      const Span& pw = ByName(t.spans, "prefill_waiting");
      ASSERT_EQ(pw.links_size(), 1);
      EXPECT_EQ(pw.links(0).span_id(), t.ids.at("tokenize"));
      EXPECT_EQ(pw.links(0).trace_id(), t.trace);
    }
    if (level >= 3) {
      const Span& pw = ByName(t.spans, "prefill_waiting");
      ASSERT_EQ(pw.links_size(), 1);
      EXPECT_EQ(pw.links(0).span_id(), t.ids.at("request_process"));
    }
  }
}

TEST(SglangSpans, RequestAttributesOfTheFixtureAreKept) {
  FixtureTree t = LoadFixture();
  Tracker tracker;
  tracker.Process(&t.spans, 3);
  const Span& req = ByName(t.spans, "Req req-sglang-001");
  EXPECT_EQ(FindAttr(req.attributes(), sc::kGenAiUsagePromptTokens)->int_value(), 14);
  EXPECT_EQ(FindAttr(req.attributes(), sc::kGenAiUsageCompletionTokens)->int_value(), 8);
  EXPECT_EQ(FindAttr(req.attributes(), sc::kGenAiUsageCachedTokens)->int_value(), 1);
  EXPECT_EQ(FindAttr(req.attributes(), sc::kGenAiRequestId)->string_value(), "req-sglang-001");
  EXPECT_DOUBLE_EQ(FindAttr(req.attributes(), sc::kGenAiLatencyE2e)->double_value(),
                   0.19174834800651297);
  EXPECT_EQ(req.parent_span_id(), t.entry);
}

// The tenant the gateway named for the request goes on its request spans, and only there.
TEST(SglangSpans, RequestSpansInheritTheTenant) {
  FixtureTree t = LoadFixture();
  TraceId trace;
  std::copy(t.trace.begin(), t.trace.end(), trace.begin());
  Tracker tracker;
  tracker.OnRequestStarted(trace, 3, "acme");
  tracker.Process(&t.spans, 3);
  int requests = 0;
  for (const auto& s : t.spans) {
    const AnyValue* tenant = FindAttr(s.attributes(), sc::kInfertelTenant);
    if (Classify(s) == SpanRole::kRequest) {
      ++requests;
      ASSERT_NE(tenant, nullptr) << s.name();
      EXPECT_EQ(tenant->string_value(), "acme");
    } else {
      EXPECT_EQ(tenant, nullptr) << s.name();
    }
  }
  EXPECT_GE(requests, 1);
}

TEST(SglangSpans, LevelOfTheRequestWinsOverTheCurrentOne) {
  FixtureTree t = LoadFixture();
  TraceId trace;
  std::copy(t.trace.begin(), t.trace.end(), trace.begin());
  Tracker tracker;
  tracker.OnRequestStarted(trace, 1);
  tracker.OnRequestFinished(trace);
  EXPECT_EQ(tracker.LevelOf(trace), 1);
  tracker.Process(&t.spans, /*current_level=*/3);
  EXPECT_FALSE(Names(t.spans).count("decode_loop"));
  EXPECT_FALSE(Names(t.spans).count("request_process"));
  EXPECT_TRUE(Names(t.spans).count("prefill_forward"));

  // After the record's time is up, the current level applies.
  FixtureTree u = LoadFixture();
  TrackerOptions o;
  o.request_ttl = std::chrono::seconds(1);
  Tracker short_lived(o);
  TraceId trace2;
  std::copy(u.trace.begin(), u.trace.end(), trace2.begin());
  auto now = Tracker::Clock::now();
  short_lived.OnRequestStarted(trace2, 1, {}, now);
  short_lived.OnRequestFinished(trace2, now);
  short_lived.Process(&u.spans, 3, now + std::chrono::seconds(2));
  EXPECT_TRUE(Names(u.spans).count("decode_loop"));
}

TEST(SglangSpans, EventsAboveTheLevelLeaveAndLinksAcrossBatchesAreMended) {
  Tracker tracker;
  const std::string trace(AsBytes(NewTraceId()));
  Spans first;
  Span* thread = first.Add();
  thread->set_name("Scheduler [TP 0] (host:aa | pid:1)");
  thread->set_trace_id(trace);
  thread->set_span_id(Id8());
  Span* rp = first.Add();  // level 2, dropped at 1; links to a span of another process
  rp->set_name("request_process");
  rp->set_trace_id(trace);
  rp->set_span_id(Id8());
  rp->set_parent_span_id(thread->span_id());
  const std::string tokenize_id = Id8();
  rp->add_links()->set_trace_id(trace);
  rp->mutable_links(0)->set_span_id(tokenize_id);
  const std::string rp_id = rp->span_id();
  const std::string thread_id = thread->span_id();
  tracker.Process(&first, 1);
  ASSERT_EQ(first.size(), 1);

  Spans second;  // a later batch of the same process
  Span* pw = second.Add();
  pw->set_name("prefill_forward");
  pw->set_trace_id(trace);
  pw->set_span_id(Id8());
  pw->set_parent_span_id(thread_id);
  pw->add_links()->set_trace_id(trace);
  pw->mutable_links(0)->set_span_id(rp_id);
  auto* sched = pw->add_events();
  sched->set_name("schedule");
  AddAttr(sched->mutable_attributes(), sc::kSglBid, "0a1b2c3d");
  pw->add_events()->set_name("retract");
  ProcessResult r = tracker.Process(&second, 1);
  ASSERT_EQ(second.size(), 1);
  ASSERT_EQ(second[0].links_size(), 1);
  EXPECT_EQ(second[0].links(0).span_id(), tokenize_id);
  EXPECT_EQ(r.reattached, 1u);
  ASSERT_EQ(second[0].events_size(), 1);
  EXPECT_EQ(second[0].events(0).name(), "retract");
  EXPECT_EQ(r.events_dropped, 1u);
  // A retract is a preemption of the request, counted on the span (a latency cause's evidence).
  const AnyValue* preemptions = FindAttr(second[0].attributes(), sc::kInfertelPreemptions);
  ASSERT_NE(preemptions, nullptr);
  EXPECT_EQ(preemptions->int_value(), 1);
  EXPECT_EQ(FindAttr(first[0].attributes(), sc::kInfertelPreemptions), nullptr);
}

Span PdRequest(std::string_view role, std::string room) {
  Span s;
  s.set_name(std::string(role) + " Req 1a2b3c4d");
  s.set_trace_id(std::string(AsBytes(NewTraceId())));
  s.set_span_id(Id8());
  AddAttr(s.mutable_attributes(), sc::kSglRid, "1a2b3c4d5e");
  AddAttr(s.mutable_attributes(), sc::kSglModule, "sglang::request");
  AddAttr(s.mutable_attributes(), sc::kSglBootstrapRoom, room);
  return s;
}

TEST(SglangSpans, PdRequestSpansAreLinkedThroughBootstrapRoom) {
  Tracker tracker;
  Spans a;
  *a.Add() = PdRequest("prefill", "0x5eed");
  const Span prefill = a[0];
  EXPECT_EQ(tracker.Process(&a, 3).pd_links, 0u);
  EXPECT_EQ(a[0].links_size(), 0);

  Spans b;
  *b.Add() = PdRequest("decode", "0x5eed");
  *b.Add() = PdRequest("decode", "0x0ther");  // another room: no partner
  EXPECT_EQ(tracker.Process(&b, 3).pd_links, 1u);
  ASSERT_EQ(b[0].links_size(), 1);
  EXPECT_EQ(b[0].links(0).trace_id(), prefill.trace_id());
  EXPECT_EQ(b[0].links(0).span_id(), prefill.span_id());
  EXPECT_EQ(FindAttr(b[0].links(0).attributes(), sc::kSglBootstrapRoom)->string_value(), "0x5eed");
  EXPECT_EQ(FindAttr(b[0].links(0).attributes(), sc::kInfertelPdPeerRole)->string_value(),
            "prefill");
  EXPECT_EQ(b[1].links_size(), 0);
  EXPECT_EQ(tracker.rooms(), 2u);

  // Outside the window the pair is not made.
  TrackerOptions o;
  o.pd_window = std::chrono::seconds(5);
  Tracker windowed(o);
  auto now = Tracker::Clock::now();
  Spans c;
  *c.Add() = PdRequest("prefill", "0x77");
  windowed.Process(&c, 3, now);
  Spans d;
  *d.Add() = PdRequest("decode", "0x77");
  EXPECT_EQ(windowed.Process(&d, 3, now + std::chrono::seconds(6)).pd_links, 0u);
}

TEST(SglangSpans, TablesAreBounded) {
  TrackerOptions o;
  o.max_requests = 100;
  o.max_rooms = 10;
  Tracker tracker(o);
  std::size_t evicted = 0;
  for (int i = 0; i < 1000; ++i) evicted += tracker.OnRequestStarted(NewTraceId(), 2);
  EXPECT_LE(tracker.requests(), 100u);
  // Every request forgotten to make room is told (the assembler counts them), none twice.
  EXPECT_EQ(evicted, 900u);
  EXPECT_EQ(tracker.requests() + evicted, 1000u);
  for (int i = 0; i < 100; ++i) {
    Spans s;
    *s.Add() = PdRequest("prefill", "0x" + std::to_string(i));
    tracker.Process(&s, 3);
  }
  EXPECT_LE(tracker.rooms(), 10u);
}

// Requests that ended long enough ago leave by their age, which is no eviction.
TEST(SglangSpans, RequestsThatExpiredAreNotCountedAsEvicted) {
  TrackerOptions o;
  o.max_requests = 10;
  o.open_request_ttl = std::chrono::seconds(5);
  Tracker tracker(o);
  const auto t0 = Tracker::Clock::now();
  std::size_t evicted = 0;
  for (int i = 0; i < 10; ++i) evicted += tracker.OnRequestStarted(NewTraceId(), 2, {}, t0);
  EXPECT_EQ(evicted, 0u);
  // Past their time: the next ten replace them without evicting anything.
  for (int i = 0; i < 10; ++i)
    evicted += tracker.OnRequestStarted(NewTraceId(), 2, {}, t0 + std::chrono::seconds(6));
  EXPECT_EQ(evicted, 0u);
  EXPECT_EQ(tracker.requests(), 10u);
  // One more while all ten are live: the oldest goes, and is counted.
  EXPECT_EQ(tracker.OnRequestStarted(NewTraceId(), 2, {}, t0 + std::chrono::seconds(7)), 1u);
}

TEST(SglangSpans, MergedResourceIsTheAgentsWithEngineOnlyAttributes) {
  Resource agent;
  AddAttr(agent.mutable_attributes(), sc::kServiceName, "my-llm-app");
  AddAttr(agent.mutable_attributes(), "deployment.environment", "prod");
  AddAttr(agent.mutable_attributes(), "telemetry.sdk.name", "infertel");
  Resource engine;
  AddAttr(engine.mutable_attributes(), sc::kServiceName, "sglang");
  AddAttr(engine.mutable_attributes(), "telemetry.sdk.language", "python");
  AddAttr(engine.mutable_attributes(), "telemetry.sdk.name", "opentelemetry");
  AddAttr(engine.mutable_attributes(), "deployment.environment", "staging");
  AddAttr(engine.mutable_attributes(), "host.name", "gpu-node-7");
  Resource m = MergeResource(agent, engine);
  EXPECT_EQ(FindAttr(m.attributes(), sc::kServiceName)->string_value(), "my-llm-app");
  EXPECT_EQ(FindAttr(m.attributes(), "deployment.environment")->string_value(), "prod");
  EXPECT_EQ(FindAttr(m.attributes(), "telemetry.sdk.name")->string_value(), "infertel");
  EXPECT_EQ(FindAttr(m.attributes(), "telemetry.sdk.language"), nullptr);
  EXPECT_EQ(FindAttr(m.attributes(), "host.name")->string_value(), "gpu-node-7");
  EXPECT_EQ(FindAttr(m.attributes(), sc::kInfertelEngineServiceName)->string_value(), "sglang");
  EXPECT_EQ(m.attributes_size(), 5);
}

// ---- Through the assembler: the receiver's path.

class CollectingSink : public pipeline::TraceSink {
 public:
  void Submit(TracesRequest&& r) noexcept override {
    std::lock_guard lock(mu_);
    for (auto& rs : r.resource_spans())
      for (auto& ss : rs.scope_spans())
        for (auto& s : ss.spans()) items_.push_back({rs.resource(), ss.scope().name(), s});
  }
  struct Item {
    Resource resource;
    std::string scope;
    Span span;
  };
  std::vector<Item> Items() {
    std::lock_guard lock(mu_);
    return items_;
  }

 private:
  std::mutex mu_;
  std::vector<Item> items_;
};

TracesRequest FixtureRequest(FixtureTree* t) {
  TracesRequest req;
  auto* rs = req.add_resource_spans();
  AddAttr(rs->mutable_resource()->mutable_attributes(), sc::kServiceName, "sglang");
  AddAttr(rs->mutable_resource()->mutable_attributes(), "telemetry.sdk.language", "python");
  auto* ss = rs->add_scope_spans();
  ss->mutable_scope()->set_name("sglang server");
  *ss->mutable_spans() = t->spans;
  // An unrelated application's span in the same request passes through untouched.
  auto* other = req.add_resource_spans();
  AddAttr(other->mutable_resource()->mutable_attributes(), sc::kServiceName, "shop");
  auto* os = other->add_scope_spans();
  os->mutable_scope()->set_name("shop-lib");
  Span* o = os->add_spans();
  o->set_name("tokenize");  // a stage name alone does not make a span SGLang's
  o->set_trace_id(std::string(AsBytes(NewTraceId())));
  o->set_span_id(Id8());
  return req;
}

// Defaults, with console values for `console`.
std::shared_ptr<config::ConfigStore> Store(std::map<config::Key, std::string> console = {}) {
  auto r = config::Resolve([](std::string_view) { return std::optional<std::string>(); }, console);
  EXPECT_TRUE(r.errors.empty());
  return std::make_shared<config::ConfigStore>(std::move(r.settings));
}

// The SGLang table of request levels holds 200,000 requests (TrackerOptions): past that,
// requests forgotten early are counted by the assembler, where an operator sees them.
TEST(SglangAssembler, RequestsForgottenByTheBoundAreCounted) {
  CollectingSink sink;
  Assembler a(AssemblerOptions{}, &sink, Store());
  openai::Exchange ex;
  ex.engine = SglangEngineId();
  ex.tracing_level = 2;
  const std::size_t bound = TrackerOptions{}.max_requests;
  for (std::size_t i = 0; i < bound + 10; ++i) {
    const TraceId t = NewTraceId();
    std::copy(t.begin(), t.end(), ex.trace_id.begin());
    a.OnExchangeStarted(ex);
  }
  EXPECT_EQ(a.stats().native_requests_evicted.load(), 10u);
}

TEST(SglangAssembler, NativeSpansTakeTheAgentsResourceAndTheExchangesLevel) {
  CollectingSink sink;
  AssemblerOptions o;
  AddAttr(o.agent_resource.mutable_attributes(), sc::kServiceName, "my-llm-app");
  Assembler a(o, &sink, Store());
  FixtureTree t = LoadFixture();

  openai::Exchange ex;
  ex.engine = SglangEngineId();
  std::copy(t.trace.begin(), t.trace.end(), ex.trace_id.begin());
  ex.tracing_level = 2;  // the level when the request arrived; the current one is 3
  a.OnExchangeStarted(ex);
  a.Submit(FixtureRequest(&t));
  a.OnExchangeFinished(ex);

  auto items = sink.Items();
  std::set<std::string> sglang_names;
  for (const auto& it : items) {
    if (it.scope == "shop-lib") {
      EXPECT_EQ(FindAttr(it.resource.attributes(), sc::kServiceName)->string_value(), "shop");
      continue;
    }
    sglang_names.insert(it.span.name());
    EXPECT_EQ(it.scope, "sglang server");
    EXPECT_EQ(FindAttr(it.resource.attributes(), sc::kServiceName)->string_value(), "my-llm-app");
    EXPECT_EQ(FindAttr(it.resource.attributes(), sc::kInfertelEngineServiceName)->string_value(),
              "sglang");
    EXPECT_EQ(FindAttr(it.resource.attributes(), "telemetry.sdk.language"), nullptr);
  }
  EXPECT_EQ(items.size(), 10u);  // 9 of the fixture at level 2, and the shop's span
  EXPECT_FALSE(sglang_names.count("decode_loop"));
  EXPECT_TRUE(sglang_names.count("request_process"));
  EXPECT_EQ(a.stats().sglang_spans.load(), 10u);
  EXPECT_EQ(a.stats().sglang_level_dropped.load(), 1u);
  EXPECT_EQ(a.stats().passthrough.load(), 1u);
}

TEST(SglangAssembler, CurrentLevelForUnknownTracesAndPluginOff) {
  {
    CollectingSink sink;
    Assembler a({}, &sink, Store({{engines::sglang::keys().tracing_level, "1"}}));
    FixtureTree t = LoadFixture();
    a.Submit(FixtureRequest(&t));
    EXPECT_EQ(sink.Items().size(), 7u + 1u);  // level 1: 7 of the fixture, and the shop's span
    // Without an agent resource the engine's is kept.
    for (const auto& it : sink.Items()) {
      if (it.scope != "sglang server") continue;
      EXPECT_EQ(FindAttr(it.resource.attributes(), sc::kServiceName)->string_value(), "sglang");
    }
  }
  {
    CollectingSink sink;
    Assembler a({}, &sink,
                Store({{engines::sglang::keys().tracing_level, "1"},
                       {engines::sglang::keys().enabled, "false"}}));
    FixtureTree t = LoadFixture();
    a.Submit(FixtureRequest(&t));
    // Spec C1: off is no traces for the engine. Its native spans are dropped and counted; the
    // shop's own span passes.
    ASSERT_EQ(sink.Items().size(), 1u);
    EXPECT_NE(sink.Items()[0].scope, "sglang server");
    EXPECT_EQ(a.stats().plugin_off_dropped.load(), 10u);
    EXPECT_EQ(a.stats().sglang_spans.load(), 0u);
  }
}

}  // namespace
}  // namespace infertel::engines::sglang
