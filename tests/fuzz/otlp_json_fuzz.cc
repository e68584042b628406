// libFuzzer target for the OTLP/JSON decoder (the OTLP/HTTP receiver's JSON path). Built and run
// by scripts/fuzz.sh (`make fuzz`).
//
// Besides memory errors it checks a round trip: whatever the decoder takes, the encoder writes
// as JSON that the decoder takes again, giving the same message. The first input byte picks the
// signal, so traces, logs and metrics requests are all reached.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view json(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto first = NewRequest(data[0]);
  std::string error;
  if (!infertel::otlp_json::Decode(json, first.get(), &error)) {
    if (error.empty()) std::abort();  // a refusal always says why
    return 0;
  }
  const std::string encoded = infertel::otlp_json::Encode(*first);
  auto second = NewRequest(data[0]);
  if (!infertel::otlp_json::Decode(encoded, second.get(), &error)) std::abort();
  if (first->SerializeAsString() != second->SerializeAsString()) std::abort();
  return 0;
}
