#pragma once
// The web UI's routes on an agent's admin address (src/ui): its pages under /ui/, and the
// store's JSON API under /api/v1 with the agent's overview series and its console's config API.
// Shared by the agent, launch and the demo, which all serve it.

#include <string>

#include "app/agent.h"
#include "http/simple_server.h"

namespace infertel {

// Before agent.Start(). `token`: the admin token ("" : none); `config_api`: the console's
// handler of /api/config.
void AddUiRoutes(Agent& agent, const std::string& store_path, const std::string& token,
                 http::Handler config_api);

}  // namespace infertel
