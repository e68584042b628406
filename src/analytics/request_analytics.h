#pragma once
// What the gateway asks of analytics for each request: its tenant when it arrives and its
// verdict against the latency objectives when it ends. The rule, the bound and the objectives
// are read once per settings snapshot (a live change publishes a new one), not per request.
//
// Thread-safety: thread-safe; per request one atomic load of the parsed snapshot, and for the
// tenant a shared lock on the bound.

#include <atomic>
#include <memory>
#include <string>

#include "analytics/slo.h"
#include "analytics/tenant.h"
#include "config/settings.h"
#include "core/stats.h"
#include "openai/exchange.h"

namespace infertel::analytics {

class RequestAnalytics {
 public:
  using SettingsPtr = std::shared_ptr<const config::Settings>;

  // Whether `settings` configure a tenant rule (when not, the gateway reads nothing for it).
  bool HasTenantRule(const SettingsPtr& settings) const;
  // The request's tenant under `settings`, bounded (kTenantOther past INFERTEL_TENANT_MAX); ""
  // when no rule is configured or no source gave a value.
  std::string TenantOf(const SettingsPtr& settings, const TenantInputs& in);
  // The exchange's verdict against the objectives of its model under `settings` (slo.h).
  openai::SloVerdict Judge(const SettingsPtr& settings, const openai::Exchange& ex) const;

  const TenantBound& tenants() const { return tenants_; }
  // infertel_tenants_folded_total{reason} and infertel_tenants gauge.
  void Register(StatsRegistry* registry) const;

 private:
  // What one settings snapshot says, parsed; it holds the snapshot, so that a new one is never
  // taken for it.
  struct Snapshot {
    SettingsPtr settings;
    TenantRule rule;
    std::size_t tenant_cap = 100;
    SloPolicy policy;
  };
  // The parsed form of `settings`, made again when they are not the last ones parsed (two
  // threads may both make it after a change: the same result, one kept).
  std::shared_ptr<const Snapshot> Parsed(const SettingsPtr& settings) const;

  mutable std::atomic<std::shared_ptr<const Snapshot>> snapshot_;
  TenantBound tenants_;
};

}  // namespace infertel::analytics
