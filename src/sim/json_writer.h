#pragma once
// A small streaming JSON writer for the simulator's responses. Key order is exactly the
// order of calls, which is what byte-compatible engine responses need. Not thread-safe.

#include <cstdint>
#include <string>
#include <string_view>

namespace infertel::sim {

class JsonWriter {
 public:
  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  JsonWriter& Key(std::string_view key);
  JsonWriter& String(std::string_view value);
  JsonWriter& Int(std::int64_t value);
  // Shortest round-trip form, like Python's float repr ("-0.5", "1e-05").
  JsonWriter& Double(double value);
  JsonWriter& Bool(bool value);
  JsonWriter& Null();
  // Inserts already-serialized JSON as one value.
  JsonWriter& Raw(std::string_view json);

  const std::string& str() const { return out_; }
  std::string Take() { return std::move(out_); }

 private:
  void Separate();
  std::string out_;
  bool need_comma_ = false;
};

// Appends `value` as a JSON string literal (with quotes), escaping as Python's json.dumps
// with ensure_ascii=False does.
void AppendJsonString(std::string* out, std::string_view value);

}  // namespace infertel::sim
