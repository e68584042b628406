#include "export/sqlite/record_attributes.h"

#include <gtest/gtest.h>

#include "otlp/json_util.h"

namespace infertel::exporting {
namespace {

// Attributes of every OTLP value type, and a captured message whose quotes JSON escapes.
google::protobuf::RepeatedPtrField<KeyValue> EveryType() {
  google::protobuf::RepeatedPtrField<KeyValue> attrs;
  auto add = [&](const char* key) {
    KeyValue* kv = attrs.Add();
    kv->set_key(key);
    return kv->mutable_value();
  };
  add("gen_ai.input.messages")
      ->set_string_value(R"([{"role":"user","parts":[{"type":"text","content":"a \"b\"\n"}]}])");
  add("gen_ai.usage.input_tokens")->set_int_value(9007199254740993);
  add("gen_ai.request.temperature")->set_double_value(0.7);
  add("gen_ai.request.is_stream")->set_bool_value(true);
  AnyValue* reasons = add("gen_ai.response.finish_reasons");
  reasons->mutable_array_value()->add_values()->set_string_value("stop");
  AnyValue* kvlist = add("nested");
  KeyValue* inner = kvlist->mutable_kvlist_value()->add_values();
  inner->set_key("k");
  inner->mutable_value()->set_int_value(-3);
  add("raw")->set_bytes_value(std::string("\x00\xff", 2));
  add("negative")->set_int_value(-1);
  add("zero")->set_double_value(0);
  add("false")->set_bool_value(false);
  add("empty")->set_string_value("");
  add("unset");
  attrs.Add()->set_key("no value");
  attrs.Add()->mutable_value()->set_int_value(7);  // no key
  return attrs;
}

TEST(RecordAttributes, ReadBackAsTheJsonTheyWouldHaveBeenWrittenAs) {
  const auto attrs = EveryType();
  std::string record;
  AppendRecordAttributes(&record, attrs);
  EXPECT_EQ(RecordAttributesJson(record), otlp_json::PlainAttributes(attrs));
}

// The record's bytes after its marker are a KeyValueList as protobuf itself writes it.
TEST(RecordAttributes, AreTheBytesProtobufWrites) {
  otlp_common::KeyValueList list;
  *list.mutable_values() = EveryType();
  std::string record;
  AppendRecordAttributes(&record, list.values());
  ASSERT_FALSE(record.empty());
  EXPECT_EQ(record.substr(1), list.SerializeAsString());
}

TEST(RecordAttributes, KeepCapturedTextUnescaped) {
  const auto attrs = EveryType();
  std::string record;
  AppendRecordAttributes(&record, attrs);
  // The message's bytes are in the record as sent: no backslash before its quotes.
  EXPECT_NE(record.find(attrs[0].value().string_value()), std::string::npos);
  EXPECT_EQ(record.find(R"(\"role\")"), std::string::npos);
}

TEST(RecordAttributes, NoAttributesReadAsAnEmptyObject) {
  std::string record;
  AppendRecordAttributes(&record, {});
  EXPECT_EQ(RecordAttributesJson(record), "{}");
}

TEST(RecordAttributes, AnOlderRecordsJsonReadsAsItIs) {
  const std::string json = R"({"gen_ai.request.model":"m","n":1})";
  EXPECT_EQ(RecordAttributesJson(json), json);
}

TEST(RecordAttributes, DamagedBytesReadAsAnEmptyObject) {
  std::string record;
  AppendRecordAttributes(&record, EveryType());
  EXPECT_EQ(RecordAttributesJson(record.substr(0, record.size() / 2)), "{}");
  EXPECT_EQ(RecordAttributesJson(""), "{}");
  EXPECT_EQ(RecordAttributesJson("\x7f garbage"), "{}");
}

}  // namespace
}  // namespace infertel::exporting
