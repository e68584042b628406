#include "console/api_body.h"

#include <fmt/format.h>
#include <simdjson.h>

#include "core/printable.h"

namespace infertel::console {
namespace {

constexpr std::size_t kMaxEchoedValueBytes = 64;  // of a value quoted back in a 400

}  // namespace

std::variant<config::Value, std::string> ValueFromBody(const config::KeySpec& spec,
                                                       std::string_view body) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc, v;
  simdjson::dom::object obj;
  if (auto err = parser.parse(body.data(), body.size()).get(doc)) {
    // A number past 64 bits is valid JSON that simdjson does not read: say so, not "not JSON".
    if (err == simdjson::NUMBER_OUT_OF_RANGE || err == simdjson::NUMBER_ERROR)
      return fmt::format("the value is a number out of range (or malformed) for {}: expected {}",
                         spec.console_key, config::AcceptedValues(spec));
    return fmt::format(R"(body must be a JSON object {{"value": …}} setting {}: expected {})",
                       spec.console_key, config::AcceptedValues(spec));
  }
  if (doc.get(obj) || obj["value"].get(v)) {
    return fmt::format(R"(body must be a JSON object {{"value": …}} setting {}: expected {})",
                       spec.console_key, config::AcceptedValues(spec));
  }
  auto mismatch = [&] {
    return fmt::format("invalid value {} for {}: expected {}",
                       Excerpt(simdjson::minify(v), kMaxEchoedValueBytes), spec.console_key,
                       config::AcceptedValues(spec));
  };
  std::string text;
  switch (v.type()) {
    case simdjson::dom::element_type::BOOL:
      if (spec.type != config::ValueType::kBool) return mismatch();
      return config::Value{v.get_bool().value_unsafe()};
    case simdjson::dom::element_type::INT64:
    case simdjson::dom::element_type::UINT64:
      if (spec.type != config::ValueType::kInt) return mismatch();
      text = simdjson::minify(v);
      break;
    case simdjson::dom::element_type::STRING:
      text = std::string(v.get_string().value_unsafe());
      break;
    case simdjson::dom::element_type::OBJECT:
      if (spec.type != config::ValueType::kTable) return mismatch();
      text = simdjson::minify(v);
      break;
    case simdjson::dom::element_type::NULL_VALUE:
      return fmt::format("null is not a value for {}: DELETE /api/config/{} removes it",
                         spec.console_key, spec.console_key);
    default:
      return mismatch();
  }
  auto parsed = config::ParseValue(spec, text);
  if (auto* err = std::get_if<std::string>(&parsed)) return *err;
  return std::get<config::Value>(std::move(parsed));
}

}  // namespace infertel::console
