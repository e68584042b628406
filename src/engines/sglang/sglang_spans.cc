#include "engines/sglang/sglang_spans.h"

#include <fmt/format.h>

#include <array>
#include <utility>

#include "core/semconv.h"

namespace infertel::engines::sglang {
namespace sc = semconv;

namespace {

// The instrumentation scope and service name SGLang's server exports its spans under, and the
// module its request spans name (M4).
constexpr std::string_view kServerScopeName = "sglang server";
constexpr std::string_view kServerServiceName = "sglang";
constexpr std::string_view kServerModulePrefix = "sglang::";

struct Leveled {
  std::string_view name;
  int level;
};

// M4.4 and facts §1.4 (RequestStage), older names included: a span from an older SGLang is
// filtered by the level it had when it was renamed.
constexpr std::array<Leveled, 26> kStages{{
    {sc::kSglStageTokenize, 1},
    {sc::kSglStageApiServerDispatch, 2},
    {sc::kSglStageDispatchOld, 2},
    {sc::kSglStageDpcDispatch, 2},
    {sc::kSglStageDcDispatchOld, 2},
    {sc::kSglStageRequestProcess, 2},
    {sc::kSglStagePrefillWaiting, 1},
    {sc::kSglStagePrefillForward, 1},
    {sc::kSglStageChunkedPrefill, 3},
    {sc::kSglStageDecodeWaiting, 1},
    {sc::kSglStageDecodeForward, 1},
    {sc::kSglStageDecodeLoop, 3},
    {sc::kSglStageSpecDraft, 2},
    {sc::kSglStageSpecVerify, 2},
    {sc::kSglStageSpecDraftExtend, 3},
    {sc::kSglStageRunBatchCpu, 4},
    {sc::kSglStagePrefillPrepare, 1},
    {sc::kSglStagePrefillBootstrap, 1},
    {sc::kSglStagePrefillTransferKvCache, 1},
    {sc::kSglStageDecodePrepare, 1},
    {sc::kSglStageDecodeBootstrap, 1},
    {sc::kSglStageDecodeTransferred, 1},
    {sc::kSglStageFakeOutput, 3},
    {sc::kSglStageQuickFinish, 1},
    {sc::kSglStageMiniLbLaunch, 1},
    {sc::kSglStageWaitPdFinish, 2},
}};

constexpr std::array<Leveled, 2> kEvents{{
    {sc::kSglEventRetract, 1},
    {sc::kSglEventSchedule, 3},
}};

// Thread labels (facts §1.4 "Thread spans"); a thread span's name starts with one of them.
constexpr std::array<std::string_view, 7> kThreadLabels{
    "Tokenizer", "DP Controller", "Scheduler", "Prefill", "Decode", "DiffGenerator", "DiffWorker",
};
constexpr std::string_view kMultiTokenizer = "MultiTokenizer-";
constexpr std::string_view kPidMarker = " | pid:";

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

bool HasAttr(const Span& span, std::string_view key) {
  return FindAttr(span.attributes(), key) != nullptr;
}

bool IsRequestName(std::string_view n) {
  for (std::string_view role :
       {sc::kSglRolePrefill, sc::kSglRoleDecode, std::string_view("Sender")}) {
    if (StartsWith(n, role) && n.size() > role.size() && n[role.size()] == ' ') {
      n.remove_prefix(role.size() + 1);
      break;
    }
  }
  if (!n.empty() && n.front() == ' ') n.remove_prefix(1);
  return StartsWith(n, sc::kSglReqMarker) && n.size() > sc::kSglReqMarker.size();
}

bool HasHostSuffix(std::string_view n) {
  auto h = n.rfind(sc::kSglHostMarker);
  return h != std::string_view::npos && n.find(kPidMarker, h) != std::string_view::npos &&
         n.back() == ')';
}

bool IsThreadName(std::string_view n) {
  if (HasHostSuffix(n)) return true;
  if (StartsWith(n, kMultiTokenizer)) return n.size() > kMultiTokenizer.size();
  for (std::string_view label : kThreadLabels) {
    if (!StartsWith(n, label)) continue;
    if (n.size() == label.size()) return true;
    char next = n[label.size()];
    // "Scheduler [TP 0]", "Tokenizer(host:…)", "Prefill Scheduler", "PrefillTokenizer",
    // "DiffWorker_rank0".
    if (next == ' ' || next == '(' || next == '[' || next == '_' ||
        StartsWith(n.substr(label.size()), "Tokenizer") ||
        StartsWith(n.substr(label.size()), "Scheduler")) {
      return true;
    }
  }
  return false;
}

}  // namespace

bool IsSglangScope(const Resource& resource, const otlp_common::InstrumentationScope& scope) {
  if (scope.name() == kServerScopeName) return true;
  const AnyValue* svc = FindAttr(resource.attributes(), sc::kServiceName);
  return svc && svc->has_string_value() && svc->string_value() == kServerServiceName;
}

bool IsUnmistakablySglang(const Span& span) {
  if (const AnyValue* m = FindAttr(span.attributes(), sc::kSglModule);
      m && m->has_string_value() && StartsWith(m->string_value(), kServerModulePrefix)) {
    return true;
  }
  if (HasAttr(span, sc::kSglThreadLabel) && HasAttr(span, sc::kSglHostId)) return true;
  return HasHostSuffix(span.name());
}

SpanRole Classify(const Span& span) {
  const std::string& name = span.name();
  if (HasAttr(span, sc::kSglModule) || HasAttr(span, sc::kSglRid) || IsRequestName(name)) {
    return SpanRole::kRequest;
  }
  if (HasAttr(span, sc::kSglThreadLabel) || IsThreadName(name)) return SpanRole::kThread;
  if (StageLevel(name)) return SpanRole::kStage;
  return SpanRole::kOther;
}

std::optional<int> StageLevel(std::string_view name) {
  for (const auto& s : kStages)
    if (s.name == name) return s.level;
  return std::nullopt;
}

std::optional<int> EventLevel(std::string_view name) {
  for (const auto& e : kEvents)
    if (e.name == name) return e.level;
  return std::nullopt;
}

std::string_view RequestRole(std::string_view name) {
  for (std::string_view role : {sc::kSglRolePrefill, sc::kSglRoleDecode}) {
    if (StartsWith(name, role) && name.size() > role.size() && name[role.size()] == ' ')
      return role;
  }
  return {};
}

std::optional<std::string> BootstrapRoom(const Span& span) {
  const AnyValue* v = FindAttr(span.attributes(), sc::kSglBootstrapRoom);
  if (!v) return std::nullopt;
  if (v->has_string_value() && !v->string_value().empty()) return v->string_value();
  if (v->has_int_value()) {
    return fmt::format("{:#x}", static_cast<std::uint64_t>(v->int_value()));
  }
  return std::nullopt;
}

Resource MergeResource(const Resource& agent, const Resource& engine) {
  Resource out = agent;
  for (const KeyValue& kv : engine.attributes()) {
    const std::string& key = kv.key();
    if (key == sc::kServiceName) {
      if (!FindAttr(out.attributes(), sc::kInfertelEngineServiceName)) {
        auto* a = out.add_attributes();
        a->set_key(std::string(sc::kInfertelEngineServiceName));
        *a->mutable_value() = kv.value();
      }
      continue;
    }
    // The engine's SDK description and other service.* keys would contradict the agent's.
    if (StartsWith(key, "telemetry.sdk.") || StartsWith(key, "service.")) continue;
    if (FindAttr(out.attributes(), key)) continue;
    *out.add_attributes() = kv;
  }
  return out;
}

}  // namespace infertel::engines::sglang
