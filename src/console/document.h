#pragma once
// A console document: the values one console source (the watched file, the remote URL) sets,
// as YAML or JSON. The document is a mapping from console key to value:
//
//   otel.instrumentation.vllm.tracing.level: 2
//   apsara.apm.inference.sglang.logging.level: DEBUG
//
// Nested mappings are joined with '.', so `otel: {instrumentation: {vllm: {enabled: false}}}`
// names otel.instrumentation.vllm.enabled. A null value leaves the key unset. A document is
// accepted whole or not at all: one unknown key or bad value rejects it.

#include <map>
#include <string>
#include <string_view>
#include <variant>

#include "config/keys.h"
#include "config/settings.h"

namespace infertel::console {

using ConsoleValues = std::map<config::Key, config::Value>;

// Documents larger than this are refused (a console sets a handful of keys).
inline constexpr std::size_t kMaxDocumentBytes = 1u << 20;

// The values, or one message naming every rejected key (with the accepted values) or the
// syntax error.
std::variant<ConsoleValues, std::string> ParseConsoleDocument(std::string_view text);

}  // namespace infertel::console
