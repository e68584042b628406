// libFuzzer target for the OTLP/JSON decoder (the OTLP/HTTP receiver's JSON path). Built and run
// by scripts/fuzz.sh (`make fuzz`).
//
// Besides memory errors it checks a round trip: whatever the decoder takes, the encoder writes
// as JSON that the decoder takes again, giving the same message. The first input byte picks the
// signal, so traces, logs and metrics requests are all reached.
//
// And a difference: the decoder reads the text with its own cursor (otlp/json_cursor.h), so
// whether a text is JSON at all is checked against simdjson's verdict. The cursor refuses what
// simdjson refuses, and refuses as invalid JSON nothing that simdjson takes, except nesting
// deeper than its bound. (Numbers simdjson cannot represent, which the cursor skips in fields
// nobody reads, are the one tolerated difference the other way.)

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include <simdjson.h>

#include "otlp/json.h"

namespace {

std::unique_ptr<google::protobuf::Message> NewRequest(std::uint8_t which) {
  switch (which % 3) {
    case 0:
      return std::make_unique<infertel::TracesRequest>();
    case 1:
      return std::make_unique<infertel::LogsRequest>();
    default:
      return std::make_unique<infertel::MetricsRequest>();
  }
}

void CheckAgainstSimdjson(std::string_view json, bool taken, const std::string& error) {
  static simdjson::dom::parser parser;
  const auto verdict = parser.parse(json.data(), json.size(), true).error();
  const bool syntax_refused = !taken && error.rfind("invalid JSON", 0) == 0;
  if (verdict == simdjson::SUCCESS && syntax_refused &&
      error.find("nesting too deep") == std::string::npos)
    std::abort();
  if (verdict != simdjson::SUCCESS && taken && verdict != simdjson::NUMBER_ERROR) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view json(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto first = NewRequest(data[0]);
  std::string error;
  const bool taken = infertel::otlp_json::Decode(json, first.get(), &error);
  if (!taken && error.empty()) std::abort();  // a refusal always says why
  CheckAgainstSimdjson(json, taken, error);
  if (!taken) return 0;
  const std::string encoded = infertel::otlp_json::Encode(*first);
  auto second = NewRequest(data[0]);
  if (!infertel::otlp_json::Decode(encoded, second.get(), &error)) std::abort();
  if (first->SerializeAsString() != second->SerializeAsString()) std::abort();
  return 0;
}
