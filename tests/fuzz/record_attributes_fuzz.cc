// libFuzzer target for a store record's attributes as read back (export/sqlite/record_attributes.h):
// the bytes of a damaged or foreign store file. Built and run by scripts/fuzz.sh (`make fuzz`).
//
// Besides memory errors it checks the reader's promise: the result is a JSON object; and
// whenever the bytes after the marker parse as a KeyValueList, writing that list again gives a
// record that reads as the same JSON (the writer is protobuf's format, byte for byte).

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "export/sqlite/record_attributes.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const std::string json = infertel::exporting::RecordAttributesJson(bytes);
  if (json.empty() || json.front() != '{') std::abort();
  if (bytes.empty() || bytes.front() != '\x01') return 0;
  infertel::otlp_common::KeyValueList list;
  if (!list.ParseFromArray(bytes.data() + 1, static_cast<int>(bytes.size() - 1))) return 0;
  std::string again;
  infertel::exporting::AppendRecordAttributes(&again, list.values());
  if (infertel::exporting::RecordAttributesJson(again) != json) std::abort();
  return 0;
}
