#pragma once
// The console's admin API, served on the agent's admin address:
//
//   GET    /api/config          every key: value, source, layer, env, apply, engine knobs
//   GET    /api/config/status   the console sources' health
//   GET    /api/config/{key}    one key
//   PUT    /api/config/{key}    body {"value": …}: sets the key in the API layer
//   DELETE /api/config/{key}    removes the API layer's value
//
// A bad value is a 400 naming the key and the accepted values, and changes nothing. With a
// token, every request needs "Authorization: Bearer <token>" (401 otherwise).
//
// Thread-safety: Handle may run on several threads at once.

#include <string>
#include <vector>

#include "console/engine_knobs.h"
#include "console/layered_config.h"
#include "console/report.h"
#include "http/simple_server.h"

namespace infertel::console {

inline constexpr std::string_view kApiPrefix = "/api/config";

class ConfigApi {
 public:
  // `knobs` may be null (no engine knobs to report). Neither is owned; both outlive this.
  ConfigApi(LayeredConfig* config, KnobController* knobs, std::string token);

  http::StringResponse Handle(const http::StringRequest& req) const;

 private:
  bool Authorized(const http::StringRequest& req) const;

  LayeredConfig* config_;
  KnobController* knobs_;
  std::string token_;
};

// Every key with its engine-knob states, for GET /api/config and `infertel config`.
std::vector<KeyReport> BuildReports(const LayeredConfig& config, const KnobController* knobs);

}  // namespace infertel::console
