// libFuzzer target for the receiver's trace decoder, against protobuf's own parser. Built and
// run by scripts/fuzz.sh (`make fuzz`).
//
// Besides memory errors it checks the decoder's promise (receiver/trace_decoder.h): whenever it
// takes an input, protobuf takes it too and both give the same message.

#include <google/protobuf/arena.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "receiver/trace_decoder.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view wire(reinterpret_cast<const char*>(data), size);
  google::protobuf::Arena arena;
  auto* decoded = google::protobuf::Arena::CreateMessage<infertel::TracesRequest>(&arena);
  if (!infertel::receiver::DecodeTraces(wire, decoded)) return 0;
  infertel::TracesRequest parsed;
  if (!parsed.ParseFromArray(wire.data(), static_cast<int>(wire.size()))) std::abort();
  if (decoded->SerializeAsString() != parsed.SerializeAsString()) std::abort();
  return 0;
}
