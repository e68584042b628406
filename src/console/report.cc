#include "console/report.h"

#include "engines/registry.h"

#include <fmt/format.h>
#include <simdjson.h>

#include "core/json.h"
#include "core/printable.h"

namespace infertel::console {
namespace {

// Why the engine of `spec` cannot change it from outside; empty when it can, and for keys of
// no engine.
std::string UnsupportedReason(const config::KeySpec& spec) {
  auto id = engines::FindEngine(spec.engine);
  return id ? engines::Profile(*id).UnsupportedKey(spec.key) : std::string();
}

// "vLLM" for "vllm": the engine as people write it; the name itself for an unknown engine.
std::string EngineDisplayName(std::string_view engine) {
  auto id = engines::FindEngine(engine);
  return std::string(id ? engines::Profile(*id).display_name() : engine);
}

// Writes one JSON object member by member.
class Obj {
 public:
  explicit Obj(std::string* out) : out_(out) { *out_ += '{'; }
  Obj& Raw(std::string_view key, std::string_view raw) {
    Key(key);
    *out_ += raw;
    return *this;
  }
  Obj& Str(std::string_view key, std::string_view value) {
    Key(key);
    AppendJsonString(out_, value);
    return *this;
  }
  Obj& StrOrNull(std::string_view key, std::string_view value) {
    return value.empty() ? Raw(key, "null") : Str(key, value);
  }
  Obj& Bool(std::string_view key, bool b) { return Raw(key, b ? "true" : "false"); }
  Obj& Int(std::string_view key, std::int64_t i) { return Raw(key, std::to_string(i)); }
  void End() { *out_ += '}'; }

