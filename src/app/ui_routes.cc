#include "app/ui_routes.h"

#include <memory>
#include <utility>

#include "console/admin_api.h"
#include "metrics/service.h"
#include "ui/api_v1.h"
#include "ui/static_assets.h"

namespace infertel {

void AddUiRoutes(Agent& agent, const std::string& store_path, const std::string& token,
                 http::Handler config_api) {
  ui::AgentHooks hooks;
  hooks.overview = [&agent](std::int64_t since_ms) {
    metrics::MetricsService* m = agent.metrics();
    return m != nullptr ? m->OverviewJson(since_ms) : std::string();
  };
  hooks.config = [config_api = std::move(config_api)](const http::StringRequest& req,
                                                      std::string_view rest) {
    // The console's API answers under its own address.
    http::StringRequest forwarded = req;
    forwarded.target(std::string(console::kApiPrefix) + std::string(rest));
    return config_api(forwarded);
  };
  auto api = std::make_shared<ui::ApiV1>(store_path, token, std::move(hooks));
  agent.AddAdminRoute(std::string(ui::kApiV1Prefix),
                      [api](const http::StringRequest& req) { return api->Handle(req); });
  // The pages (ui/static_assets.h) hold no data: served without the token.
  agent.AddAdminRoute(std::string(ui::kUiPrefix), ui::ServeUi);
}

}  // namespace infertel
