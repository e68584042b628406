#include "analytics/tenant.h"

#include <gtest/gtest.h>

#include <map>
#include <thread>
#include <vector>

namespace infertel::analytics {
namespace {

TenantInputs Inputs(std::map<std::string, std::string> headers, std::optional<std::string> user,
                    std::optional<std::string> auth) {
  static thread_local std::map<std::string, std::string> h;
  static thread_local std::optional<std::string> u, a;
  h = std::move(headers);
  u = std::move(user);
  a = std::move(auth);
  TenantInputs in;
  in.header = [](std::string_view name) -> std::optional<std::string_view> {
    auto it = h.find(std::string(name));
    if (it == h.end()) return std::nullopt;
    return std::string_view(it->second);
  };
  if (u) in.user = *u;
  if (a) in.authorization = *a;
  return in;
}

TEST(TenantRule, ReadsTheSourcesInOrder) {
  const TenantRule rule = ParseTenantRule("header:X-Tenant-Id, user,api_key_hash");
  ASSERT_EQ(rule.steps.size(), 3u);
  EXPECT_EQ(rule.steps[0].source, TenantSource::kHeader);
  EXPECT_EQ(rule.steps[0].header, "x-tenant-id");
  EXPECT_EQ(rule.steps[1].source, TenantSource::kUser);
  EXPECT_EQ(rule.steps[2].source, TenantSource::kApiKeyHash);
  EXPECT_TRUE(ParseTenantRule("").empty());
}

TEST(TenantRule, TheFirstSourceThatGivesAValueWins) {
  const TenantRule rule = ParseTenantRule("header:x-tenant-id,user,api_key_hash");
  EXPECT_EQ(ResolveTenant(rule, Inputs({{"x-tenant-id", "acme"}}, "bob", "Bearer k")), "acme");
  EXPECT_EQ(ResolveTenant(rule, Inputs({}, "bob", "Bearer k")), "bob");
  // An empty header or user gives nothing: the next source is asked.
  EXPECT_EQ(ResolveTenant(rule, Inputs({{"x-tenant-id", " "}}, "", "Bearer k")),
            ApiKeyFingerprint("Bearer k"));
  EXPECT_EQ(ResolveTenant(rule, Inputs({}, std::nullopt, std::nullopt)), std::nullopt);
  EXPECT_EQ(ResolveTenant(ParseTenantRule("user"), Inputs({{"x-tenant-id", "a"}}, {}, {})),
            std::nullopt);
}

TEST(TenantRule, TheApiKeyIsNeverRecordedOnlyAShortHashOfIt) {
  const std::string key = "sk-verysecretkey1234567890";
  const auto fp = ApiKeyFingerprint("Bearer " + key);
  ASSERT_TRUE(fp);
  EXPECT_EQ(fp->size(), 4u + 12u);
  EXPECT_EQ(fp->rfind("key-", 0), 0u);
  EXPECT_EQ(fp->find("secret"), std::string::npos);
  // SHA-256("abc") starts ba7816bf8f01: the fingerprint is its first 12 hex digits.
  EXPECT_EQ(ApiKeyFingerprint("Bearer abc"), "key-ba7816bf8f01");
  EXPECT_EQ(ApiKeyFingerprint("abc"), "key-ba7816bf8f01");  // no scheme: the whole value
  EXPECT_NE(ApiKeyFingerprint("Bearer abd"), ApiKeyFingerprint("Bearer abc"));
  EXPECT_EQ(ApiKeyFingerprint("Bearer "), std::nullopt);
}

TEST(TenantBound, PastTheBoundTenantsAreOtherAndCounted) {
  TenantBound bound;
  EXPECT_EQ(bound.Admit("a", 2), "a");
  EXPECT_EQ(bound.Admit("b", 2), "b");
  EXPECT_EQ(bound.Admit("c", 2), kTenantOther);
  EXPECT_EQ(bound.Admit("a", 2), "a");  // admitted ones keep their name
  EXPECT_EQ(bound.folded().cap.load(), 1u);
  // A lower bound (a live change) stops new admissions but keeps the admitted.
  EXPECT_EQ(bound.Admit("b", 1), "b");
  EXPECT_EQ(bound.Admit("d", 1), kTenantOther);
  // A higher one admits again.
  EXPECT_EQ(bound.Admit("d", 3), "d");
  EXPECT_EQ(bound.admitted(), 3u);
}

TEST(TenantBound, LongOrUnprintableValuesAreOther) {
  TenantBound bound;
  EXPECT_EQ(bound.Admit(std::string(kMaxTenantBytes + 1, 'x'), 100), kTenantOther);
  EXPECT_EQ(bound.Admit("a\nb", 100), kTenantOther);
  EXPECT_EQ(bound.folded().unprintable.load(), 2u);
  EXPECT_EQ(bound.admitted(), 0u);
}

TEST(TenantBound, ConcurrentAdmissionsKeepTheBound) {
  TenantBound bound;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&bound, t] {
      for (int i = 0; i < 500; ++i) bound.Admit("t" + std::to_string(t * 1000 + i), 100);
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(bound.admitted(), 100u);
  EXPECT_EQ(bound.folded().cap.load(), 1900u);
}

}  // namespace
}  // namespace infertel::analytics
