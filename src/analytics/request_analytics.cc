#include "analytics/request_analytics.h"

namespace infertel::analytics {

std::shared_ptr<const RequestAnalytics::Snapshot> RequestAnalytics::Parsed(
    const SettingsPtr& settings) const {
  auto snap = snapshot_.load(std::memory_order_acquire);
  if (snap && snap->settings == settings) return snap;
  auto fresh = std::make_shared<Snapshot>();
  fresh->settings = settings;
  fresh->rule = ParseTenantRule(settings->GetString(config::Key::kTenantFrom));
  fresh->tenant_cap = static_cast<std::size_t>(settings->GetInt(config::Key::kTenantMax));
  fresh->policy = SloPolicy(*settings);
  snapshot_.store(fresh, std::memory_order_release);
  return fresh;
}

bool RequestAnalytics::HasTenantRule(const SettingsPtr& settings) const {
  return !Parsed(settings)->rule.empty();
}

std::string RequestAnalytics::TenantOf(const SettingsPtr& settings, const TenantInputs& in) {
  const auto snap = Parsed(settings);
  if (snap->rule.empty()) return {};
  auto raw = ResolveTenant(snap->rule, in);
  if (!raw) return {};
  return tenants_.Admit(*raw, snap->tenant_cap);
}

openai::SloVerdict RequestAnalytics::Judge(const SettingsPtr& settings,
                                           const openai::Exchange& ex) const {
  const auto snap = Parsed(settings);
  if (snap->policy.empty()) return {};
  return analytics::Judge(ex, snap->policy.For(openai::ModelOf(ex)));
}

void RequestAnalytics::Register(StatsRegistry* r) const {
  using T = StatsRegistry::Type;
  const char* help =
      "Requests whose tenant was recorded as `other`: past INFERTEL_TENANT_MAX (cap), or a "
      "value too long or not printable (value)";
  r->Add("infertel_tenants_folded", help, T::kCounter, R"(reason="cap")", &tenants_.folded().cap);
  r->Add("infertel_tenants_folded", help, T::kCounter, R"(reason="value")",
         &tenants_.folded().unprintable);
  r->AddFn("infertel_tenants", "Tenants admitted under their own name", T::kGauge, "",
           [this] { return static_cast<double>(tenants_.admitted()); });
}

}  // namespace infertel::analytics
