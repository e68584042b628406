#pragma once
// The console, wired: the layered configuration, its sources (a watched file, a polled URL),
// the admin API and the engine knobs of every upstream. The agent command builds one before
// the Agent (whose starting settings come from it) and starts it once the Agent runs.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "config/settings.h"
#include "console/admin_api.h"
#include "console/engine_knobs.h"
#include "console/layered_config.h"
#include "console/sources.h"
#include "core/engine_id.h"
#include "http/simple_server.h"
#include "http/url.h"

namespace infertel::console {

struct ConsoleOptions {
  std::string file;  // --console-file: YAML or JSON, watched
  std::string url;   // --console-url: polled with If-None-Match
  std::chrono::milliseconds url_interval{5000};
  std::chrono::milliseconds file_interval{500};
  std::chrono::milliseconds knob_retry{2000};
  std::string admin_token;  // required on /api/config when set
};

// An engine the console may set knobs on.
struct KnobUpstream {
  std::string name;
  EngineId engine;
  http::Url url;
};

class ConsoleService {
 public:
  // Resolves the environment and reads the console file: a bad environment value, or a
  // console file that is missing or invalid, is an error (nullptr and *error), because the
  // agent should not start on a configuration it cannot read. The console URL is polled once;
  // failing that is only reported in the status. Engine knobs are prepared for every upstream
  // whose engine's plugin switch (C1) is on.
  static std::unique_ptr<ConsoleService> Create(ConsoleOptions options,
                                                const config::EnvLookup& env,
                                                const std::vector<KnobUpstream>& upstreams,
                                                std::string* error);
  ~ConsoleService();
  ConsoleService(const ConsoleService&) = delete;
  ConsoleService& operator=(const ConsoleService&) = delete;

  // The settings to start the agent with.
  config::Settings InitialSettings() const { return config_.Desired(); }
  // The /api/config handler for Agent::AddAdminRoute(kApiPrefix, ...).
  http::Handler AdminHandler();

  // Publishes every change to `store` from now on; starts the watchers and applies engine
  // knobs.
  void Start(std::shared_ptr<config::ConfigStore> store);
  void Stop();
  // Re-reads the console file and polls the console URL now, on their own threads (SIGHUP);
  // returns at once. After Start().
  void Reload();

  // Registers the console's counters (refused documents, refused admin API requests).
  void RegisterStats(StatsRegistry* registry) const;

  LayeredConfig& config() { return config_; }
  KnobController& knobs() { return *knobs_; }

 private:
  ConsoleService(ConsoleOptions options, const config::EnvLookup& env,
                 std::vector<std::string>* env_errors);

  ConsoleOptions options_;
  ConsoleStats stats_;
  LayeredConfig config_;
  std::unique_ptr<FileSource> file_;
  std::unique_ptr<UrlSource> url_;
  std::unique_ptr<KnobController> knobs_;
  std::unique_ptr<ConfigApi> api_;
};

}  // namespace infertel::console
