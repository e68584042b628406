// libFuzzer target for the console document reader (the watched file, the console URL,
// `infertel config --console-file`).
// Built and run by scripts/fuzz.sh (`make fuzz`), from the seeds in
// tests/fuzz/corpus/console_document_fuzz/.
//
// Besides memory errors it checks the reader's bounds (console/document.h): a refused
// document says why, its message is bounded and printable, no value is accepted for a
// document larger than the limit, and reading an accepted text again gives the same values.
// -rss_limit_mb and -timeout catch an expansion the bounds missed.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "console/document.h"
#include "engine_keys.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  infertel::fuzz::RegisterEngineKeys();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace con = infertel::console;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto r = con::ParseConsoleDocument(text);
  if (const auto* err = std::get_if<con::DocumentError>(&r)) {
    if (err->message.empty() || err->message.size() > 8192) std::abort();
    for (char c : err->message)
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) std::abort();
    if (static_cast<std::size_t>(err->reason) >= con::kRefusalCount) std::abort();
  } else {
    if (size > con::kMaxDocumentBytes) std::abort();
  }
  // Read again only when accepted: the values are what a second read could change (state left
  // between calls, an uninitialised read), and most inputs are refusals, whose second read was
  // half of the target's time (four yaml-cpp passes per input instead of two).
  if (const auto* v = std::get_if<con::ConsoleValues>(&r)) {
    const auto again = con::ParseConsoleDocument(text);
    if (r.index() != again.index()) std::abort();
    if (*v != std::get<con::ConsoleValues>(again)) std::abort();
  }
  return 0;
}
