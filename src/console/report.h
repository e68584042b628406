#pragma once
// What the console reports: the JSON of GET /api/config (and /api/config/status,
// /api/config/{key}) and the text `infertel config` prints, from a running agent's JSON or
// from a local resolution.

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "console/engine_knobs.h"
#include "console/layered_config.h"

namespace infertel::console {

struct KeyReport {
  KeyState state;
  std::vector<KnobState> engines;  // engine knobs: one entry per upstream of the key's engine
};

using LayerStatuses = std::array<LayerStatus, kLayerCount>;

// A config::Value as JSON: true/false, a number, a string, or null when unset.
std::string ValueJson(const config::Value& v);

// {"key":..,"value":..,"source":..,"layer":..,"env":..,"apply":..,...}
std::string KeyJson(const KeyReport& report);
// {"file":{..},"url":{..},"api":{..}}
std::string StatusJson(const LayerStatuses& statuses);
// {"keys":[..],"status":{..},"errors":[..]}: errors lists every console source and engine knob
// currently failing.
std::string ConfigJson(const std::vector<KeyReport>& reports, const LayerStatuses& statuses);

// One printed line per key, and indented notes under it.
struct TextRow {
  std::string key, value, source, apply, env;
  std::vector<std::string> notes;
};
std::string DescribeRows(const std::vector<TextRow>& rows, const std::vector<std::string>& footer);
std::vector<TextRow> RowsFromReports(const std::vector<KeyReport>& reports);
std::vector<std::string> StatusLines(const LayerStatuses& statuses);
// Reads ConfigJson output (from GET /api/config); false and *error when it is not that.
bool RowsFromConfigJson(std::string_view json, std::vector<TextRow>* rows,
                        std::vector<std::string>* footer, std::string* error);

}  // namespace infertel::console
