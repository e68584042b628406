#include "analytics/explain.h"

#include <fmt/format.h>

#include <array>

#include "core/semconv.h"
#include "openai/exchange.h"

namespace infertel::analytics {
namespace sc = semconv;

namespace {

using Attrs = std::map<std::string, AttrValue, std::less<>>;

const AttrValue* Find(const Attrs& a, std::string_view key) {
  auto it = a.find(key);
  return it == a.end() ? nullptr : &it->second;
}

std::optional<std::int64_t> Int(const Attrs& a, std::string_view key) {
  const AttrValue* v = Find(a, key);
  if (v == nullptr) return std::nullopt;
  if (auto* i = std::get_if<std::int64_t>(v)) return *i;
  if (auto* d = std::get_if<double>(v)) return static_cast<std::int64_t>(*d);
  return std::nullopt;
}

std::optional<double> Double(const Attrs& a, std::string_view key) {
  const AttrValue* v = Find(a, key);
  if (v == nullptr) return std::nullopt;
  if (auto* d = std::get_if<double>(v)) return *d;
  if (auto* i = std::get_if<std::int64_t>(v)) return static_cast<double>(*i);
  return std::nullopt;
}

// A gen_ai.latency.* value: integer nanoseconds once normalized, else the engine's seconds.
std::optional<double> Latency(const Attrs& a, std::string_view key) {
  const AttrValue* v = Find(a, key);
  if (v == nullptr) return std::nullopt;
  if (auto* i = std::get_if<std::int64_t>(v)) return static_cast<double>(*i) / 1e9;
  if (auto* d = std::get_if<double>(v)) return *d;
  return std::nullopt;
}

double Seconds(const TraceSpan& s) {
  return s.end_ns > s.start_ns ? static_cast<double>(s.end_ns - s.start_ns) / 1e9 : 0;
}

const TraceSpan* EntryOf(const std::vector<TraceSpan>& spans) {
  for (const TraceSpan& s : spans)
    if (s.scope == sc::kAgentScopeName && Find(s.attributes, sc::kGenAiOperationName)) return &s;
  return nullptr;
}

bool HasLatency(const TraceSpan& s) {
  constexpr std::array<std::string_view, 5> kKeys = {
      sc::kGenAiLatencyTimeInQueue, sc::kGenAiLatencyTimeInModelPrefill,
      sc::kGenAiLatencyTimeInModelDecode, sc::kGenAiLatencyE2e, sc::kGenAiLatencyTimeToFirstToken};
  for (std::string_view k : kKeys)
    if (Find(s.attributes, k)) return true;
  return false;
}

// The engine's request span: a child of the entry span if one carries latencies, else any.
const TraceSpan* EngineSpanOf(const std::vector<TraceSpan>& spans, const TraceSpan& entry) {
  const TraceSpan* any = nullptr;
  for (const TraceSpan& s : spans) {
    if (&s == &entry || !HasLatency(s)) continue;
    if (s.parent_span_id == entry.span_id) return &s;
    if (any == nullptr) any = &s;
  }
  return any;
}

std::uint8_t MissedOf(const Attrs& a) {
  const AttrValue* v = Find(a, sc::kInfertelSloMissed);
  const auto* names = v ? std::get_if<std::vector<std::string>>(v) : nullptr;
  std::uint8_t bits = 0;
  if (names == nullptr) return bits;
  for (const std::string& n : *names) {
    if (n == sc::kSloObjectiveTtft) bits |= openai::kSloMissTtft;
    if (n == sc::kSloObjectiveTpot) bits |= openai::kSloMissTpot;
    if (n == sc::kSloObjectiveE2e) bits |= openai::kSloMissE2e;
    if (n == sc::kSloObjectiveError) bits |= openai::kSloMissError;
  }
  return bits;
}

// An error of the entry span the engine is not to blame for: the client left, the agent
// stopped.
bool GatewaySideError(const Attrs& a) {
  const AttrValue* v = Find(a, sc::kErrorType);
  const auto* type = v ? std::get_if<std::string>(v) : nullptr;
  return type != nullptr && (*type == "client_disconnected" || *type == sc::kErrorShutdown);
}

void ReadEntry(const TraceSpan& entry, Explanation* e) {
  Timeline& t = e->timeline;
  const Attrs& a = entry.attributes;
  e->entry_name = entry.name;
  e->judged = Find(a, sc::kInfertelSloMet) != nullptr;
  t.e2e_s = Seconds(entry);
  t.gateway_s = Double(a, sc::kInfertelLatencyGateway);
  t.client_s = Double(a, sc::kInfertelLatencyClient).value_or(0);
  t.missed = MissedOf(a);
  t.engine_error = (t.missed & openai::kSloMissError) || (entry.error && !GatewaySideError(a));
  t.prompt_tokens = Int(a, sc::kGenAiUsageInputTokens);
  t.output_tokens = Int(a, sc::kGenAiUsageOutputTokens);
  if (auto ratio = Double(a, sc::kInfertelCacheHitRatio); ratio && t.prompt_tokens)
    t.cached_tokens = static_cast<std::int64_t>(*ratio * static_cast<double>(*t.prompt_tokens));
  if (const AttrValue* c = Find(a, sc::kInfertelLatencyCause))
    if (auto* s = std::get_if<std::string>(c)) e->recorded_cause = *s;
}

// The phases derived from the engine span, for the parts its attributes do not give: its
// children, and a KV transfer nested in its `wait`.
void ReadPhases(const std::vector<TraceSpan>& spans, const TraceSpan& engine, Timeline* t) {
  std::optional<double> wait, prefill, decode, kv;
  std::string wait_id;
  auto add = [](std::optional<double>* to, double s) { *to = to->value_or(0) + s; };
  for (const TraceSpan& s : spans) {
    if (s.parent_span_id != engine.span_id) continue;
    if (s.name == sc::kSpanWait) {
      add(&wait, Seconds(s));
      wait_id = s.span_id;
    }
    if (s.name == sc::kSpanPrefill) add(&prefill, Seconds(s));
    if (s.name == sc::kSpanDecode) add(&decode, Seconds(s));
    if (s.name == sc::kSpanKvTransfer) add(&kv, Seconds(s));
  }
  for (const TraceSpan& s : spans)
    if (!wait_id.empty() && s.parent_span_id == wait_id && s.name == sc::kSpanKvTransfer)
      add(&kv, Seconds(s));
  if (!t->queue_s) t->queue_s = wait;
  if (!t->prefill_s) t->prefill_s = prefill;
  if (!t->decode_s) t->decode_s = decode;
  if (!t->kv_transfer_s) t->kv_transfer_s = kv;
}

void ReadEngine(const std::vector<TraceSpan>& spans, const TraceSpan& entry,
                const TraceSpan& engine, Explanation* e) {
  Timeline& t = e->timeline;
  const Attrs& a = engine.attributes;
  e->engine_span = true;
  t.queue_s = Latency(a, sc::kGenAiLatencyTimeInQueue);
  t.prefill_s = Latency(a, sc::kGenAiLatencyTimeInModelPrefill);
  t.decode_s = Latency(a, sc::kGenAiLatencyTimeInModelDecode);
  t.kv_transfer_s = Latency(a, sc::kGenAiLatencyTimeInKvTransfer);
  ReadPhases(spans, engine, &t);
  if (!t.gateway_s && engine.start_ns >= entry.start_ns)
    t.gateway_s = static_cast<double>(engine.start_ns - entry.start_ns) / 1e9;
  if (!t.prompt_tokens) t.prompt_tokens = Int(a, sc::kGenAiUsagePromptTokens);
  if (!t.output_tokens) t.output_tokens = Int(a, sc::kGenAiUsageCompletionTokens);
  if (auto c = Int(a, sc::kGenAiUsageCacheReadInputTokens)) t.cached_tokens = c;
  if (auto c = Int(a, sc::kGenAiUsageCachedTokens)) t.cached_tokens = c;
  t.requests_ahead = Int(a, sc::kInfertelQueueRequestsAhead);
  t.interference_prefill_tokens = Int(a, sc::kInfertelInterferencePrefillTokens);
  std::int64_t preempted = 0;
  for (const std::string& ev : engine.event_names) preempted += ev == sc::kEventPreempted;
  if (preempted > 0) t.preemptions = preempted;
  if (const AttrValue* c = Find(a, sc::kInfertelLatencyCause))
    if (auto* s = std::get_if<std::string>(c)) e->recorded_cause = *s;  // the engine span's wins
}

}  // namespace

Explanation ExplainTrace(const std::vector<TraceSpan>& spans) {
  Explanation e;
  const TraceSpan* entry = EntryOf(spans);
  if (entry == nullptr) return e;
  e.found = true;
  ReadEntry(*entry, &e);
  if (const TraceSpan* engine = EngineSpanOf(spans, *entry)) ReadEngine(spans, *entry, *engine, &e);
  // Preemptions the engine reported per request, on whichever of its spans they were seen.
  for (const TraceSpan& s : spans)
    if (auto n = Int(s.attributes, sc::kInfertelPreemptions); n && *n > 0)
      e.timeline.preemptions = e.timeline.preemptions.value_or(0) + *n;
  e.attribution = Attribute(e.timeline);
  return e;
}

namespace {

std::string Part(std::string_view name, double s, bool known, std::string_view note = {}) {
  std::string line = known ? fmt::format("  {:<12} {:>10.3f} s", name, s)
                           : fmt::format("  {:<12} {:>10}", name, "-");
  if (!note.empty()) fmt::format_to(std::back_inserter(line), "   {}", note);
  line += '\n';
  return line;
}

std::string Verdict(const Explanation& e) {
  if (!e.judged) return "no objective applied";
  const std::uint8_t m = e.timeline.missed;
  if (m == 0) return "met its objectives";
  std::string out = "missed";
  if (m & openai::kSloMissTtft) out += " ttft";
  if (m & openai::kSloMissTpot) out += " tpot";
  if (m & openai::kSloMissE2e) out += " e2e";
  if (m & openai::kSloMissError) out += " error";
  return out;
}

}  // namespace

std::string RenderExplanation(const Explanation& e) {
  if (!e.found) return "no entry span in this trace: nothing to explain\n";
  const Timeline& t = e.timeline;
  const Attribution& a = e.attribution;
  std::string out = fmt::format("{}: {:.3f} s, {}\n", e.entry_name, t.e2e_s, Verdict(e));
  std::string queue_note, prefill_note, decode_note;
  if (t.requests_ahead) queue_note = fmt::format("{} requests ahead", *t.requests_ahead);
  if (t.prompt_tokens) prefill_note = fmt::format("prompt {} tokens", *t.prompt_tokens);
  if (a.cache_hit_ratio)
    prefill_note += fmt::format(", cache hit ratio {:.2f}", *a.cache_hit_ratio);
  if (t.output_tokens) decode_note = fmt::format("{} output tokens", *t.output_tokens);
  if (t.interference_prefill_tokens)
    decode_note += fmt::format(", others' prefill {} tokens", *t.interference_prefill_tokens);
  if (t.preemptions) decode_note += fmt::format(", {} preemptions", *t.preemptions);
  out += Part("gateway", a.gateway_s, t.gateway_s.has_value());
  out += Part("queue", a.queue_s, t.queue_s.has_value(), queue_note);
  out += Part("kv_transfer", a.kv_transfer_s, t.kv_transfer_s.has_value());
  out += Part("prefill", a.prefill_s, t.prefill_s.has_value(), prefill_note);
  out += Part("decode", a.decode_s, t.decode_s.has_value(), decode_note);
  out += Part("client", a.client_s, t.client_s.has_value());
  if (!e.engine_span) out += Part("engine", a.engine_unsplit_s, true, "no engine span: unsplit");
  if (a.cause.empty()) {
    out += "cause: undecided (the engine's phases are unknown)\n";
  } else {
    out += fmt::format("cause: {} (largest part: {})\n", a.cause, a.component);
  }
  if (!e.recorded_cause.empty() && e.recorded_cause != a.cause)
    out += fmt::format("recorded at ingest: {}\n", e.recorded_cause);
  return out;
}

}  // namespace infertel::analytics