 private:
  void Key(std::string_view key) {
    if (!first_) *out_ += ',';
    first_ = false;
    AppendJsonString(out_, key);
    *out_ += ':';
  }
  std::string* out_;
  bool first_ = true;
};

std::string_view TypeName(config::ValueType t) {
  switch (t) {
    case config::ValueType::kBool:
      return "bool";
    case config::ValueType::kInt:
      return "int";
    case config::ValueType::kEnum:
      return "enum";
    case config::ValueType::kList:
      return "list";
    case config::ValueType::kTable:
      return "table";
  }
  return "";
}

std::string KnobJson(const KnobState& k) {
  std::string out;
  Obj o(&out);
  o.Str("upstream", k.upstream).Str("url", k.url).Str("status", k.status);
  if (!k.reason.empty()) o.Str("reason", k.reason);
  o.Raw("original", k.original ? ValueJson(*k.original) : "null");
  if (!k.original_note.empty()) o.Str("original_note", k.original_note);
  o.Raw("applied", k.applied ? ValueJson(*k.applied) : "null");
  o.StrOrNull("error", k.error);
  o.Int("updated_unix_ms", k.updated_ms);
  o.End();
  return out;
}

std::string LayerJson(const LayerStatus& s) {
  std::string out;
  Obj o(&out);
  o.Bool("configured", s.configured);
  o.StrOrNull("origin", s.origin);
  o.Bool("ok", s.ok);
  o.StrOrNull("error", s.error);
  o.Int("keys", static_cast<std::int64_t>(s.keys));
  o.Int("last_attempt_unix_ms", s.last_attempt_ms);
  o.Int("last_ok_unix_ms", s.last_ok_ms);
  o.Int("last_change_unix_ms", s.last_change_ms);
  o.End();
  return out;
}

std::string SourceText(config::Source source, const std::optional<Layer>& layer) {
  std::string s(config::SourceName(source));
  if (source == config::Source::kConsole && layer) s += fmt::format(" ({})", LayerName(*layer));
  return s;
}

std::string ValueText(const config::Value& v) {
  return std::holds_alternative<std::monostate>(v) ? "(engine's own)" : config::FormatValue(v);
}

std::string KnobNote(const KnobState& k, std::string_view original, std::string_view applied) {
  if (k.status == "unsupported") return fmt::format("{}: unsupported: {}", k.upstream, k.reason);
  std::string note = fmt::format("{}: {}", k.upstream, k.status);
  if (!applied.empty()) note += fmt::format(" {}", applied);
  if (!original.empty()) note += fmt::format(", engine's original {}", original);
  if (!k.original_note.empty()) note += fmt::format(" ({})", k.original_note);
  if (!k.error.empty()) note += fmt::format("; error: {}", k.error);
  return note;
}

}  // namespace

std::string ValueJson(const config::Value& v) {
  struct V {
    std::string operator()(std::monostate) const { return "null"; }
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(std::int64_t i) const { return std::to_string(i); }
    std::string operator()(const std::string& s) const {
      std::string out;
      AppendJsonString(&out, s);
      return out;
    }
  };
  return std::visit(V{}, v);
}

std::string KeyJson(const KeyReport& r) {
  const KeyState& k = r.state;
  const config::KeySpec& spec = config::Spec(k.key);
  std::string out;
  Obj o(&out);
  o.Str("key", spec.console_key);
  o.Raw("value", ValueJson(k.value));
  o.Str("source", config::SourceName(k.source));
  o.Raw("layer", k.layer ? "\"" + std::string(LayerName(*k.layer)) + "\"" : "null");
  o.StrOrNull("env", spec.env_var);
  o.Str("apply", spec.apply == config::Apply::kLive ? "live" : "restart");
  o.Str("type", TypeName(spec.type));
  o.Str("accepted", config::AcceptedValues(spec));
  if (spec.default_value.empty()) {
    o.Raw("default", "null");
  } else {
    auto parsed = config::ParseValue(spec, spec.default_value);
    const auto* v = std::get_if<config::Value>(&parsed);
    o.Raw("default", v != nullptr ? ValueJson(*v) : "null");
  }
  o.Str("engine", spec.engine.empty() ? std::string_view("all") : spec.engine);
  if (spec.apply == config::Apply::kRestart) {
    o.Bool("pending_restart", k.pending_restart);
    if (k.pending_restart) {
      o.Raw("pending_value", ValueJson(k.pending_value));
      o.Str("pending_source", config::SourceName(k.pending_source));
      o.Raw("pending_layer",
            k.pending_layer ? "\"" + std::string(LayerName(*k.pending_layer)) + "\"" : "null");
    }
  }
  o.Bool("engine_knob", spec.engine_knob);
  if (spec.engine_knob) {
    if (std::string reason = UnsupportedReason(spec); !reason.empty()) o.Str("unsupported", reason);
    std::string list = "[";
    for (std::size_t i = 0; i < r.engines.size(); ++i) {
      if (i) list += ',';
      list += KnobJson(r.engines[i]);
    }
    list += ']';
    o.Raw("engines", list);
  }
  o.End();
  return out;
}

std::string StatusJson(const LayerStatuses& statuses) {
  std::string out;
  Obj o(&out);
  for (std::size_t i = 0; i < kLayerCount; ++i)
    o.Raw(LayerName(static_cast<Layer>(i)), LayerJson(statuses[i]));
  o.End();
  return out;
}

std::string ConfigJson(const std::vector<KeyReport>& reports, const LayerStatuses& statuses) {
  std::string keys = "[";
  std::vector<std::string> errors;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    if (i) keys += ',';
    keys += KeyJson(reports[i]);
    for (const auto& e : reports[i].engines) {
      if (!e.error.empty()) {
        errors.push_back(fmt::format("{} on upstream {}: {}",
                                     config::Spec(reports[i].state.key).console_key, e.upstream,
                                     e.error));
      }
    }
  }
  keys += ']';
  for (std::size_t i = 0; i < kLayerCount; ++i) {
    const auto& s = statuses[i];
    if (s.configured && !s.ok)
      errors.push_back(
          fmt::format("console {} {}: {}", LayerName(static_cast<Layer>(i)), s.origin, s.error));
  }
  std::string errs = "[";
  for (std::size_t i = 0; i < errors.size(); ++i) {
    if (i) errs += ',';
    AppendJsonString(&errs, errors[i]);
  }
  errs += ']';
  std::string out;
  Obj o(&out);
  o.Raw("keys", keys).Raw("status", StatusJson(statuses)).Raw("errors", errs);
  o.End();
  return out;
}

std::string DescribeRows(const std::vector<TextRow>& rows, const std::vector<std::string>& footer) {
  // Every cell through Printable: rows may come from another agent's answer, and errors quote
  // console documents.
  const auto p = [](std::string_view s) { return Printable(s); };
  std::string out =
      fmt::format("{:<62} {:<16} {:<16} {:<8} {}\n", "KEY", "VALUE", "SOURCE", "APPLY", "ENV");
  for (const auto& r : rows) {
    out += fmt::format("{:<62} {:<16} {:<16} {:<8} {}\n", p(r.key), p(r.value), p(r.source),
                       p(r.apply), r.env.empty() ? "-" : p(r.env));
    for (const auto& n : r.notes) out += fmt::format("    {}\n", p(n));
  }
  for (const auto& f : footer) out += p(f) + "\n";
  return out;
}

