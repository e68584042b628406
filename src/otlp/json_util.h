#pragma once
// Small JSON building blocks shared by the OTLP/JSON codec, the embedded store and the debug
// exporter: string escaping, numbers, base64, and the "plain" JSON form of OTLP attribute
// values ({"key": value} objects with native JSON values) used by the store's columns.

#include <string>
#include <string_view>

#include "core/telemetry.h"

namespace infertel::otlp_json {

// Appends `s` as a quoted JSON string (", \, control characters escaped).
void AppendString(std::string* out, std::string_view s);
// Appends a finite double in shortest round-trip form; NaN and infinities become `null`.
void AppendDouble(std::string* out, double v);

std::string Base64Encode(std::string_view bytes);
// Accepts the standard and URL-safe alphabets, with or without padding.
bool Base64Decode(std::string_view text, std::string* out);

// Plain JSON of an AnyValue: string → "..", int → number, double → number, bool,
// array → [..], kvlist → {..}, bytes → base64 string, empty → null.
void AppendPlainValue(std::string* out, const AnyValue& v);
// Plain JSON object of attributes: {"key": value, ...} (later duplicates win in readers).
void AppendPlainAttributes(std::string* out,
                           const google::protobuf::RepeatedPtrField<KeyValue>& attrs);
std::string PlainAttributes(const google::protobuf::RepeatedPtrField<KeyValue>& attrs);

}  // namespace infertel::otlp_json
