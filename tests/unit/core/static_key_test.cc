#include "core/static_key.h"

#include <google/protobuf/arena.h>
#include <google/protobuf/stubs/common.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "common/allocation_counter.h"
#include "core/semconv.h"

namespace infertel {
namespace {

namespace sc = semconv;

const StaticKey& ModelKey() { return Key<sc::kGenAiRequestModel>(); }

TEST(StaticKeyTest, IsMadeOnceFromItsConstant) {
  EXPECT_EQ(ModelKey().str(), "gen_ai.request.model");
  EXPECT_EQ(&ModelKey(), &Key<sc::kGenAiRequestModel>());
  EXPECT_NE(&ModelKey(), &Key<sc::kGenAiResponseModel>());
}

TEST(StaticKeyTest, IsSharedWithDebiansProtobuf) {
#if GOOGLE_PROTOBUF_VERSION >= 3021000 && GOOGLE_PROTOBUF_VERSION < 3022000
  EXPECT_TRUE(StaticKeysShared());
#else
  GTEST_SKIP() << "this protobuf copies keys";
#endif
}

// What a KeyValue with a shared key must do: read, serialize, copy and die as with a copied one.
void ExpectBehavesAsCopied(KeyValue* shared) {
  KeyValue copied;
  copied.set_key(std::string(ModelKey().str()));
  copied.mutable_value()->set_string_value("m");
  shared->mutable_value()->set_string_value("m");

  EXPECT_EQ(shared->key(), "gen_ai.request.model");
  EXPECT_EQ(shared->SerializeAsString(), copied.SerializeAsString());
  EXPECT_EQ(shared->ByteSizeLong(), copied.ByteSizeLong());
  // The one difference (static_key.h): reflection reads a shared key as unset, so readers by
  // reflection (otlp_json's encoder) read a KeyValue's key through key().
  const auto* key_field = KeyValue::descriptor()->FindFieldByNumber(KeyValue::kKeyFieldNumber);
  EXPECT_EQ(shared->GetReflection()->GetString(*shared, key_field),
            StaticKeysShared() && &shared->key() == &ModelKey().str() ? "" : ModelKey().str());

  KeyValue copy(*shared);  // a copy owns its key
  EXPECT_EQ(copy.key(), ModelKey().str());
  EXPECT_NE(&copy.key(), &ModelKey().str());
  KeyValue assigned;
  assigned.CopyFrom(*shared);
  EXPECT_EQ(assigned.key(), ModelKey().str());

  KeyValue parsed;
  ASSERT_TRUE(parsed.ParseFromString(shared->SerializeAsString()));
  EXPECT_EQ(parsed.key(), ModelKey().str());
}

TEST(StaticKeyTest, AKeyValueOnAnArenaPointsAtTheKey) {
  {
    google::protobuf::Arena arena;
    auto* kv = google::protobuf::Arena::CreateMessage<KeyValue>(&arena);
    SetKey(kv, ModelKey());
    if (StaticKeysShared()) {
      EXPECT_EQ(&kv->key(), &ModelKey().str());
    }
    ExpectBehavesAsCopied(kv);
  }  // the arena goes: the key must not be destroyed with it
  EXPECT_EQ(ModelKey().str(), "gen_ai.request.model");
}

TEST(StaticKeyTest, AKeyValueOnTheHeapPointsAtTheKeyAndDoesNotFreeIt) {
  {
    KeyValue kv;
    SetKey(&kv, ModelKey());
    if (StaticKeysShared()) {
      EXPECT_EQ(&kv.key(), &ModelKey().str());
    }
    ExpectBehavesAsCopied(&kv);
  }
  EXPECT_EQ(ModelKey().str(), "gen_ai.request.model");
}

TEST(StaticKeyTest, AKeyAlreadySetIsReplacedByACopy) {
  google::protobuf::Arena arena;
  auto* kv = google::protobuf::Arena::CreateMessage<KeyValue>(&arena);
  kv->set_key("a key longer than fifteen bytes");
  SetKey(kv, ModelKey());
  EXPECT_EQ(kv->key(), ModelKey().str());
  EXPECT_NE(&kv->key(), &ModelKey().str());
}

TEST(StaticKeyTest, SettingTheKeyAfterwardsLeavesTheSharedOneAlone) {
  KeyValue kv;
  SetKey(&kv, ModelKey());
  kv.set_key("another.key.longer.than.fifteen");
  EXPECT_EQ(kv.key(), "another.key.longer.than.fifteen");
  EXPECT_EQ(ModelKey().str(), "gen_ai.request.model");
}

TEST(StaticKeyTest, AddAttrTakesEveryValueType) {
  google::protobuf::Arena arena;
  auto* span = google::protobuf::Arena::CreateMessage<Span>(&arena);
  auto* a = span->mutable_attributes();
  AddAttr(a, Key<sc::kGenAiRequestModel>(), std::string_view("m"));
  AddAttr(a, Key<sc::kGenAiSpanKind>(), "LLM");
  AddAttr(a, Key<sc::kGenAiRequestMaxTokens>(), std::int64_t{16});
  AddAttr(a, Key<sc::kGenAiRequestChoiceCount>(), 2);
  AddAttr(a, Key<sc::kGenAiRequestTemperature>(), 0.5);
  AddAttr(a, Key<sc::kGenAiRequestIsStream>(), true);
  EXPECT_EQ(FindAttr(*a, sc::kGenAiRequestModel)->string_value(), "m");
  EXPECT_EQ(FindAttr(*a, sc::kGenAiSpanKind)->string_value(), "LLM");
  EXPECT_EQ(FindAttr(*a, sc::kGenAiRequestMaxTokens)->int_value(), 16);
  EXPECT_EQ(FindAttr(*a, sc::kGenAiRequestChoiceCount)->int_value(), 2);
  EXPECT_EQ(FindAttr(*a, sc::kGenAiRequestTemperature)->double_value(), 0.5);
  EXPECT_TRUE(FindAttr(*a, sc::kGenAiRequestIsStream)->bool_value());
}

// What the agent pays per attribute: nothing for a shared key, and one allocation for a string
// longer than a std::string holds inline (protobuf 3.21 would copy characters given with a
// length twice: into a temporary std::string, then into the field).
TEST(StaticKeyTest, AttributesCostOneAllocationPerLongStringAndNoneForASharedKey) {
  alignas(8) static char block[16384];
  google::protobuf::ArenaOptions options;
  options.initial_block = block;
  options.initial_block_size = sizeof(block);
  google::protobuf::Arena arena(options);  // its memory is `block`: no allocation
  auto* span = google::protobuf::Arena::CreateMessage<Span>(&arena);
  auto* a = span->mutable_attributes();
  a->Reserve(8);
  const std::string_view long_value = "chatcmpl-0123456789abcdef";
  const std::string_view long_key = "a.key.longer.than.fifteen";
  EXPECT_EQ(AllocationsIn([&] { AddAttr(a, long_key, long_value); }), 2);
  EXPECT_EQ(AllocationsIn([&] { AddAttr(a, long_key, std::int64_t{1}); }), 1);
  EXPECT_EQ(AllocationsIn([&] { AddAttr(a, "short", "short"); }), 0);
  const int shared_key = StaticKeysShared() ? 0 : 1;
  (void)ModelKey();  // made before counting: its own string is made once, on first use
  EXPECT_EQ(AllocationsIn([&] { AddAttr(a, ModelKey(), long_value); }), 1 + shared_key);
  EXPECT_EQ(AllocationsIn([&] { AddAttr(a, ModelKey(), 0.5); }), shared_key);
  EXPECT_EQ(AllocationsIn([&] { AddAttr(a, ModelKey(), true); }), shared_key);
  EXPECT_EQ(FindAttr(*a, long_key)->string_value(), long_value);
  EXPECT_EQ(a->Get(3).value().string_value(), long_value);
}

TEST(StaticKeyTest, ADerivedSpanPointsAtItsParentsIdsAndTheModelsName) {
  google::protobuf::Arena arena;
  auto* parent = google::protobuf::Arena::CreateMessage<Span>(&arena);
  parent->set_trace_id(std::string(16, '\x11'));
  parent->set_span_id(std::string(8, '\x22'));
  auto* phase = google::protobuf::Arena::CreateMessage<Span>(&arena);
  const StaticKey& name = Key<sc::kSpanDecode>();
  ShareSpanStrings(phase, parent->trace_id(), parent->span_id(), name);
  EXPECT_EQ(phase->trace_id(), parent->trace_id());
  EXPECT_EQ(phase->parent_span_id(), parent->span_id());
  EXPECT_EQ(phase->name(), "decode");
  if (StaticKeysShared()) {
    EXPECT_EQ(&phase->trace_id(), &parent->trace_id());
    EXPECT_EQ(&phase->parent_span_id(), &parent->span_id());
    EXPECT_EQ(&phase->name(), &name.str());
  }
  Span copied;  // the same fields, owned
  copied.set_trace_id(parent->trace_id());
  copied.set_parent_span_id(parent->span_id());
  copied.set_name("decode");
  EXPECT_EQ(phase->SerializeAsString(), copied.SerializeAsString());
  Span copy(*phase);  // a copy owns its strings
  EXPECT_NE(&copy.trace_id(), &parent->trace_id());
  EXPECT_EQ(copy.SerializeAsString(), copied.SerializeAsString());
  // Setting a shared field afterwards makes it its own and leaves the parent's alone.
  phase->set_parent_span_id(std::string(8, '\x33'));
  EXPECT_EQ(parent->span_id(), std::string(8, '\x22'));
  // Fields already set are copied.
  auto* set = google::protobuf::Arena::CreateMessage<Span>(&arena);
  set->set_trace_id("0123456789abcdef");
  ShareSpanStrings(set, parent->trace_id(), parent->span_id(), name);
  EXPECT_EQ(set->trace_id(), parent->trace_id());
  EXPECT_NE(&set->trace_id(), &parent->trace_id());
}

TEST(InternKeyTest, IsOneKeyPerNameForTheProcess) {
  const StaticKey* a = InternKey("gen_ai.latency.time_in_queue");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->str(), "gen_ai.latency.time_in_queue");
  const std::string same = "gen_ai.latency.time_in_queue";  // another string, same name
  EXPECT_EQ(InternKey(same), a);
  const StaticKey* b = InternKey("gen_ai.latency.time_in_model_prefill");
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a, b);
  EXPECT_EQ(InternKey(""), InternKey(""));
  EXPECT_EQ(InternKey(std::string(kMaxInternedKeyLength + 1, 'k')), nullptr);
  ASSERT_NE(InternKey(std::string(kMaxInternedKeyLength, 'k')), nullptr);
}