std::vector<TextRow> RowsFromReports(const std::vector<KeyReport>& reports) {
  std::vector<TextRow> rows;
  for (const auto& r : reports) {
    const auto& k = r.state;
    const auto& spec = config::Spec(k.key);
    TextRow row;
    row.key = spec.console_key;
    row.value = std::holds_alternative<std::monostate>(k.value) && !spec.engine_knob
                    ? "(unset)"
                    : ValueText(k.value);
    row.source = SourceText(k.source, k.layer);
    row.apply = spec.apply == config::Apply::kLive ? "live" : "restart";
    row.env = spec.env_var;
    if (k.pending_restart) {
      row.notes.push_back(fmt::format("pending restart: {} from {}", ValueText(k.pending_value),
                                      SourceText(k.pending_source, k.pending_layer)));
    }
    if (spec.engine_knob) {
      if (auto reason = UnsupportedReason(spec); !reason.empty() && r.engines.empty())
        row.notes.push_back(
            fmt::format("unsupported for {}: {}", EngineDisplayName(spec.engine), reason));
      for (const auto& e : r.engines) {
        row.notes.push_back(KnobNote(e, e.original ? ValueText(*e.original) : "",
                                     e.applied ? ValueText(*e.applied) : ""));
      }
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<std::string> StatusLines(const LayerStatuses& statuses) {
  std::vector<std::string> lines;
  for (std::size_t i = 0; i < kLayerCount; ++i) {
    const auto& s = statuses[i];
    auto layer = static_cast<Layer>(i);
    if (!s.configured || (layer == Layer::kApi && s.keys == 0)) continue;
    if (s.ok) {
      lines.push_back(
          fmt::format("console {} {}: ok, {} key(s)", LayerName(layer), s.origin, s.keys));
    } else {
      lines.push_back(fmt::format("console {} {}: ERROR {} (keeping {} last good key(s))",
                                  LayerName(layer), s.origin, s.error, s.keys));
    }
  }
  return lines;
}

namespace {

std::string ElementText(simdjson::dom::element e) {
  std::string_view s;
  if (!e.get(s)) return std::string(s);
  if (e.is_null()) return "(engine's own)";
  return simdjson::minify(e);
}

std::string Field(simdjson::dom::object o, std::string_view key) {
  simdjson::dom::element e;
  if (o[key].get(e) || e.is_null()) return "";
  return ElementText(e);
}

}  // namespace

bool RowsFromConfigJson(std::string_view json, std::vector<TextRow>* rows,
                        std::vector<std::string>* footer, std::string* error) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  simdjson::dom::array keys;
  if (parser.parse(json.data(), json.size()).get(doc) || doc["keys"].get(keys)) {
    *error = "not a GET /api/config answer";
    return false;
  }
  for (simdjson::dom::element item : keys) {
    simdjson::dom::object o;
    if (item.get(o)) continue;
    TextRow row;
    row.key = Field(o, "key");
    simdjson::dom::element v;
    row.value = o["value"].get(v) ? "" : ElementText(v);
    bool knob = false;
    if (!o["value"].get(v) && v.is_null() && (o["engine_knob"].get(knob) || !knob))
      row.value = "(unset)";  // no engine's value stands behind a key that is not a knob
    row.source = Field(o, "source");
    if (std::string layer = Field(o, "layer"); !layer.empty()) row.source += " (" + layer + ")";
    row.apply = Field(o, "apply");
    row.env = Field(o, "env");
    bool pending = false;
    if (!o["pending_restart"].get(pending) && pending) {
      std::string src = Field(o, "pending_source");
      if (std::string layer = Field(o, "pending_layer"); !layer.empty()) src += " (" + layer + ")";
      simdjson::dom::element pv;
      row.notes.push_back(fmt::format("pending restart: {} from {}",
                                      o["pending_value"].get(pv) ? "" : ElementText(pv), src));
    }
    simdjson::dom::array engines;
    if (!o["engines"].get(engines)) {
      std::string unsupported = Field(o, "unsupported");
      if (!unsupported.empty() && engines.size() == 0)
        row.notes.push_back(fmt::format("unsupported for {}: {}",
                                        EngineDisplayName(Field(o, "engine")), unsupported));
      for (simdjson::dom::element e : engines) {
        simdjson::dom::object eo;
        if (e.get(eo)) continue;
        KnobState k;
        k.upstream = Field(eo, "upstream");
        k.status = Field(eo, "status");
        k.reason = Field(eo, "reason");
        k.original_note = Field(eo, "original_note");
        k.error = Field(eo, "error");
        row.notes.push_back(KnobNote(k, Field(eo, "original"), Field(eo, "applied")));
      }
    }
    rows->push_back(std::move(row));
  }
  simdjson::dom::object status;
  if (!doc["status"].get(status)) {
    for (auto field : status) {
      simdjson::dom::object s;
      if (field.value.get(s)) continue;
      bool configured = false, ok = true;
      std::int64_t nkeys = 0;
      if (s["configured"].get(configured)) configured = false;
      if (s["ok"].get(ok)) ok = true;
      if (s["keys"].get(nkeys)) nkeys = 0;
      if (!configured || (field.key == "api" && nkeys == 0)) continue;
      if (ok) {
        footer->push_back(
            fmt::format("console {} {}: ok, {} key(s)", field.key, Field(s, "origin"), nkeys));
      } else {
        footer->push_back(fmt::format("console {} {}: ERROR {} (keeping {} last good key(s))",
                                      field.key, Field(s, "origin"), Field(s, "error"), nkeys));
      }
    }
  }
  return true;
}

}  // namespace infertel::console
