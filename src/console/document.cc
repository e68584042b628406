#include "console/document.h"

#include <fmt/format.h>
#include <simdjson.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <charconv>
#include <optional>
#include <sstream>
#include <vector>

#include "core/json.h"
#include "core/printable.h"

namespace infertel::console {
namespace {

// One leaf of the document: its dotted key and its scalar text (nullopt for null).
struct Leaf {
  std::string key;
  std::optional<std::string> text;
};

// What flattening a document gives: its leaves, the messages of what it rejects, and the
// nodes it has visited (a bound of its own for JSON, which has no aliases to check first).
struct Flat {
  std::vector<Leaf> leaves;
  std::vector<std::string> errors;
  std::size_t nodes = 0;
};

constexpr std::size_t kMaxErrors = 8;
constexpr std::size_t kMaxQuotedBytes = 64;  // of a key or value quoted in a message

std::string Join(const std::string& prefix, std::string_view key) {
  return prefix.empty() ? std::string(key) : prefix + "." + std::string(key);
}

DocumentError TooDeep() {
  return {Refusal::kTooDeep, fmt::format("nested deeper than {} levels", kMaxDocumentDepth)};
}
DocumentError TooManyNodes() {
  return {Refusal::kTooManyNodes,
          fmt::format("more than {} nodes with aliases expanded", kMaxDocumentNodes)};
}

// Thrown out of yaml-cpp's parser by YamlBounds.
struct Refused {
  DocumentError error;
};

// Reads the events of the first YAML document (the one YAML::Load builds) without building
// it, and refuses the document as soon as it nests too deeply or names too many nodes once
// its aliases are expanded. yaml-cpp shares an aliased node instead of copying it, so loading
// a "billion laughs" is cheap; walking it, as flattening does, visits every alias's nodes
// again. Each anchor's expanded size is remembered, so an alias costs its real size here.
class YamlBounds : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t anchor) override { Leaf(anchor); }
  void OnAlias(const YAML::Mark&, YAML::anchor_t anchor) override {
    // An alias inside the node it names makes a cycle: a document without end.
    for (const Open_& o : open_)
      if (o.anchor == anchor && anchor != YAML::NullAnchor)
        throw Refused{{Refusal::kTooManyNodes, "an alias inside the node it names (a cycle)"}};
    Add(anchor < sizes_.size() ? sizes_[anchor] : 1);
  }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t anchor,
                const std::string&) override {
    Leaf(anchor);
  }
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Open(anchor);
  }
  void OnSequenceEnd() override { Close(); }
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Open(anchor);
  }
  void OnMapEnd() override { Close(); }

 private:
  struct Open_ {
    YAML::anchor_t anchor;
    std::uint64_t first;  // nodes_ before this collection
  };
  void Add(std::uint64_t n) {
    nodes_ += n;
    if (nodes_ > kMaxDocumentNodes) throw Refused{TooManyNodes()};
  }
  void Leaf(YAML::anchor_t anchor) {
    Add(1);
    Remember(anchor, 1);
  }
  void Open(YAML::anchor_t anchor) {
    // The top mapping and kMaxDocumentDepth levels inside it, as FlattenYaml walks them.
    if (open_.size() > static_cast<std::size_t>(kMaxDocumentDepth)) throw Refused{TooDeep()};
    open_.push_back({anchor, nodes_});
    Add(1);
  }
  void Close() {
    if (open_.empty()) return;
    const Open_ o = open_.back();
    open_.pop_back();
    Remember(o.anchor, nodes_ - o.first);
  }
  void Remember(YAML::anchor_t anchor, std::uint64_t size) {
    if (anchor == YAML::NullAnchor) return;
    // Anchor numbers count up from 1, one per anchored node: bounded by the node count.
    if (anchor > kMaxDocumentNodes) throw Refused{TooManyNodes()};
    if (anchor >= sizes_.size()) sizes_.resize(anchor + 1, 1);
    sizes_[anchor] = size;
  }

  std::uint64_t nodes_ = 0;
  std::vector<Open_> open_;
  std::vector<std::uint64_t> sizes_;  // by anchor: nodes it stands for
};

