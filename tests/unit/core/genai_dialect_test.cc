#include "core/genai_dialect.h"

#include <gtest/gtest.h>

#include "core/semconv.h"

namespace infertel {
namespace {

using Attrs = google::protobuf::RepeatedPtrField<KeyValue>;

void Add(Attrs* a, std::string_view key, std::int64_t v) {
  KeyValue* kv = a->Add();
  kv->set_key(std::string(key));
  kv->mutable_value()->set_int_value(v);
}

std::vector<std::string> Keys(const Attrs& a) {
  std::vector<std::string> out;
  for (const auto& kv : a) out.push_back(kv.key());
  return out;
}

TEST(GenAiDialectOf, OnlyTheGenAiItemsOfTheSharedSwitchCount) {
  EXPECT_EQ(GenAiDialectOf(""), GenAiDialect::kModel);
  EXPECT_EQ(GenAiDialectOf("http,database/dup"), GenAiDialect::kModel);
  EXPECT_EQ(GenAiDialectOf("gen_ai_latest_experimental"), GenAiDialect::kLatest);
  EXPECT_EQ(GenAiDialectOf("http, gen_ai_latest_experimental "), GenAiDialect::kLatest);
  EXPECT_EQ(GenAiDialectOf("gen_ai_latest_experimental/dup"), GenAiDialect::kBoth);
  // /dup wins, in either order.
  EXPECT_EQ(GenAiDialectOf("gen_ai_latest_experimental,gen_ai_latest_experimental/dup"),
            GenAiDialect::kBoth);
  EXPECT_EQ(GenAiDialectOf("gen_ai_latest_experimental/dup,gen_ai_latest_experimental"),
            GenAiDialect::kBoth);
  EXPECT_EQ(GenAiDialectOf("gen_ai_latest"), GenAiDialect::kModel);
}

TEST(ApplyGenAiDialect, TheModelDialectChangesNothing) {
  Attrs a;
  Add(&a, semconv::kGenAiUsagePromptTokens, 7);
  ApplyGenAiDialect(&a, GenAiDialect::kModel);
  EXPECT_EQ(Keys(a), std::vector<std::string>{"gen_ai.usage.prompt_tokens"});
}

TEST(ApplyGenAiDialect, LatestRenamesInPlaceAndKeepsNamesWithoutCounterpart) {
  Attrs a;
  Add(&a, semconv::kGenAiUsagePromptTokens, 7);
  Add(&a, semconv::kGenAiLatencyTimeInQueue, 1);
  Add(&a, semconv::kGenAiUsageCachedTokens, 3);
  ApplyGenAiDialect(&a, GenAiDialect::kLatest);
  EXPECT_EQ(Keys(a),
            (std::vector<std::string>{"gen_ai.usage.input_tokens", "gen_ai.latency.time_in_queue",
                                      "gen_ai.usage.cache_read.input_tokens"}));
  EXPECT_EQ(a.Get(0).value().int_value(), 7);
}

TEST(ApplyGenAiDialect, LatestKeepsOneValueWhenTheSpanHasBothNames) {
  Attrs a;
  Add(&a, semconv::kGenAiRequestModelName, 1);
  Add(&a, semconv::kGenAiRequestModel, 2);
  ApplyGenAiDialect(&a, GenAiDialect::kLatest);
  ASSERT_EQ(Keys(a), std::vector<std::string>{"gen_ai.request.model"});
  EXPECT_EQ(a.Get(0).value().int_value(), 2);
}

TEST(ApplyGenAiDialect, BothAddsTheLatestNameBesideTheModels) {
  Attrs a;
  Add(&a, semconv::kGenAiRequestIsStream, 1);
  Add(&a, semconv::kGenAiUsageCompletionTokens, 9);
  ApplyGenAiDialect(&a, GenAiDialect::kBoth);
  EXPECT_EQ(Keys(a),
            (std::vector<std::string>{"gen_ai.request.is_stream", "gen_ai.usage.completion_tokens",
                                      "gen_ai.usage.output_tokens", "gen_ai.request.stream"}));
  EXPECT_EQ(a.Get(2).value().int_value(), 9);
}

TEST(GenAiAttributeRenames, EveryLatestNameIsAGenAiName) {
  for (const auto& r : GenAiAttributeRenames()) {
    EXPECT_TRUE(r.model.starts_with("gen_ai.")) << r.model;
    EXPECT_TRUE(r.latest.starts_with("gen_ai.")) << r.latest;
    EXPECT_NE(r.model, r.latest);
  }
}

}  // namespace
}  // namespace infertel
