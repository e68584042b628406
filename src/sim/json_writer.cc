#include "sim/json_writer.h"

#include "core/json.h"

#include <fmt/format.h>

#include <cmath>

namespace infertel::sim {

void AppendJsonString(std::string* out, std::string_view value) {
  infertel::AppendJsonString(out, value);
}

void JsonWriter::Separate() {
  if (need_comma_) out_.push_back(',');
  need_comma_ = true;
}

JsonWriter& JsonWriter::BeginObject() {
  Separate();
  out_.push_back('{');
  need_comma_ = false;
  return *this;
}
JsonWriter& JsonWriter::EndObject() {
  out_.push_back('}');
  need_comma_ = true;
  return *this;
}
JsonWriter& JsonWriter::BeginArray() {
  Separate();
  out_.push_back('[');
  need_comma_ = false;
  return *this;
}
JsonWriter& JsonWriter::EndArray() {
  out_.push_back(']');
  need_comma_ = true;
  return *this;
}
JsonWriter& JsonWriter::Key(std::string_view key) {
  Separate();
  AppendJsonString(&out_, key);
  out_.push_back(':');
  need_comma_ = false;
  return *this;
}
JsonWriter& JsonWriter::String(std::string_view value) {
  Separate();
  AppendJsonString(&out_, value);
  return *this;
}
JsonWriter& JsonWriter::Int(std::int64_t value) {
  Separate();
  out_.append(std::to_string(value));
  return *this;
}
JsonWriter& JsonWriter::Double(double value) {
  Separate();
  if (!std::isfinite(value)) {
    out_.append(std::isnan(value) ? "NaN" : (value > 0 ? "Infinity" : "-Infinity"));
  } else if (value == std::floor(value) && std::fabs(value) < 1e16) {
    out_.append(fmt::format("{:.1f}", value));
  } else {
    out_.append(fmt::format("{}", value));
  }
  return *this;
}
JsonWriter& JsonWriter::Bool(bool value) {
  Separate();
  out_.append(value ? "true" : "false");
  return *this;
}
JsonWriter& JsonWriter::Null() {
  Separate();
  out_.append("null");
  return *this;
}
JsonWriter& JsonWriter::Raw(std::string_view json) {
  Separate();
  out_.append(json);
  return *this;
}

}  // namespace infertel::sim