// Whether `key` names a table key (config::ValueType::kTable), whose value is the whole mapping
// below it rather than more keys.
bool IsTableKey(std::string_view key) {
  const auto k = config::FindByConsoleKey(key);
  return k && config::Spec(*k).type == config::ValueType::kTable;
}

// A YAML node as JSON text, for a table key's value (config::ParseValue checks it): a scalar
// that reads as an integer is a number, any other scalar a string.
void YamlAsJson(const YAML::Node& node, std::string* out) {
  if (node.IsMap()) {
    *out += '{';
    bool first = true;
    for (const auto& kv : node) {
      if (!first) *out += ',';
      first = false;
      AppendJsonString(out, kv.first.IsScalar() ? kv.first.Scalar() : std::string());
      *out += ':';
      YamlAsJson(kv.second, out);
    }
    *out += '}';
  } else if (node.IsSequence()) {
    *out += '[';
    for (std::size_t i = 0; i < node.size(); ++i) {
      if (i) *out += ',';
      YamlAsJson(node[i], out);
    }
    *out += ']';
  } else if (node.IsScalar()) {
    const std::string& v = node.Scalar();
    std::int64_t n = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec == std::errc() && p == v.data() + v.size() && !v.empty())
      *out += std::to_string(n);
    else
      AppendJsonString(out, v);
  } else {
    *out += "null";
  }
}

void FlattenYaml(const YAML::Node& node, const std::string& prefix, int depth, Flat* out) {
  if (depth > kMaxDocumentDepth) {
    out->errors.push_back(fmt::format("{}: nested too deeply", Excerpt(prefix, kMaxQuotedBytes)));
    return;
  }
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) {
      out->errors.push_back(fmt::format(
          "{}: keys must be strings", prefix.empty() ? "(top)" : Excerpt(prefix, kMaxQuotedBytes)));
      continue;
    }
    std::string key = Join(prefix, kv.first.Scalar());
    const YAML::Node& v = kv.second;
    if (v.IsMap() && IsTableKey(key)) {
      std::string json;
      YamlAsJson(v, &json);
      out->leaves.push_back({key, std::move(json)});
    } else if (v.IsMap()) {
      FlattenYaml(v, key, depth + 1, out);
    } else if (v.IsNull()) {
      out->leaves.push_back({key, std::nullopt});
    } else if (v.IsScalar()) {
      out->leaves.push_back({key, v.Scalar()});
    } else {
      out->errors.push_back(
          fmt::format("{}: expected a single value, got a list", Excerpt(key, kMaxQuotedBytes)));
    }
  }
}

