// libFuzzer target for the gateway's OpenAI response parsing (bodies written by engines) and the
// removal of logprobs the gateway asked for. Built and run by scripts/fuzz.sh (`make fuzz`).
//
// Besides memory errors it checks that a body whose logprobs were stripped still parses as a
// response whenever the original did, with the same id, model and usage.

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
  const oa::ResponseInfo info = oa::ParseResponse(op, body, capture);
  const auto stripped = oa::StripInjectedLogprobs(body);
  if (!stripped || !info.parsed) return 0;
  const oa::ResponseInfo again = oa::ParseResponse(op, *stripped, capture);
  if (!again.parsed || again.id != info.id || again.model != info.model) std::abort();
  if (again.usage.output_tokens != info.usage.output_tokens) std::abort();
  return 0;
}
