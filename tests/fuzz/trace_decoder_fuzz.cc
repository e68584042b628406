// libFuzzer target for the receiver's trace decoder, against protobuf's own parser. Not part of
// the CMake build (it needs clang's -fsanitize=fuzzer). Build and run from the repository root,
// after a build in build/ (for the generated OTLP code):
//
//   G=build/gen; clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -Isrc -I$G \
//     tests/fuzz/trace_decoder_fuzz.cc src/receiver/trace_decoder.cc src/core/static_key.cc \
//     $(find $G -name '*.pb.cc' ! -name '*grpc*') -lprotobuf -o /tmp/trace_decoder_fuzz
//   /tmp/trace_decoder_fuzz -max_len=4096
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