void FlattenJson(simdjson::dom::object obj, const std::string& prefix, int depth, Flat* out) {
  if (depth > kMaxDocumentDepth) {
    out->errors.push_back(fmt::format("{}: nested too deeply", Excerpt(prefix, kMaxQuotedBytes)));
    return;
  }
  for (auto field : obj) {
    if (++out->nodes > kMaxDocumentNodes) return;
    std::string key = Join(prefix, field.key);
    simdjson::dom::element v = field.value;
    switch (v.type()) {
      case simdjson::dom::element_type::OBJECT:
        if (IsTableKey(key)) {
          out->leaves.push_back({key, simdjson::minify(v)});
          break;
        }
        FlattenJson(v.get_object().value_unsafe(), key, depth + 1, out);
        break;
      case simdjson::dom::element_type::NULL_VALUE:
        out->leaves.push_back({key, std::nullopt});
        break;
      case simdjson::dom::element_type::STRING:
        out->leaves.push_back({key, std::string(v.get_string().value_unsafe())});
        break;
      case simdjson::dom::element_type::ARRAY:
        out->errors.push_back(
            fmt::format("{}: expected a single value, got a list", Excerpt(key, kMaxQuotedBytes)));
        break;
      default:  // numbers and booleans: their JSON text is what ParseValue reads
        out->leaves.push_back({key, simdjson::minify(v)});
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

// simdjson first: strict JSON, and it has no trouble with tabs that YAML forbids.
std::optional<DocumentError> ReadJson(std::string_view text, Flat* flat) {
  simdjson::dom::parser parser;
  // Deep enough for the top object and kMaxDocumentDepth levels inside it, and a value.
  if (parser.allocate(text.size(), kMaxDocumentDepth + 2))
    return DocumentError{Refusal::kTooLarge, "cannot allocate the JSON parser"};
  simdjson::dom::element doc;
  if (auto err = parser.parse(text.data(), text.size()).get(doc)) {
    if (err == simdjson::DEPTH_ERROR) return TooDeep();
    return DocumentError{Refusal::kSyntax,
                         fmt::format("invalid JSON: {}", simdjson::error_message(err))};
  }
  simdjson::dom::object obj;
  if (doc.get(obj))
    return DocumentError{Refusal::kSyntax, "expected a JSON object of console key to value"};
  FlattenJson(obj, "", 0, flat);
  if (flat->nodes > kMaxDocumentNodes) return TooManyNodes();
  return std::nullopt;
}

std::optional<DocumentError> ReadYaml(std::string_view text, Flat* flat) {
  const std::string copy(text);
  try {
    std::istringstream in(copy);
    YAML::Parser parser(in);
    YamlBounds bounds;
    parser.HandleNextDocument(bounds);
  } catch (const Refused& r) {
    return r.error;
  } catch (const YAML::Exception& e) {
    return DocumentError{Refusal::kSyntax, fmt::format("invalid YAML: {}", Printable(e.what()))};
  }
  try {
    YAML::Node root = YAML::Load(copy);
    if (root.IsNull()) return std::nullopt;  // empty document: no values
    if (!root.IsMap())
      return DocumentError{Refusal::kSyntax, "expected a mapping of console key to value"};
    FlattenYaml(root, "", 0, flat);
  } catch (const YAML::Exception& e) {
    return DocumentError{Refusal::kSyntax, fmt::format("invalid YAML: {}", Printable(e.what()))};
  }
  return std::nullopt;
}

// The leaves as typed values, or every problem found in one message.
std::variant<ConsoleValues, DocumentError> TypeLeaves(Flat flat) {
  ConsoleValues values;
  std::vector<std::string>& errors = flat.errors;
  for (const Leaf& leaf : flat.leaves) {
    auto key = config::FindByConsoleKey(leaf.key);
    if (!key) {
      errors.push_back(fmt::format("unknown key '{}'", Excerpt(leaf.key, kMaxQuotedBytes)));
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
  if (errors.empty()) return values;
  std::string msg;
  for (std::size_t i = 0; i < errors.size() && i < kMaxErrors; ++i) {
    if (i) msg += "; ";
    msg += errors[i];
  }
  if (errors.size() > kMaxErrors) msg += fmt::format("; and {} more", errors.size() - kMaxErrors);
  return DocumentError{Refusal::kInvalid, std::move(msg)};
}

}  // namespace

std::string_view RefusalName(Refusal reason) {
  switch (reason) {
    case Refusal::kTooLarge:
      return "too_large";
    case Refusal::kTooDeep:
      return "too_deep";
    case Refusal::kTooManyNodes:
      return "too_many_nodes";
    case Refusal::kSyntax:
      return "syntax";
    case Refusal::kInvalid:
      return "invalid";
    case Refusal::kNotRegularFile:
      return "not_regular_file";
  }
  return "unknown";
}

std::variant<ConsoleValues, DocumentError> ParseConsoleDocument(std::string_view text) {
  if (text.size() > kMaxDocumentBytes)
    return DocumentError{Refusal::kTooLarge,
                         fmt::format("document of {} bytes is larger than {} bytes", text.size(),
                                     kMaxDocumentBytes)};
  Flat flat;
  auto error = LooksLikeJson(text) ? ReadJson(text, &flat) : ReadYaml(text, &flat);
  if (error) return *std::move(error);
  return TypeLeaves(std::move(flat));
}

}  // namespace infertel::console
