#include "analytics/tenant.h"

#include <openssl/evp.h>

#include <array>
#include <cctype>
#include <mutex>

namespace infertel::analytics {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool Printable(std::string_view s) {
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return false;
  return true;
}

constexpr std::string_view kHeaderPrefix = "header:";

}  // namespace

TenantRule ParseTenantRule(std::string_view text) {
  TenantRule rule;
  while (!text.empty()) {
    const auto comma = text.find(',');
    const std::string item = Lower(Trim(text.substr(0, comma)));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (item == "user") {
      rule.steps.push_back({TenantSource::kUser, {}});
    } else if (item == "api_key_hash") {
      rule.steps.push_back({TenantSource::kApiKeyHash, {}});
    } else if (item.starts_with(kHeaderPrefix) && item.size() > kHeaderPrefix.size()) {
      rule.steps.push_back(
          {TenantSource::kHeader, std::string(Trim(item.substr(kHeaderPrefix.size())))});
    }
  }
  return rule;
}

std::optional<std::string> ApiKeyFingerprint(std::string_view authorization) {
  std::string_view key = Trim(authorization);
  if (const auto space = key.find(' '); space != std::string_view::npos)
    key = Trim(key.substr(space + 1));                             // "Bearer KEY" (any scheme)
  if (key.empty() || Lower(key) == "bearer") return std::nullopt;  // a scheme without a key
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  if (EVP_Digest(key.data(), key.size(), digest.data(), &size, EVP_sha256(), nullptr) != 1)
    return std::nullopt;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "key-";
  for (int i = 0; i < 6; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 0xf];
  }
  return out;
}

std::optional<std::string> ResolveTenant(const TenantRule& rule, const TenantInputs& in) {
  for (const TenantRule::Step& step : rule.steps) {
    std::optional<std::string_view> v;
    switch (step.source) {
      case TenantSource::kHeader:
        if (in.header) v = in.header(step.header);
        break;
      case TenantSource::kUser:
        v = in.user;
        break;
      case TenantSource::kApiKeyHash:
        if (in.authorization) {
          if (auto fp = ApiKeyFingerprint(*in.authorization)) return fp;
        }
        break;
    }
    if (v && !Trim(*v).empty()) return std::string(Trim(*v));
  }
  return std::nullopt;
}

std::string TenantBound::Admit(std::string_view value, std::size_t cap) {
  if (value.size() > kMaxTenantBytes || !Printable(value)) {
    folded_.unprintable.fetch_add(1, std::memory_order_relaxed);
    return std::string(kTenantOther);
  }
  {
    std::shared_lock lock(mu_);
    if (admitted_.contains(value)) return std::string(value);
  }
  std::unique_lock lock(mu_);
  if (admitted_.contains(value)) return std::string(value);
  if (admitted_.size() >= cap) {
    folded_.cap.fetch_add(1, std::memory_order_relaxed);
    return std::string(kTenantOther);
  }
  admitted_.emplace(value);
  return std::string(value);
}

std::size_t TenantBound::admitted() const {
  std::shared_lock lock(mu_);
  return admitted_.size();
}

}  // namespace infertel::analytics
