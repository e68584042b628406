#pragma once
// The console's admin API, served on the agent's admin address:
//
//   GET    /api/config          every key: value, source, layer, env, apply, engine knobs
//   GET    /api/config/status   the console sources' health
//   GET    /api/config/{key}    one key
//   PUT    /api/config/{key}    body {"value": …}: sets the key in the API layer
//   DELETE /api/config/{key}    removes the API layer's value
//
// A bad value is a 400 naming the key and the accepted values, and changes nothing; the value
// is quoted cut to its first 64 bytes. With a token, every request needs exactly one
// "Authorization: Bearer <token>" (401 without it or with another, 400 with two or more).
//
// Thread-safety: Handle may run on several threads at once.

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "console/api_body.h"
#include "console/engine_knobs.h"
#include "console/layered_config.h"
#include "console/report.h"
#include "core/stats.h"
#include "http/simple_server.h"

namespace infertel::console {

inline constexpr std::string_view kApiPrefix = "/api/config";

// Why the API refused a request; a label value of infertel_admin_refused_requests_total (the
// admin server itself adds the reasons of HTTP framing: http::ServerStats).
enum class ApiRefusal : std::uint8_t {
  kUnauthorized,            // 401
  kDuplicateAuthorization,  // 400: more than one Authorization header
  kInvalidValue,            // 400: a PUT body that is not {"value": <accepted value>}
  kUnknownKey,              // 404
};
inline constexpr std::size_t kApiRefusalCount = 4;

struct ApiStats {
  std::array<std::atomic<std::uint64_t>, kApiRefusalCount> refused{};
  void Register(StatsRegistry* registry) const;
};

class ConfigApi {
 public:
  // `knobs` may be null (no engine knobs to report). Neither is owned; both outlive this.
  ConfigApi(LayeredConfig* config, KnobController* knobs, std::string token);

  http::StringResponse Handle(const http::StringRequest& req) const;
  const ApiStats& stats() const { return stats_; }

 private:
  bool Authorized(const http::StringRequest& req) const;
  http::StringResponse Refuse(ApiRefusal reason, http::StringResponse res) const;

  mutable ApiStats stats_;
  LayeredConfig* config_;
  KnobController* knobs_;
  std::string token_;
};

// Every key with its engine-knob states, for GET /api/config and `infertel config`.
std::vector<KeyReport> BuildReports(const LayeredConfig& config, const KnobController* knobs);

}  // namespace infertel::console
