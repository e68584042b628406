#pragma once
// SGLang's native spans (spec M4.2-M4.4; facts sglang.md §1.4): recognising them, telling the
// request span, the thread spans and the stage spans apart, the level of each stage and
// event, and the resource they are exported with (the agent's, so that native spans and entry
// spans belong to one application).
//
// Pure functions over protobuf messages: no I/O, no state, thread-safe. What needs memory
// across batches (levels per request, spans dropped by level, PD pairs) is in tracker.h.

#include <optional>
#include <string>
#include <string_view>

#include "core/telemetry.h"

namespace infertel::engines::sglang {

// What a span is in SGLang's three layers; kOther for SGLang spans outside them (older
// "Bootstrap Room" spans, the mooncake module, stage names this table does not know).
enum class SpanRole { kOther, kRequest, kThread, kStage };

// True when a scope's spans come from SGLang's server: instrumentation scope "sglang server",
// or a resource whose service.name is "sglang" (SGLang names both itself).
bool IsSglangScope(const Resource& resource, const otlp_common::InstrumentationScope& scope);

// True for a span only SGLang makes, recognisable on its own whatever scope carries it: a
// request span (attribute module = "sglang::…") or a thread span (attributes thread_label and
// host_id, or a name ending in "(host:… | pid:…)").
bool IsUnmistakablySglang(const Span& span);

// The role of a span already known to be SGLang's. Request span: "{role} Req {rid[:8]}" (role
// empty, "prefill", "decode"; the empty role leaves a leading space) or attributes rid/module.
// Thread span: attribute thread_label, a "(host:" suffix, or a name starting with one of the
// thread labels. Stage: a name in the stage table.
SpanRole Classify(const Span& span);

// M4.4: the level of a stage span by name (older names included); nullopt when unknown.
std::optional<int> StageLevel(std::string_view name);
// M4.4: the level of a span event by name (`retract` 1, `schedule` 3); nullopt when unknown.
std::optional<int> EventLevel(std::string_view name);

// The PD role in a request span's name: "prefill", "decode", or "" (not disaggregated).
std::string_view RequestRole(std::string_view name);
// The request span's `bootstrap_room` (a hex string; an integer is rendered as hex), when set.
std::optional<std::string> BootstrapRoom(const Span& span);

// The resource SGLang's spans are exported with: the agent's resource, plus the engine's own
// attributes whose keys the agent's lacks, except the engine SDK's telemetry.sdk.* and
// service.*; the engine's service.name is kept as infertel.engine.service.name.
Resource MergeResource(const Resource& agent, const Resource& engine);

}  // namespace infertel::engines::sglang
