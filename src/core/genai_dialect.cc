#include "core/genai_dialect.h"

#include <array>

#include "core/semconv.h"

namespace infertel {
namespace {

namespace sc = semconv;

// The model's names (and those engines write on their own spans) that the latest conventions
// spell differently. Names with no counterpart in the conventions stay as they are.
constexpr std::array<AttributeRename, 8> kRenames{{
    {sc::kGenAiRequestIsStream, sc::kGenAiRequestStream},
    {sc::kGenAiRequestModelName, sc::kGenAiRequestModel},
    {sc::kGenAiRequestN, sc::kGenAiRequestChoiceCount},
    {sc::kGenAiUsagePromptTokens, sc::kGenAiUsageInputTokens},
    {sc::kGenAiUsageCompletionTokens, sc::kGenAiUsageOutputTokens},
    {sc::kGenAiUsageCachedTokens, sc::kGenAiUsageCacheReadInputTokens},
    {sc::kGenAiUsageCacheCreationInputTokens, sc::kGenAiUsageCacheWriteInputTokens},
    {sc::kGenAiSystem, sc::kGenAiProviderName},
}};

const AttributeRename* RenameOf(std::string_view key) {
  // Every name to rename starts with "gen_ai.": most keys are passed over at the first check.
  if (!key.starts_with("gen_ai.")) return nullptr;
  for (const AttributeRename& r : kRenames)
    if (r.model == key) return &r;
  return nullptr;
}

bool Has(const google::protobuf::RepeatedPtrField<KeyValue>& attrs, std::string_view key) {
  for (const KeyValue& kv : attrs)
    if (kv.key() == key) return true;
  return false;
}

}  // namespace

GenAiDialect GenAiDialectOf(std::string_view opt_in) {
  GenAiDialect d = GenAiDialect::kModel;
  while (!opt_in.empty()) {
    const auto comma = opt_in.find(',');
    std::string_view item = opt_in.substr(0, comma);
    opt_in = comma == std::string_view::npos ? std::string_view() : opt_in.substr(comma + 1);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item == sc::kOptInGenAiLatestDup) return GenAiDialect::kBoth;
    if (item == sc::kOptInGenAiLatest) d = GenAiDialect::kLatest;
  }
  return d;
}

std::span<const AttributeRename> GenAiAttributeRenames() { return kRenames; }

void ApplyGenAiDialect(google::protobuf::RepeatedPtrField<KeyValue>* attrs, GenAiDialect d) {
  if (d == GenAiDialect::kModel) return;
  const int n = attrs->size();        // added copies are not looked at again
  for (int i = n - 1; i >= 0; --i) {  // backwards: a removed one moves nothing still to see
    const AttributeRename* r = RenameOf(attrs->Get(i).key());
    if (r == nullptr) continue;
    const bool taken = Has(*attrs, r->latest);
    if (d == GenAiDialect::kBoth) {
      if (taken) continue;
      KeyValue* copy = attrs->Add();
      copy->set_key(std::string(r->latest));
      *copy->mutable_value() = attrs->Get(i).value();
    } else if (taken) {
      attrs->DeleteSubrange(i, 1);  // the span has the latest name already: one value
    } else {
      attrs->Mutable(i)->set_key(std::string(r->latest));
    }
  }
}

}  // namespace infertel
