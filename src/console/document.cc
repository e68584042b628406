#include "console/document.h"

#include <fmt/format.h>
#include <simdjson.h>
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <optional>
#include <vector>

namespace infertel::console {
namespace {

// One leaf of the document: its dotted key and its scalar text (nullopt for null).
struct Leaf {
  std::string key;
  std::optional<std::string> text;
};

constexpr int kMaxDepth = 16;
constexpr std::size_t kMaxErrors = 8;

std::string Join(const std::string& prefix, std::string_view key) {
  return prefix.empty() ? std::string(key) : prefix + "." + std::string(key);
}

void FlattenYaml(const YAML::Node& node, const std::string& prefix, int depth,
                 std::vector<Leaf>* out, std::vector<std::string>* errors) {
  if (depth > kMaxDepth) {
    errors->push_back(fmt::format("{}: nested too deeply", prefix));
    return;
  }
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) {
      errors->push_back(fmt::format("{}: keys must be strings", prefix.empty() ? "(top)" : prefix));
      continue;
    }
    std::string key = Join(prefix, kv.first.Scalar());
    const YAML::Node& v = kv.second;
    if (v.IsMap()) {
      FlattenYaml(v, key, depth + 1, out, errors);
    } else if (v.IsNull()) {
      out->push_back({key, std::nullopt});
    } else if (v.IsScalar()) {
      out->push_back({key, v.Scalar()});
    } else {
      errors->push_back(fmt::format("{}: expected a single value, got a list", key));
    }
  }
}

void FlattenJson(simdjson::dom::object obj, const std::string& prefix, int depth,
                 std::vector<Leaf>* out, std::vector<std::string>* errors) {
  if (depth > kMaxDepth) {
    errors->push_back(fmt::format("{}: nested too deeply", prefix));
    return;
  }
  for (auto field : obj) {
    std::string key = Join(prefix, field.key);
    simdjson::dom::element v = field.value;
    switch (v.type()) {
      case simdjson::dom::element_type::OBJECT:
        FlattenJson(v.get_object().value_unsafe(), key, depth + 1, out, errors);
        break;
      case simdjson::dom::element_type::NULL_VALUE:
        out->push_back({key, std::nullopt});
        break;
      case simdjson::dom::element_type::STRING:
        out->push_back({key, std::string(v.get_string().value_unsafe())});
        break;
      case simdjson::dom::element_type::ARRAY:
        errors->push_back(fmt::format("{}: expected a single value, got a list", key));
        break;
      default:  // numbers and booleans: their JSON text is what ParseValue reads
        out->push_back({key, simdjson::minify(v)});
        break;
    }
  }
}

bool LooksLikeJson(std::string_view text) {
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) continue;
    return c == '{';
  }
  return false;
}

}  // namespace

std::variant<ConsoleValues, std::string> ParseConsoleDocument(std::string_view text) {
  if (text.size() > kMaxDocumentBytes)
    return fmt::format("document of {} bytes is larger than {} bytes", text.size(),
                       kMaxDocumentBytes);
  std::vector<Leaf> leaves;
  std::vector<std::string> errors;
  if (LooksLikeJson(text)) {
    // simdjson first: strict JSON, and it has no trouble with tabs that YAML forbids.
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    if (auto err = parser.parse(text.data(), text.size()).get(doc)) {
      return fmt::format("invalid JSON: {}", simdjson::error_message(err));
    }
    simdjson::dom::object obj;
    if (doc.get(obj)) return std::string("expected a JSON object of console key to value");
    FlattenJson(obj, "", 0, &leaves, &errors);
  } else {
    YAML::Node root;
    try {
      root = YAML::Load(std::string(text));
    } catch (const YAML::Exception& e) {
      return fmt::format("invalid YAML: {}", e.what());
    }
    if (root.IsNull()) return ConsoleValues{};  // empty document: no values
    if (!root.IsMap()) return std::string("expected a mapping of console key to value");
    try {
      FlattenYaml(root, "", 0, &leaves, &errors);
    } catch (const YAML::Exception& e) {
      return fmt::format("invalid YAML: {}", e.what());
    }
  }

  ConsoleValues values;
  for (const Leaf& leaf : leaves) {
    auto key = config::FindByConsoleKey(leaf.key);
    if (!key) {
      errors.push_back(fmt::format("unknown key '{}'", leaf.key));
      continue;
    }
    if (!leaf.text) {
      values.erase(*key);
      continue;
    }
    auto parsed = config::ParseValue(config::Spec(*key), *leaf.text);
    if (auto* v = std::get_if<config::Value>(&parsed)) {
      values[*key] = std::move(*v);
    } else {
      errors.push_back(std::get<std::string>(parsed));
    }
  }
  if (!errors.empty()) {
    std::string msg;
    for (std::size_t i = 0; i < errors.size() && i < kMaxErrors; ++i) {
      if (i) msg += "; ";
      msg += errors[i];
    }
    if (errors.size() > kMaxErrors) msg += fmt::format("; and {} more", errors.size() - kMaxErrors);
    return msg;
  }
  return values;
}

}  // namespace infertel::console