// The counter replaces every form of new: one it left alone would come from the library and be
// freed by the counter's delete (ASan: alloc-dealloc-mismatch, as gRPC's server start was).
TEST(AllocationCounterTest, CountsAndPairsEveryFormOfNew) {
  int* one = nullptr;
  int* many = nullptr;
  int* quiet = nullptr;
  int* quiet_many = nullptr;
  EXPECT_EQ(AllocationsIn([&] {
              one = new int(1);
              many = new int[3];
              quiet = new (std::nothrow) int(2);
              quiet_many = new (std::nothrow) int[4];
            }),
            4);
  delete one;
  delete[] many;
  delete quiet;
  delete[] quiet_many;
}

TEST(InternKeyTest, AKeyAlreadyMadeCostsNoAllocation) {
  const std::string name = "gen_ai.usage.completion_tokens";
  ASSERT_NE(InternKey(name), nullptr);
  EXPECT_EQ(AllocationsIn([&] { (void)InternKey(name); }), 0);
}

TEST(InternKeyTest, ThreadsAskingForTheSameNamesGetTheSameKeys) {
  constexpr int kThreads = 4, kNames = 200;
  std::vector<std::vector<const StaticKey*>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&got, t] {
      for (int i = 0; i < kNames; ++i)
        got[t].push_back(InternKey("threads.name." + std::to_string(i)));
    });
  for (auto& th : threads) th.join();
  for (int i = 0; i < kNames; ++i) {
    ASSERT_NE(got[0][i], nullptr);
    EXPECT_EQ(got[0][i]->str(), "threads.name." + std::to_string(i));
    for (int t = 1; t < kThreads; ++t) EXPECT_EQ(got[t][i], got[0][i]) << i;
  }
}

// Fills the process's table: keep it the last test that interns new names in this binary.
TEST(InternKeyTest, KeepsAtMostItsBoundOfNames) {
  const StaticKey* early = InternKey("bound.early");
  ASSERT_NE(early, nullptr);
  std::size_t made = 0;
  for (std::size_t i = 0; i < kMaxInternedKeys + 100; ++i)
    if (InternKey("bound.name." + std::to_string(i)) != nullptr) ++made;
  EXPECT_LT(made, kMaxInternedKeys);  // the table held a few names before this test
  EXPECT_EQ(InternKey("bound.another.new.name"), nullptr);
  EXPECT_EQ(InternKey("bound.early"), early);  // names kept are still found
}

}  // namespace
}  // namespace infertel
