#include "engines/vllm/vllm_spans.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "core/semconv.h"

namespace infertel::engines::vllm {
namespace sc = semconv;
namespace {

constexpr std::string_view kV1Scope = "vllm.tracing.otel";
constexpr std::array<std::string_view, 4> kIdPrefixes = {"chatcmpl-", "cmpl-", "embd-", "score-"};

// The V1 latencies, converted from vLLM's seconds to integer nanoseconds (M1, M2.3).
constexpr std::array<std::string_view, 9> kV1Durations = {
    sc::kGenAiLatencyTimeToFirstToken,  sc::kGenAiLatencyE2e,
    sc::kGenAiLatencyTimeInQueue,       sc::kGenAiLatencyTimeInModelPrefill,
    sc::kGenAiLatencyTimeInModelDecode, sc::kGenAiLatencyTimeInModelInference,
    sc::kGenAiLatencyTimeInTokenize,    sc::kGenAiLatencyTimeInDetokenize,
    sc::kGenAiLatencyTimeInKvTransfer,
};

KeyValue* Find(Span* span, std::string_view key) {
  for (auto& kv : *span->mutable_attributes())
    if (kv.key() == key) return &kv;
  return nullptr;
}

std::optional<double> Number(const AnyValue* v) {
  if (v == nullptr) return std::nullopt;
  if (v->has_double_value()) return v->double_value();
  if (v->has_int_value()) return static_cast<double>(v->int_value());
  return std::nullopt;
}

// Sets (or replaces) an attribute.
template <typename T>
void Set(Span* span, std::string_view key, T value) {
  if (KeyValue* kv = Find(span, key)) {
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
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    AddAttr(span->mutable_attributes(), key, static_cast<std::int64_t>(value));
  } else {
    AddAttr(span->mutable_attributes(), key, value);
  }
}

std::int64_t SecondsToNanos(double s) { return static_cast<std::int64_t>(std::llround(s * 1e9)); }

void PhaseAttributes(const Span& from, Span* phase) {
  for (std::string_view key :
       {sc::kGenAiRequestId, sc::kGenAiRequestModelName, sc::kGenAiEngineIndex, sc::kGenAiPdRole}) {
    for (const auto& kv : from.attributes())
      if (kv.key() == key) *phase->add_attributes() = kv;
  }
}

Span MakePhase(const Span& parent, std::string_view name, std::uint64_t start, std::uint64_t end) {
  Span p;
  p.set_trace_id(parent.trace_id());
  SpanId id = NewSpanId();
  p.set_span_id(std::string(AsBytes(id)));
  p.set_parent_span_id(parent.span_id());
  p.set_name(std::string(name));
  p.set_kind(otlp_trace::Span::SPAN_KIND_INTERNAL);
  p.set_start_time_unix_nano(start);
  p.set_end_time_unix_nano(std::max(start, end));
  PhaseAttributes(parent, &p);
  return p;
}

// Reads a V1 duration attribute already in nanoseconds.
std::optional<std::uint64_t> Nanos(const Span& span, std::string_view key) {
  const AnyValue* v = FindAttr(span.attributes(), key);
  if (v == nullptr || !v->has_int_value() || v->int_value() < 0) return std::nullopt;
  return static_cast<std::uint64_t>(v->int_value());
}

void DerivePhases(const Span& span, const std::string& pd_role, std::vector<Span>* phases) {
  const std::uint64_t s = span.start_time_unix_nano(), e = span.end_time_unix_nano();
  auto ttft = Nanos(span, sc::kGenAiLatencyTimeToFirstToken);
  auto queue = Nanos(span, sc::kGenAiLatencyTimeInQueue);
  auto prefill = Nanos(span, sc::kGenAiLatencyTimeInModelPrefill);
  auto decode = Nanos(span, sc::kGenAiLatencyTimeInModelDecode);
  auto kv = Nanos(span, sc::kGenAiLatencyTimeInKvTransfer);
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
    Span wait = MakePhase(span, sc::kSpanWait, wait_start, prefill_start);
    phases->push_back(wait);
    if (kv && *kv > 0) {
      // Remote KV is awaited inside the queue (WAITING_FOR_REMOTE_KVS): nested in `wait`.
      Span k = MakePhase(span, sc::kSpanKvTransfer, wait_start,
                         wait_start + std::min(*kv, prefill_start - wait_start));
      k.set_parent_span_id(wait.span_id());
      AddAttr(k.mutable_attributes(), sc::kGenAiKvTransferDirection, "recv");
      phases->push_back(std::move(k));
    }
  }
  if (!consumer && prefill)
    phases->push_back(MakePhase(span, sc::kSpanPrefill, prefill_start, first));
  if (!producer && decode) {
    phases->push_back(MakePhase(span, sc::kSpanDecode, first, std::min(e, first + *decode)));
  }
}

void AddTokenEvent(Span* span, std::string_view name, std::uint64_t time,
                   const gateway::Exchange::Delta* d,
                   const std::optional<std::int64_t>& engine_index) {
  auto* ev = span->add_events();
  ev->set_name(std::string(name));
  ev->set_time_unix_nano(time);
  auto* a = ev->mutable_attributes();
  if (engine_index) AddAttr(a, sc::kGenAiEngineIndex, *engine_index);
  if (d == nullptr) return;
  AddAttr(a, sc::kGenAiTokenCount, static_cast<std::int64_t>(d->texts.size()));
  auto array = [&](std::string_view key) {
    auto* kv = a->Add();
    kv->set_key(std::string(key));
    return kv->mutable_value()->mutable_array_value();
  };
  auto* texts = array(sc::kGenAiTokenTexts);
  for (const auto& t : d->texts) texts->add_values()->set_string_value(t);
  if (!d->logprobs.empty()) {
    auto* lp = array(sc::kGenAiTokenLogprobs);
    for (double v : d->logprobs) lp->add_values()->set_double_value(v);
  }
  if (!d->ids.empty()) {
    auto* ids = array(sc::kGenAiTokenIds);
    for (auto v : d->ids) ids->add_values()->set_int_value(v);
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

bool IsVllmRequestSpan(const Span& span) {
  return span.name() == sc::kSpanLlmRequest &&
         FindAttr(span.attributes(), sc::kGenAiRequestId) != nullptr;
}

std::vector<std::string> JoinKeys(const Span& span) {
  std::vector<std::string> keys;
  const AnyValue* v = FindAttr(span.attributes(), sc::kGenAiRequestId);
  if (v == nullptr || !v->has_string_value()) return keys;
  std::string_view id = v->string_value();
  for (std::string_view p : kIdPrefixes) {
    if (id.substr(0, p.size()) == p) {
      id.remove_prefix(p.size());
      break;
    }
  }
  keys.emplace_back(id);
  // Several prompts in one completions request become sub-requests `<id>_<i>`.
  if (auto us = id.rfind('_');
      us != std::string_view::npos && us + 1 < id.size() &&
      std::all_of(id.begin() + us + 1, id.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    keys.emplace_back(id.substr(0, us));
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

void Normalize(Span* span, std::string_view scope_name, const NormalizeContext& ctx,
               std::vector<Span>* phases) {
  const JoinRecord* r = ctx.record;
  const SpanShape shape = DetectShape(*span, scope_name, ctx.shape);
  const int level = r ? r->tracing_level : ctx.level;
  const std::string& pd_role = r ? r->pd_role : ctx.pd_role;
  const auto& engine_index = r ? r->engine_index : ctx.engine_index;

  span->set_kind(otlp_trace::Span::SPAN_KIND_INTERNAL);
  if (r != nullptr) {
    // Repair the parent: vLLM versions lose or mangle the incoming context.
    span->set_trace_id(std::string(AsBytes(r->trace_id)));
    span->set_parent_span_id(std::string(AsBytes(r->entry_span_id)));
  }

  // gen_ai.pd_role is never set by vLLM: a span carrying it was normalized already (by an
  // infertel upstream of this one) and its durations are nanoseconds.
  const bool already_normalized = FindAttr(span->attributes(), sc::kGenAiPdRole) != nullptr;
  if (shape == SpanShape::kV1) {
    for (std::string_view key : kV1Durations) {
      KeyValue* kv = Find(span, key);
      if (kv == nullptr || already_normalized) continue;
      // vLLM's durations are seconds. An SDK that encodes whole numbers as integers (the
      // OpenTelemetry JS SDK does) sends 1.0 s as intValue 1: seconds as well.
      if (kv->value().has_double_value()) {
        kv->mutable_value()->set_int_value(SecondsToNanos(kv->value().double_value()));
      } else if (kv->value().has_int_value()) {
        kv->mutable_value()->set_int_value(
            SecondsToNanos(static_cast<double>(kv->value().int_value())));
      }
    }
    if (r != nullptr && r->model && !FindAttr(span->attributes(), sc::kGenAiRequestModelName)) {
      Set(span, sc::kGenAiRequestModelName, std::string_view(*r->model));
    }
    if (r != nullptr && r->cached_tokens)
      Set(span, sc::kGenAiUsageCacheReadInputTokens, *r->cached_tokens);
    if (engine_index) Set(span, sc::kGenAiEngineIndex, *engine_index);
    Set(span, sc::kGenAiPdRole, std::string_view(pd_role));
    // PD rules (M2.3): on a prefill node only prefill is meaningful, on a decode node only decode.
    if (pd_role == "producer" && Find(span, sc::kGenAiLatencyTimeInModelDecode)) {
      Set(span, sc::kGenAiLatencyTimeInModelDecode, std::int64_t{0});
    } else if (pd_role == "consumer" && Find(span, sc::kGenAiLatencyTimeInModelPrefill)) {
      Set(span, sc::kGenAiLatencyTimeInModelPrefill, std::int64_t{0});
    }
    if (level >= 1) DerivePhases(*span, pd_role, phases);
  }
  if (level >= 2 && r != nullptr) AddEvents(span, *r, ctx.max_events);
}

}  // namespace infertel::engines::vllm
