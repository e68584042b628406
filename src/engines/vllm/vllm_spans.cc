#include "engines/vllm/vllm_spans.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include "core/semconv.h"
#include "core/static_key.h"

namespace infertel::engines::vllm {
namespace sc = semconv;
namespace {

constexpr std::string_view kV1Scope = "vllm.tracing.otel";
constexpr std::string_view kEngineScope = "vllm.llm_engine";  // V0, and V1 until 2026-02
constexpr std::array<std::string_view, 4> kIdPrefixes = {"chatcmpl-", "cmpl-", "embd-", "score-"};

// The attributes Normalize reads or writes, found in one pass over the span's attributes
// instead of a scan per lookup (a V1 span has ~13 attributes and is looked up ~30 times).
enum Slot : int {
  // The V1 latencies, converted from vLLM's seconds to integer nanoseconds (M1, M2.3).
  kSlotTtft,
  kSlotE2e,
  kSlotQueue,
  kSlotPrefill,
  kSlotDecode,
  kSlotInference,
  kSlotTokenize,
  kSlotDetokenize,
  kSlotKvTransfer,
  kSlotRequestId,
  kSlotModelName,
  kSlotEngineIndex,
  kSlotPdRole,
  kSlotCacheRead,
  kSlotNumSequences,
  kSlotResponseModel,
  kSlotScheduler,
  kSlotModelForward,
  kSlotCount
};

constexpr std::array<std::string_view, kSlotCount> kSlotKeys = {
    sc::kGenAiLatencyTimeToFirstToken,
    sc::kGenAiLatencyE2e,
    sc::kGenAiLatencyTimeInQueue,
    sc::kGenAiLatencyTimeInModelPrefill,
    sc::kGenAiLatencyTimeInModelDecode,
    sc::kGenAiLatencyTimeInModelInference,
    sc::kGenAiLatencyTimeInTokenize,
    sc::kGenAiLatencyTimeInDetokenize,
    sc::kGenAiLatencyTimeInKvTransfer,
    sc::kGenAiRequestId,
    sc::kGenAiRequestModelName,
    sc::kGenAiEngineIndex,
    sc::kGenAiPdRole,
    sc::kGenAiUsageCacheReadInputTokens,
    sc::kGenAiUsageNumSequences,
    sc::kGenAiResponseModel,
    sc::kGenAiLatencyTimeInScheduler,
    sc::kGenAiLatencyTimeInModelForward,
};

// The slot keys as StaticKeys (core/static_key.h), for the attributes normalization adds.
template <std::size_t... I>
const StaticKey& SlotKeyOf(std::size_t slot, std::index_sequence<I...>) {
  // Never destroyed, as Key<> (core/static_key.h).
  static const auto& keys = *new std::array<StaticKey, kSlotCount>{StaticKey(kSlotKeys[I])...};
  return keys[slot];
}
const StaticKey& SlotKey(Slot slot) {
  return SlotKeyOf(slot, std::make_index_sequence<kSlotCount>());
}

constexpr std::size_t kMaxKeyLen = 64, kKeysPerLen = 4;
// The table below holds every slot key only if these hold.
constexpr bool SlotKeysFitTheTable() {
  for (std::string_view k : kSlotKeys) {
    if (k.size() >= kMaxKeyLen) return false;
    std::size_t same = 0;
    for (std::string_view o : kSlotKeys) same += o.size() == k.size() ? 1 : 0;
    if (same > kKeysPerLen) return false;
  }
  return true;
}
static_assert(SlotKeysFitTheTable());

// Slot of a key, or -1: candidates bucketed by key length, so most keys cost one compare.
int SlotOf(const std::string& key) {
  constexpr std::size_t kMaxLen = kMaxKeyLen, kPerLen = kKeysPerLen;
  struct Table {
    std::array<std::array<std::int8_t, kPerLen>, kMaxLen> by_len;
    Table() {
      for (auto& b : by_len) b.fill(-1);
      for (int s = 0; s < kSlotCount; ++s) {
        auto& b = by_len[kSlotKeys[s].size()];  // fits: SlotKeysFitTheTable
        for (auto& c : b)
          if (c < 0) {
            c = static_cast<std::int8_t>(s);
            break;
          }
      }
    }
  };
  static const Table table;
  if (key.size() >= kMaxLen) return -1;
  for (std::int8_t c : table.by_len[key.size()]) {
    if (c < 0) return -1;
    if (kSlotKeys[c] == key) return c;
  }
  return -1;
}

struct AttrIndex {
  std::array<KeyValue*, kSlotCount> first{};  // first attribute with the slot's key
  std::array<std::uint8_t, kSlotCount> count{};
  explicit AttrIndex(Span* span) {
    for (auto& kv : *span->mutable_attributes()) {
      const int s = SlotOf(kv.key());
      if (s < 0) continue;
      if (first[s] == nullptr) first[s] = &kv;
      if (count[s] < 255) ++count[s];
    }
  }
  KeyValue* at(Slot s) const { return first[s]; }
  const AnyValue* value(Slot s) const { return first[s] ? &first[s]->value() : nullptr; }
};

// Sets (or replaces) the first attribute of a slot; an added one is indexed.
template <typename T>
void Set(Span* span, AttrIndex* idx, Slot slot, T value) {
  if (KeyValue* kv = idx->at(slot)) {
    kv->mutable_value()->Clear();
    if constexpr (std::is_same_v<T, bool>) {
      kv->mutable_value()->set_bool_value(value);
    } else if constexpr (std::is_integral_v<T>) {
      kv->mutable_value()->set_int_value(static_cast<std::int64_t>(value));
    } else if constexpr (std::is_floating_point_v<T>) {
      kv->mutable_value()->set_double_value(value);
    } else {
      kv->mutable_value()->set_string_value(std::string(value));
    }
    return;
  }
  auto* attrs = span->mutable_attributes();
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    AddAttr(attrs, SlotKey(slot), static_cast<std::int64_t>(value));
  } else {
    AddAttr(attrs, SlotKey(slot), value);
  }
  idx->first[slot] = attrs->Mutable(attrs->size() - 1);  // element pointers are stable
  idx->count[slot] = 1;
}

// What a latency attribute's value came to.
enum class Latency { kTaken, kNotNumber, kNotFinite, kOutOfRange };

// A V1 latency in seconds (double, or an integer from an SDK that encodes whole numbers so) as
// integer nanoseconds in *ns; or why not. NaN, ±Inf and values outside [0, kMaxLatencySeconds]
// are refused: converted, they were undefined (llround of NaN gave INT64_MIN ns).
Latency SecondsToNanos(const AnyValue& v, std::int64_t* ns) {
  double s;
  if (v.has_double_value()) {
    s = v.double_value();
  } else if (v.has_int_value()) {
    s = static_cast<double>(v.int_value());
  } else {
    return Latency::kNotNumber;
  }
  if (!std::isfinite(s)) return Latency::kNotFinite;
  if (s < 0 || s > kMaxLatencySeconds) return Latency::kOutOfRange;
  *ns = static_cast<std::int64_t>(std::llround(s * 1e9));
  return Latency::kTaken;
}

// The same for a span normalized already (by an infertel upstream): integer nanoseconds.
Latency CheckNanos(const AnyValue& v, std::int64_t* ns) {
  constexpr auto kMaxNanos = static_cast<std::int64_t>(kMaxLatencySeconds) * 1'000'000'000;
  if (!v.has_int_value()) return Latency::kNotNumber;
  if (v.int_value() < 0 || v.int_value() > kMaxNanos) return Latency::kOutOfRange;
  *ns = v.int_value();
  return Latency::kTaken;
}

// Converts the first attribute of each latency slot to nanoseconds; an invalid one loses its
// value (so no phase is derived from it) and is counted; RemoveEmptied then removes it.
void ConvertLatencies(AttrIndex* idx, bool already_normalized, NormalizeReport* report) {
  for (int d = kSlotTtft; d <= kSlotKvTransfer; ++d) {
    KeyValue* kv = idx->at(static_cast<Slot>(d));
    if (kv == nullptr) continue;
    std::int64_t ns = 0;
    switch (already_normalized ? CheckNanos(kv->value(), &ns) : SecondsToNanos(kv->value(), &ns)) {
      case Latency::kTaken:
        kv->mutable_value()->set_int_value(ns);
        break;
      case Latency::kNotNumber:  // not a latency the agent reads: left as sent
        break;
      case Latency::kNotFinite:
        ++report->latency_not_finite;
        kv->mutable_value()->Clear();
        break;
      case Latency::kOutOfRange:
        ++report->latency_out_of_range;
        kv->mutable_value()->Clear();
        break;
    }
  }
}

// Removes the latency attributes ConvertLatencies emptied, keeping the order of the rest.
// Elements are swapped, not moved, so the KeyValues phases share stay where they are.
void RemoveEmptied(Span* span) {
  auto* attrs = span->mutable_attributes();
  int keep = 0;
  for (int i = 0; i < attrs->size(); ++i) {
    const KeyValue& kv = attrs->Get(i);
    const int slot = SlotOf(kv.key());
    const bool emptied = slot >= kSlotTtft && slot <= kSlotKvTransfer &&
                         kv.value().value_case() == AnyValue::VALUE_NOT_SET;
    if (emptied) continue;
    if (keep != i) attrs->SwapElements(keep, i);
    ++keep;
  }
  if (keep < attrs->size()) attrs->DeleteSubrange(keep, attrs->size() - keep);
}

// The phase carries the parent's request id, model, engine index and PD role, every
// attribute of those keys in order of the keys. It shares the parent's KeyValues instead of
// copying them: the phase is on an arena, so its repeated field never frees its elements;
// the parent lives at least as long (on the same arena, or on the heap request that the
// arena's Memory owns, pipeline::Hold); and its attributes are final once phases are derived.
// A copy was a KeyValue, an AnyValue and two strings, most longer than the 15 bytes a
// std::string holds inline: 2 to 4 heap allocations per attribute, three phases per span.
// Shared KeyValues are only read from then on, as borrowed headers are (pipeline/held.h).
void PhaseAttributes(const Span& from, const AttrIndex& idx, Span* phase) {
  constexpr std::array<Slot, 4> kCopied = {kSlotRequestId, kSlotModelName, kSlotEngineIndex,
                                           kSlotPdRole};
  auto* attrs = phase->mutable_attributes();
  auto add = [attrs](const KeyValue& kv) {
    attrs->UnsafeArenaAddAllocated(const_cast<KeyValue*>(&kv));
  };
  bool single = true;
  for (Slot s : kCopied) single = single && idx.count[s] <= 1;
  if (single) {
    for (Slot s : kCopied)
      if (const KeyValue* kv = idx.at(s)) add(*kv);
    return;
  }
  for (Slot s : kCopied) {  // a key given more than once: all of them, as the span has them
    for (const auto& kv : from.attributes())
      if (kv.key() == kSlotKeys[s]) add(kv);
  }
}

// A phase points at its parent's trace id and span id (its parent id) rather than copying
// them (core/static_key.h ShareSpanStrings): the parent is on the same arena, or outlives it
// as above, and its ids are final by now (Normalize repairs them before deriving phases).
Span* MakePhase(google::protobuf::Arena* arena, const Span& parent, const AttrIndex& idx,
                const StaticKey& name, std::uint64_t start, std::uint64_t end) {
  Span* p = google::protobuf::Arena::CreateMessage<Span>(arena);
  ShareSpanStrings(p, parent.trace_id(), parent.span_id(), name);
  SpanId id = NewSpanId();
  p->set_span_id(AsBytes(id).data(), AsBytes(id).size());
  p->set_kind(otlp_trace::Span::SPAN_KIND_INTERNAL);
  p->set_start_time_unix_nano(start);
  p->set_end_time_unix_nano(std::max(start, end));
  PhaseAttributes(parent, idx, p);
  return p;
}

// Reads a V1 duration attribute already in nanoseconds.
std::optional<std::uint64_t> Nanos(const AttrIndex& idx, Slot slot) {
  const AnyValue* v = idx.value(slot);
  if (v == nullptr || !v->has_int_value() || v->int_value() < 0) return std::nullopt;
  return static_cast<std::uint64_t>(v->int_value());
}

// The V1 latencies in seconds, once converted to nanoseconds.
EngineTimings Timings(const AttrIndex& idx) {
  auto seconds = [&idx](Slot slot) -> std::optional<double> {
    auto ns = Nanos(idx, slot);
    return ns ? std::optional<double>(static_cast<double>(*ns) / 1e9) : std::nullopt;
  };
  return {seconds(kSlotQueue), seconds(kSlotPrefill), seconds(kSlotDecode), seconds(kSlotTtft),
          seconds(kSlotE2e)};
}

// Under PD disaggregation, where the transfer is what the split costs: a decode node (consumer)
// pulls the KV before it is scheduled (WAITING_FOR_REMOTE_KVS), so the transfer ends where its
// first token is; a prefill node (producer) sends it once prefill is done. Each is a child of
// the request span (the node has no `wait` to nest it in).
void DerivePdTransfer(const Span& span, const AttrIndex& idx, bool producer, std::uint64_t kv,
                      std::uint64_t first, google::protobuf::Arena* arena,
                      std::vector<Span*>* phases) {
  const std::uint64_t s = span.start_time_unix_nano(), e = span.end_time_unix_nano();
  Span* k = producer ? MakePhase(arena, span, idx, Key<sc::kSpanKvTransfer>(), first,
                                 std::min(e, first + kv))
                     : MakePhase(arena, span, idx, Key<sc::kSpanKvTransfer>(),
                                 first - std::min(first - s, kv), first);
  AddAttr(k->mutable_attributes(), Key<sc::kGenAiKvTransferDirection>(),
          producer ? "send" : "recv");
  phases->push_back(k);
}

void DerivePhases(const Span& span, const AttrIndex& idx, std::string_view pd_role,
                  google::protobuf::Arena* arena, std::vector<Span*>* phases) {
  const std::uint64_t s = span.start_time_unix_nano(), e = span.end_time_unix_nano();
  auto ttft = Nanos(idx, kSlotTtft);
  auto queue = Nanos(idx, kSlotQueue);
  auto prefill = Nanos(idx, kSlotPrefill);
  auto decode = Nanos(idx, kSlotDecode);
  auto kv = Nanos(idx, kSlotKvTransfer);
  if (!ttft || e < s) return;
  // Laid out around the first token as the front end saw it (start + TTFT): vLLM measures
  // queue/prefill/decode on the engine's monotonic clock, so only their lengths are known.
  const std::uint64_t first = std::clamp(s + *ttft, s, e);
  const std::uint64_t prefill_start =
      prefill ? std::max(s, first - std::min(first - s, *prefill)) : first;
  const bool producer = pd_role == "producer", consumer = pd_role == "consumer";
  if (!producer && !consumer && queue) {
    const std::uint64_t wait_start =
        std::max(s, prefill_start - std::min(prefill_start - s, *queue));
    phases->push_back(MakePhase(arena, span, idx, Key<sc::kSpanWait>(), wait_start, prefill_start));
    if (kv && *kv > 0) {
      // Remote KV is awaited inside the queue (WAITING_FOR_REMOTE_KVS): nested in `wait`.
      Span* k = MakePhase(arena, span, idx, Key<sc::kSpanKvTransfer>(), wait_start,
                          wait_start + std::min(*kv, prefill_start - wait_start));
      k->set_parent_span_id(phases->back()->span_id());
      AddAttr(k->mutable_attributes(), Key<sc::kGenAiKvTransferDirection>(), "recv");
      phases->push_back(k);
    }
  }
  if (!consumer && prefill)
    phases->push_back(MakePhase(arena, span, idx, Key<sc::kSpanPrefill>(), prefill_start, first));
  if (!producer && decode) {
    phases->push_back(
        MakePhase(arena, span, idx, Key<sc::kSpanDecode>(), first, std::min(e, first + *decode)));
  }
  if ((producer || consumer) && kv && *kv > 0)
    DerivePdTransfer(span, idx, producer, *kv, first, arena, phases);
}

void AddTokenEvent(Span* span, std::string_view name, std::uint64_t time,
                   const openai::Exchange::Delta* d,
                   const std::optional<std::int64_t>& engine_index) {
  auto* ev = span->add_events();
  ev->set_name(std::string(name));
  ev->set_time_unix_nano(time);
  auto* a = ev->mutable_attributes();
  if (engine_index) AddAttr(a, Key<sc::kGenAiEngineIndex>(), *engine_index);
  auto array = [&](const StaticKey& key) {
    return AddKey(a, key)->mutable_value()->mutable_array_value();
  };
  // Which fields are the engine's and which the agent's (semconv.h, kInfertelEventMeasured).
  auto* measured = array(Key<sc::kInfertelEventMeasured>());
  auto* derived = array(Key<sc::kInfertelEventDerived>());
  derived->add_values()->set_string_value(std::string(sc::kEventFieldTime));
  if (d == nullptr) return;
  auto* detail = d->texts_derived ? derived : measured;
  AddAttr(a, Key<sc::kGenAiTokenCount>(), d->token_count);
  detail->add_values()->set_string_value(std::string(sc::kGenAiTokenCount));
  auto* texts = array(Key<sc::kGenAiTokenTexts>());
  for (const auto& t : d->texts) texts->add_values()->set_string_value(t);
  detail->add_values()->set_string_value(std::string(sc::kGenAiTokenTexts));
  if (!d->logprobs.empty()) {
    auto* lp = array(Key<sc::kGenAiTokenLogprobs>());
    for (double v : d->logprobs) lp->add_values()->set_double_value(v);
    measured->add_values()->set_string_value(std::string(sc::kGenAiTokenLogprobs));
  }
  if (!d->ids.empty()) {
    auto* ids = array(Key<sc::kGenAiTokenIds>());
    for (auto v : d->ids) ids->add_values()->set_int_value(v);
    measured->add_values()->set_string_value(std::string(sc::kGenAiTokenIds));
  }
}

// Level 2 (M2.5): WAIT at dispatch, PREFILL at the first token, DECODE per streamed delta.
// vLLM reports no per-request preemptions out of process, so PREEMPTED never appears.
void AddEvents(Span* span, const JoinRecord& r, std::size_t max_events) {
  std::size_t total = 0, kept = 0;
  auto room = [&] {
    ++total;
    if (kept >= max_events) return false;
    ++kept;
    return true;
  };
  if (r.dispatch_wall_ns != 0 && room())
    AddTokenEvent(span, sc::kEventWait, r.dispatch_wall_ns, nullptr, r.engine_index);
  for (std::size_t i = 0; i < r.deltas.size(); ++i) {
    if (!room()) continue;
    AddTokenEvent(span, i == 0 ? sc::kEventPrefill : sc::kEventDecode, r.deltas[i].mono_ns,
                  &r.deltas[i], r.engine_index);
  }
  total += r.deltas_dropped;
  span->set_dropped_events_count(span->dropped_events_count() +
                                 static_cast<std::uint32_t>(total - kept));
}

}  // namespace

