#pragma once
// Which names GenAI telemetry speaks: the telemetry model's (the default), the latest
// OpenTelemetry GenAI conventions' (OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental),
// or both (…/dup), as the conventions' own switch says. One table of the attribute names the
// two spell differently; spans are written in the model's names and rewritten here, once, where
// each kind of span is finished (the entry span, the engine's request spans, native spans).

#include <cstdint>
#include <span>
#include <string_view>

#include <google/protobuf/repeated_ptr_field.h>

#include "core/telemetry.h"

namespace infertel {

enum class GenAiDialect : std::uint8_t { kModel, kLatest, kBoth };

// From the switch's value: comma-separated items, of which only the GenAI ones count (the
// variable is shared with other instrumentations); `/dup` wins over the plain value.
GenAiDialect GenAiDialectOf(std::string_view opt_in);
inline bool SpeaksLatest(GenAiDialect d) { return d != GenAiDialect::kModel; }
inline bool SpeaksModel(GenAiDialect d) { return d != GenAiDialect::kLatest; }

struct AttributeRename {
  std::string_view model;   // as the telemetry model (or an engine) writes it
  std::string_view latest;  // as the latest conventions do
};
std::span<const AttributeRename> GenAiAttributeRenames();

// Rewrites `attrs` for `d`: kLatest renames in place, kBoth adds the latest name beside the
// model's (a value already under the latest name is left alone); kModel changes nothing.
void ApplyGenAiDialect(google::protobuf::RepeatedPtrField<KeyValue>* attrs, GenAiDialect d);

}  // namespace infertel
