#pragma once
// Who a request is for: the tenant, named by a rule the operator configures
// (INFERTEL_TENANT_FROM, console key infertel.tenant.from), an ordered list of sources of which
// the first that gives a value wins:
//
//   header:NAME    the request header NAME (e.g. header:x-tenant-id)
//   user           the OpenAI `user` field of the request body
//   api_key_hash   a fingerprint of the API key (Authorization: Bearer …): "key-" and the first
//                  12 hex digits of its SHA-256, so that the key itself is never recorded
//
// The tenants are bounded (INFERTEL_TENANT_MAX, infertel.tenant.max): past the bound, and for a
// value too long or not printable, a request's tenant is `other`, counted by reason. A tenant
// names series and spans, and outside input chooses it: the bound keeps a client from creating
// series at will.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

namespace infertel::analytics {

enum class TenantSource : std::uint8_t { kHeader, kUser, kApiKeyHash };

// One parsed INFERTEL_TENANT_FROM value.
struct TenantRule {
  struct Step {
    TenantSource source = TenantSource::kUser;
    std::string header;  // kHeader: the header's name, lower case
  };
  std::vector<Step> steps;
  bool empty() const { return steps.empty(); }
};

// The rule in `text` (the key's canonical value: config/settings.cc checks its grammar), or an
// empty rule for an empty or unreadable text.
TenantRule ParseTenantRule(std::string_view text);

// What the sources read from one request.
struct TenantInputs {
  // The request's header `name` (lower case), nullopt when absent.
  std::function<std::optional<std::string_view>(std::string_view name)> header;
  std::optional<std::string_view> user;           // the body's `user`
  std::optional<std::string_view> authorization;  // the Authorization header
};

// The first value the rule's sources give (raw, not yet bounded), or nullopt.
std::optional<std::string> ResolveTenant(const TenantRule& rule, const TenantInputs& in);

// "key-" + the first 12 hex digits of SHA-256 of the API key in an Authorization header
// ("Bearer KEY"; the whole value when it has no scheme); nullopt for an empty key.
std::optional<std::string> ApiKeyFingerprint(std::string_view authorization);

// The value a tenant past the bound takes.
inline constexpr std::string_view kTenantOther = "other";
// Longer tenant values are folded into `other` whatever the room.
inline constexpr std::size_t kMaxTenantBytes = 128;

struct TenantFoldStats {
  std::atomic<std::uint64_t> cap{0};          // no room left among the tenants
  std::atomic<std::uint64_t> unprintable{0};  // too long, or bytes that are not printable
};

// The tenants seen so far, first come, up to a bound that may change while running (a live
// key): a tenant keeps its own value for the agent's lifetime once admitted, so that its series
// never flip to `other`; lowering the bound only stops new admissions.
// Thread-safety: thread-safe; a known tenant costs a shared lock.
class TenantBound {
 public:
  // The tenant `value` stands as: itself, or kTenantOther (counted).
  std::string Admit(std::string_view value, std::size_t cap);
  std::size_t admitted() const;
  const TenantFoldStats& folded() const { return folded_; }

 private:
  mutable std::shared_mutex mu_;
  std::set<std::string, std::less<>> admitted_;  // guarded by mu_
  TenantFoldStats folded_;
};

}  // namespace infertel::analytics