bool IsVllmScopeName(std::string_view scope_name) {
  return scope_name == kV1Scope || scope_name == kEngineScope;
}

const AnyValue* RequestSpanId(const Span& span) {
  if (span.name() != sc::kSpanLlmRequest) return nullptr;
  return FindAttr(span.attributes(), sc::kGenAiRequestId);
}

bool IsVllmRequestSpan(const Span& span) { return RequestSpanId(span) != nullptr; }

JoinKeyList JoinKeys(const Span& span) {
  const AnyValue* v = FindAttr(span.attributes(), sc::kGenAiRequestId);
  return v != nullptr ? JoinKeys(*v) : JoinKeyList{};
}

JoinKeyList JoinKeys(const AnyValue& request_id) {
  JoinKeyList keys;
  if (!request_id.has_string_value()) return keys;
  std::string_view id = request_id.string_value();
  for (std::string_view p : kIdPrefixes) {
    if (id.substr(0, p.size()) == p) {
      id.remove_prefix(p.size());
      break;
    }
  }
  keys.keys[keys.size++] = id;
  // Several prompts in one completions request become sub-requests `<id>_<i>`.
  if (auto us = id.rfind('_');
      us != std::string_view::npos && us + 1 < id.size() &&
      std::all_of(id.begin() + us + 1, id.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    keys.keys[keys.size++] = id.substr(0, us);
  }
  return keys;
}

SpanShape DetectShape(const Span& span, std::string_view scope_name, SpanShape hint) {
  const auto& a = span.attributes();
  if (FindAttr(a, sc::kGenAiLatencyTimeInModelPrefill) ||
      FindAttr(a, sc::kGenAiLatencyTimeInModelDecode) ||
      FindAttr(a, sc::kGenAiLatencyTimeInModelInference) || scope_name == kV1Scope) {
    return SpanShape::kV1;
  }
  if (FindAttr(a, sc::kGenAiUsageNumSequences) || FindAttr(a, sc::kGenAiResponseModel) ||
      FindAttr(a, sc::kGenAiLatencyTimeInScheduler) ||
      FindAttr(a, sc::kGenAiLatencyTimeInModelForward)) {
    return SpanShape::kV0;
  }
  return hint == SpanShape::kAuto ? SpanShape::kV1 : hint;
}

namespace {

// DetectShape on an indexed span.
SpanShape DetectShape(const AttrIndex& idx, std::string_view scope_name, SpanShape hint) {
  if (idx.at(kSlotPrefill) || idx.at(kSlotDecode) || idx.at(kSlotInference) ||
      scope_name == kV1Scope) {
    return SpanShape::kV1;
  }
  if (idx.at(kSlotNumSequences) || idx.at(kSlotResponseModel) || idx.at(kSlotScheduler) ||
      idx.at(kSlotModelForward)) {
    return SpanShape::kV0;
  }
  return hint == SpanShape::kAuto ? SpanShape::kV1 : hint;
}

}  // namespace

NormalizeReport Normalize(Span* span, std::string_view scope_name, const NormalizeContext& ctx,
                          google::protobuf::Arena* arena, std::vector<Span*>* phases) {
  NormalizeReport report;
  const JoinRecord* r = ctx.record;
  AttrIndex idx(span);
  const SpanShape shape = DetectShape(idx, scope_name, ctx.shape);
  const int level = r ? r->tracing_level : ctx.level;
  const std::string_view pd_role = r ? std::string_view(r->pd_role) : ctx.pd_role;
  const auto& engine_index = r ? r->engine_index : ctx.engine_index;

  span->set_kind(otlp_trace::Span::SPAN_KIND_INTERNAL);
  if (r != nullptr) {
    // Repair the parent: vLLM versions lose or mangle the incoming context.
    span->set_trace_id(std::string(AsBytes(r->trace_id)));
    span->set_parent_span_id(std::string(AsBytes(r->entry_span_id)));
  }

  // gen_ai.pd_role is never set by vLLM: a span carrying it was normalized already (by an
  // infertel upstream of this one) and its durations are nanoseconds.
  const bool already_normalized = idx.at(kSlotPdRole) != nullptr;
  if (shape == SpanShape::kV1) {
    // vLLM's durations are seconds. An SDK that encodes whole numbers as integers (the
    // OpenTelemetry JS SDK does) sends 1.0 s as intValue 1: seconds as well.
    ConvertLatencies(&idx, already_normalized, &report);
    if (!idx.at(kSlotModelName)) {
      if (r != nullptr && r->model) {
        Set(span, &idx, kSlotModelName, std::string_view(*r->model));
      } else if (r == nullptr && !ctx.model.empty()) {
        Set(span, &idx, kSlotModelName, ctx.model);
      }
    }
    if (r != nullptr && r->cached_tokens) Set(span, &idx, kSlotCacheRead, *r->cached_tokens);
    if (engine_index) Set(span, &idx, kSlotEngineIndex, *engine_index);
    Set(span, &idx, kSlotPdRole, pd_role);
    // PD rules (M2.3): on a prefill node only prefill is meaningful, on a decode node only decode.
    if (pd_role == "producer" && idx.at(kSlotDecode)) {
      Set(span, &idx, kSlotDecode, std::int64_t{0});
    } else if (pd_role == "consumer" && idx.at(kSlotPrefill)) {
      Set(span, &idx, kSlotPrefill, std::int64_t{0});
    }
    if (level >= 1) DerivePhases(*span, idx, pd_role, arena, phases);
    report.timings = Timings(idx);
    if (report.latency_not_finite + report.latency_out_of_range > 0) RemoveEmptied(span);
  }
  if (level >= 2 && r != nullptr) AddEvents(span, *r, ctx.max_events);
  return report;
}

NormalizeReport Normalize(Span* span, std::string_view scope_name, const NormalizeContext& ctx,
                          std::vector<Span>* phases) {
  google::protobuf::Arena arena;
  std::vector<Span*> made;
  const NormalizeReport report = Normalize(span, scope_name, ctx, &arena, &made);
  for (const Span* p : made) phases->push_back(*p);
  return report;
}

}  // namespace infertel::engines::vllm
