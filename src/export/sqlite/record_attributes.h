#pragma once
// A span's attributes in its block record. Format 4 keeps them as the sender's OTLP KeyValue
// messages (protobuf bytes after a marker byte) and renders the store's JSON only when a span
// is read: the store lane then copies the captured messages instead of escaping every quote
// in them, which was a fifth of its time per span (docs/performance-history.md). Records of
// format 3 and before hold the JSON itself, and read as they are.

#include <string>
#include <string_view>

#include "core/telemetry.h"

namespace infertel::exporting {

// Appends `attrs` in the record form to `out`.
void AppendRecordAttributes(std::string* out,
                            const google::protobuf::RepeatedPtrField<KeyValue>& attrs);

// The attributes of a record as the store's plain JSON object (otlp_json::AppendPlainAttributes):
// decoded from the record form, or the JSON of an older record as it is. Bytes that are neither
// (a damaged block) give "{}".
std::string RecordAttributesJson(std::string_view record);

}  // namespace infertel::exporting
