#pragma once
// A console document: the values one console source (the watched file, the remote URL) sets,
// as YAML or JSON. The document is a mapping from console key to value:
//
//   otel.instrumentation.vllm.tracing.level: 2
//   apsara.apm.inference.sglang.logging.level: DEBUG
//
// Nested mappings are joined with '.', so `otel: {instrumentation: {vllm: {enabled: false}}}`
// names otel.instrumentation.vllm.enabled. A table key (config::ValueType::kTable) takes the whole
// mapping below it as its value, e.g. per-model objectives:
//
//   infertel.slo.models:
//     meta-llama/Llama-3.1-8B-Instruct: {ttft-ms: 500, tpot-ms: 50}
//
// A null value leaves the key unset. A document is
// accepted whole or not at all: one unknown key or bad value rejects it.
//
// Bounds (a console sets a handful of keys; a document past them is refused before it costs
// more than a few hundred KiB): its size, its nesting, and the number of nodes it holds with
// every alias expanded (a YAML "billion laughs" of a few hundred bytes names 10^9 nodes).

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>

#include "config/keys.h"
#include "config/settings.h"

namespace infertel::console {

using ConsoleValues = std::map<config::Key, config::Value>;

// Documents larger than this are refused.
inline constexpr std::size_t kMaxDocumentBytes = 64u << 10;
// Mappings nested deeper than this are refused.
inline constexpr int kMaxDocumentDepth = 16;
// Documents with more nodes than this (keys, values and collections, each alias counted as
// the nodes it stands for) are refused.
inline constexpr std::size_t kMaxDocumentNodes = 4096;

// Why a console document (or the file holding it) was refused; a label value of
// infertel_console_refused_documents_total.
enum class Refusal : std::uint8_t {
  kTooLarge,        // more than kMaxDocumentBytes
  kTooDeep,         // nested deeper than kMaxDocumentDepth
  kTooManyNodes,    // more than kMaxDocumentNodes, aliases expanded
  kSyntax,          // not YAML or JSON, or not a mapping
  kInvalid,         // an unknown key or a bad value
  kNotRegularFile,  // the console file is a FIFO, a device, a directory...
};
inline constexpr std::size_t kRefusalCount = 6;
std::string_view RefusalName(Refusal reason);

struct DocumentError {
  Refusal reason;
  std::string message;
};

// The values, or why not: one message naming every rejected key (with the accepted values),
// the syntax error, or the bound passed. Outside text in the message is cut and escaped
// (core/printable.h).
std::variant<ConsoleValues, DocumentError> ParseConsoleDocument(std::string_view text);

}  // namespace infertel::console
