// libFuzzer target for the receiver's trace decoder, against protobuf's own parser. Built and
// run by scripts/fuzz.sh (`make fuzz`).
//
// Besides memory errors it checks the decoder's promise (receiver/trace_decoder.h): whenever it
// takes an input, protobuf takes it too and both give the same message; and within span limits
// (small ones, so that inputs reach them), the same message as protobuf's followed by
// ApplySpanLimits and DropUnknownFields, with the same counts, which the limits then leave as
// it is. (A string the wire gives twice for one value, the last winning, may be counted as cut
// twice; so may a collection emptied for its depth.)

#include <google/protobuf/arena.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "receiver/span_limits.h"
#include "receiver/trace_decoder.h"

namespace {

using infertel::TracesRequest;
using infertel::receiver::LimitCounts;
using infertel::receiver::SpanLimits;

bool SameCounts(const LimitCounts& a, const LimitCounts& b) {
  return a.span_attributes == b.span_attributes && a.span_events == b.span_events &&
         a.span_links == b.span_links && a.event_attributes == b.event_attributes &&
         a.link_attributes == b.link_attributes && a.resource_attributes == b.resource_attributes &&
         a.value_length >= b.value_length && a.value_elements == b.value_elements &&
         a.value_depth >= b.value_depth && a.unknown_fields == b.unknown_fields;
}

void CheckWithinLimits(std::string_view wire, const TracesRequest& parsed) {
  SpanLimits limits;
  limits.attribute_count = 2;
  limits.event_count = 1;
  limits.link_count = 1;
  limits.event_attribute_count = 1;
  limits.link_attribute_count = 0;
  limits.resource_attribute_count = 1;
  limits.attribute_value_length = 3;
  limits.value_element_count = 2;
  limits.value_depth = 2;
  google::protobuf::Arena arena;
  auto* decoded = google::protobuf::Arena::CreateMessage<TracesRequest>(&arena);
  LimitCounts by_decoder, by_protobuf, again;
  if (!infertel::receiver::DecodeTraces(wire, decoded, &limits, &by_decoder)) std::abort();
  TracesRequest limited = parsed;
  infertel::receiver::ApplySpanLimits(&limited, limits, &by_protobuf);
  by_protobuf.unknown_fields += infertel::receiver::DropUnknownFields(&limited);
  if (decoded->SerializeAsString() != limited.SerializeAsString()) std::abort();
  if (!SameCounts(by_decoder, by_protobuf)) std::abort();
  infertel::receiver::ApplySpanLimits(decoded, limits, &again);
  if (again.total() != 0) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view wire(reinterpret_cast<const char*>(data), size);
  google::protobuf::Arena arena;
  auto* decoded = google::protobuf::Arena::CreateMessage<TracesRequest>(&arena);
  if (!infertel::receiver::DecodeTraces(wire, decoded)) return 0;
  TracesRequest parsed;
  if (!parsed.ParseFromArray(wire.data(), static_cast<int>(wire.size()))) std::abort();
  if (decoded->SerializeAsString() != parsed.SerializeAsString()) std::abort();
  CheckWithinLimits(wire, parsed);
  return 0;
}
