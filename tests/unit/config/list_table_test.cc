// The key types of the analytics keys: lists (infertel.tenant.from) and tables
// (infertel.slo.models).
#include <gtest/gtest.h>

#include "config/keys.h"
#include "config/settings.h"

namespace infertel::config {
namespace {

std::string Parsed(Key key, std::string_view text) {
  auto r = ParseValue(Spec(key), text);
  if (auto* err = std::get_if<std::string>(&r)) return "error: " + *err;
  return FormatValue(std::get<Value>(r));
}

TEST(ListKeyTest, ItemsAreCheckedAndSpelledCanonically) {
  EXPECT_EQ(Parsed(Key::kTenantFrom, " Header:X-Tenant-Id , USER,api_key_hash"),
            "header:x-tenant-id,user,api_key_hash");
  EXPECT_EQ(Parsed(Key::kTenantFrom, ""), "");  // an empty list names no source
  EXPECT_EQ(Parsed(Key::kTenantFrom, "header:"),
            "error: invalid value 'header:' for "
            "infertel.tenant.from: expected a "
            "comma-separated list of header:*,user,"
            "api_key_hash");
  EXPECT_NE(Parsed(Key::kTenantFrom, "user,cookie").find("error:"), std::string::npos);
  EXPECT_NE(Parsed(Key::kTenantFrom, "header:x y").find("error:"), std::string::npos);
  EXPECT_NE(Parsed(Key::kTenantFrom, "user,,user").find("error:"), std::string::npos);
}

TEST(TableKeyTest, ModelsToObjectivesInCanonicalJson) {
  EXPECT_EQ(
      Parsed(Key::kSloModels, R"({"b/m": {"e2e-ms": 9000, "ttft-ms": 500}, "a": {"tpot-ms": 40}})"),
      R"({"a":{"tpot-ms":40},"b/m":{"ttft-ms":500,"e2e-ms":9000}})");
  EXPECT_EQ(Parsed(Key::kSloModels, "{}"), "{}");
  for (const char* bad : {R"({"m": {"ttft": 5}})", R"({"m": {"ttft-ms": 0}})",
                          R"({"m": {"ttft-ms": "5"}})", R"({"m": 5})", R"([1])", "not json",
                          R"({"": {"ttft-ms": 5}})", R"({"m": {"ttft-ms": 1.5}})"})
    EXPECT_NE(Parsed(Key::kSloModels, bad).find("error:"), std::string::npos) << bad;
}

TEST(TableKeyTest, ObjectivesAreUnsetUntilASourceSetsThem) {
  auto r = Resolve([](std::string_view) { return std::nullopt; });
  EXPECT_FALSE(r.settings.IsSet(Key::kSloTtftMs));
  EXPECT_FALSE(r.settings.IsSet(Key::kSloModels));
  EXPECT_EQ(r.settings.GetInt(Key::kTenantMax), 100);
  EXPECT_EQ(Spec(Key::kSloTtftMs).env_var, "INFERTEL_SLO_TTFT_MS");
  EXPECT_EQ(Spec(Key::kSloTpotMs).env_var, "INFERTEL_SLO_TPOT_MS");
  EXPECT_EQ(Spec(Key::kSloE2eMs).env_var, "INFERTEL_SLO_E2E_MS");
  EXPECT_EQ(Spec(Key::kTenantFrom).env_var, "INFERTEL_TENANT_FROM");
  EXPECT_EQ(Spec(Key::kTenantMax).env_var, "INFERTEL_TENANT_MAX");
  EXPECT_EQ(Spec(Key::kSloTtftMs).console_key, "infertel.slo.ttft-ms");
  EXPECT_EQ(Spec(Key::kTenantFrom).console_key, "infertel.tenant.from");
}

}  // namespace
}  // namespace infertel::config
