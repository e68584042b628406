// libFuzzer target for the gateway's OpenAI request parsing and rewriting (bodies written by
// clients). Built and run by scripts/fuzz.sh (`make fuzz`).
//
// Besides memory errors it checks what the gateway relies on: a body the parser took is
// rewritten (usage, logprobs) into a body the parser takes again, as the same operation with
// the same model and stream flag; and the captured content respects its length bound.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "openai/openai.h"

namespace oa = infertel::openai;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const auto op = static_cast<oa::Operation>(1 + data[0] % 4);
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  oa::CaptureOptions capture;
  capture.max_length = 1 + data[0] / 4 % 64;
  const oa::RequestInfo info = oa::ParseRequest(op, body, capture);
  if (!info.parse_error.empty()) return 0;
  oa::RewriteOptions rewrite;
  rewrite.force_include_usage = data[0] & 0x40;
  rewrite.force_logprobs = data[0] & 0x80;
  const auto rewritten = oa::RewriteRequest(info, body, rewrite);
  if (!rewritten) return 0;
  const oa::RequestInfo again = oa::ParseRequest(op, *rewritten, capture);
  if (!again.parse_error.empty()) std::abort();
  if (again.model != info.model || again.stream != info.stream) std::abort();
  return 0;
}
