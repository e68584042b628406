#include "otlp/json.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "common/telemetry_builders.h"
#include "core/semconv.h"
#include "core/static_key.h"
#include "otlp/json_util.h"

namespace infertel::otlp_json {
namespace {

using google::protobuf::util::MessageDifferencer;
using testing::RichRequest;

TEST(OtlpJsonTest, EncodesTheOtlpJsonMapping) {
  const std::string json = otlp_json::EncodeTraces(RichRequest());
  EXPECT_NE(json.find("\"resourceSpans\":["), std::string::npos);
  EXPECT_NE(json.find("\"scopeSpans\":["), std::string::npos);
  EXPECT_NE(json.find("\"traceId\":\"0af7651916cd43dd8448eb211c80319c\""), std::string::npos);
  EXPECT_NE(json.find("\"spanId\":\"b7ad6b7169203331\""), std::string::npos);
  EXPECT_NE(json.find("\"parentSpanId\":\"00f067aa0ba902b7\""), std::string::npos);
  EXPECT_NE(json.find("\"kind\":2"), std::string::npos);
  EXPECT_NE(json.find("\"startTimeUnixNano\":\"1700000000000000000\""), std::string::npos);
  EXPECT_NE(json.find("{\"intValue\":\"42\"}"), std::string::npos);
  EXPECT_NE(json.find("{\"intValue\":\"9007199254740993\"}"), std::string::npos);
  EXPECT_NE(json.find("{\"doubleValue\":0.25}"), std::string::npos);
  EXPECT_NE(json.find("{\"boolValue\":true}"), std::string::npos);
  EXPECT_NE(
      json.find("{\"arrayValue\":{\"values\":[{\"stringValue\":\"stop\"},{\"intValue\":\"7\"}]}}"),
      std::string::npos);
  EXPECT_NE(
      json.find(
          "{\"kvlistValue\":{\"values\":[{\"key\":\"inner\",\"value\":{\"stringValue\":\"x\"}}]}}"),
      std::string::npos);
  EXPECT_NE(json.find("{\"bytesValue\":\"AP8Q\"}"), std::string::npos);
  EXPECT_NE(json.find("\"code\":2"), std::string::npos);
  EXPECT_NE(json.find("\"traceId\":\"11111111111111111111111111111111\""), std::string::npos);
  EXPECT_EQ(json.find("trace_id"), std::string::npos);
}

// Keys the agent shares instead of copying (core/static_key.h) read as unset by reflection;
// the encoder reads them through the accessor, so they reach the JSON and come back.
TEST(OtlpJsonTest, EncodesSharedKeys) {
  TracesRequest req;
  auto* span = req.add_resource_spans()->add_scope_spans()->add_spans();
  span->set_name("chat m");
  AddAttr(span->mutable_attributes(), Key<semconv::kGenAiRequestModel>(), "m");
  const std::string json = otlp_json::EncodeTraces(req);
  EXPECT_NE(json.find(R"({"key":"gen_ai.request.model","value":{"stringValue":"m"}})"),
            std::string::npos)
      << json;
  TracesRequest back;
  std::string error;
  ASSERT_TRUE(otlp_json::Decode(json, &back, &error)) << error;
  EXPECT_EQ(back.resource_spans(0).scope_spans(0).spans(0).attributes(0).key(),
            semconv::kGenAiRequestModel);
}

// A derived span's ids and name point at its parent's and the model's strings
// (core/static_key.h ShareSpanStrings), which reflection reads as unset.
TEST(OtlpJsonTest, EncodesSharedSpanStrings) {
  google::protobuf::Arena arena;
  auto* req = google::protobuf::Arena::CreateMessage<TracesRequest>(&arena);
  Span* parent = req->add_resource_spans()->add_scope_spans()->add_spans();
  parent->set_trace_id(testing::Bytes(testing::kTrace));
  parent->set_span_id(testing::Bytes("b7ad6b7169203331"));
  Span* phase = req->mutable_resource_spans(0)->mutable_scope_spans(0)->add_spans();
  ShareSpanStrings(phase, parent->trace_id(), parent->span_id(), Key<semconv::kSpanPrefill>());
  if (StaticKeysShared()) {
    ASSERT_EQ(&phase->trace_id(), &parent->trace_id());
  }
  const std::string json = otlp_json::EncodeTraces(*req);
  TracesRequest back;
  std::string error;
  ASSERT_TRUE(otlp_json::Decode(json, &back, &error)) << error;
  const Span& b = back.resource_spans(0).scope_spans(0).spans(1);
  EXPECT_EQ(b.trace_id(), testing::Bytes(testing::kTrace)) << json;
  EXPECT_EQ(b.parent_span_id(), testing::Bytes("b7ad6b7169203331")) << json;
  EXPECT_EQ(b.name(), semconv::kSpanPrefill) << json;
  EXPECT_EQ(b.SerializeAsString(), phase->SerializeAsString());
}

TEST(OtlpJsonTest, RoundTripsTraces) {
  const TracesRequest in = RichRequest();
  TracesRequest out;
  std::string error;
  ASSERT_TRUE(otlp_json::DecodeTraces(otlp_json::EncodeTraces(in), &out, &error)) << error;
  EXPECT_TRUE(MessageDifferencer::Equals(in, out)) << out.DebugString();
}

TEST(OtlpJsonTest, RoundTripsLogsAndMetrics) {
  LogsRequest logs;
  auto* lr = logs.add_resource_logs()->add_scope_logs()->add_log_records();
  lr->set_time_unix_nano(123);
  lr->set_severity_number(otlp_logs::SEVERITY_NUMBER_WARN);
  lr->mutable_body()->set_string_value("hello");
  lr->set_trace_id(testing::Bytes(testing::kTrace));
  LogsRequest logs_out;
  std::string error;
  const std::string lj = otlp_json::EncodeLogs(logs);
  EXPECT_NE(lj.find("\"severityNumber\":13"), std::string::npos) << lj;
  ASSERT_TRUE(otlp_json::DecodeLogs(lj, &logs_out, &error)) << error;
  EXPECT_TRUE(MessageDifferencer::Equals(logs, logs_out));

  MetricsRequest m;
  auto* metric = m.add_resource_metrics()->add_scope_metrics()->add_metrics();
  metric->set_name("vllm:num_requests_running");
  auto* p = metric->mutable_gauge()->add_data_points();
  p->set_as_double(3);
  p->set_time_unix_nano(99);
  auto* h = m.mutable_resource_metrics(0)->mutable_scope_metrics(0)->add_metrics();
  h->set_name("ttft");
  auto* hp = h->mutable_histogram()->add_data_points();
  hp->set_count(5);
  hp->set_sum(1.5);
  hp->add_explicit_bounds(0.1);
  hp->add_bucket_counts(2);
  hp->add_bucket_counts(3);
  h->mutable_histogram()->set_aggregation_temporality(
      otlp_metrics::AGGREGATION_TEMPORALITY_CUMULATIVE);
  MetricsRequest m_out;
  const std::string mj = otlp_json::EncodeMetrics(m);
  EXPECT_NE(mj.find("\"bucketCounts\":[\"2\",\"3\"]"), std::string::npos) << mj;
  EXPECT_NE(mj.find("\"aggregationTemporality\":2"), std::string::npos);
  ASSERT_TRUE(otlp_json::DecodeMetrics(mj, &m_out, &error)) << error;
  EXPECT_TRUE(MessageDifferencer::Equals(m, m_out));
}

TEST(OtlpJsonTest, DecodesSnakeCaseNumbersAndEnumNames) {
  const std::string json = R"({"resource_spans":[{"scope_spans":[{"spans":[{
      "trace_id":"0AF7651916CD43DD8448EB211C80319C","span_id":"b7ad6b7169203331",
      "name":"x","kind":"SPAN_KIND_CLIENT","start_time_unix_nano":1700000000000000000,
      "end_time_unix_nano":"1700000000000000001","unknownField":{"a":[1,2]},
      "attributes":[{"key":"n","value":{"int_value":5}},{"key":"d","value":{"doubleValue":"NaN"}},
                    {"key":"z","value":null}],
      "status":{"code":2}}]}]}]})";
  TracesRequest out;
  std::string error;
  ASSERT_TRUE(otlp_json::DecodeTraces(json, &out, &error)) << error;
  const Span& s = out.resource_spans(0).scope_spans(0).spans(0);
  EXPECT_EQ(BytesToHex(s.trace_id()), "0af7651916cd43dd8448eb211c80319c");
  EXPECT_EQ(s.kind(), otlp_trace::Span::SPAN_KIND_CLIENT);
  EXPECT_EQ(s.start_time_unix_nano(), 1700000000000000000ull);
  EXPECT_EQ(s.end_time_unix_nano(), 1700000000000000001ull);
  EXPECT_EQ(s.attributes(0).value().int_value(), 5);
  EXPECT_TRUE(std::isnan(s.attributes(1).value().double_value()));
  EXPECT_EQ(s.status().code(), otlp_trace::Status::STATUS_CODE_ERROR);
}

TEST(OtlpJsonTest, RejectsMalformedInput) {
  TracesRequest out;
  std::string error;
  EXPECT_FALSE(otlp_json::DecodeTraces("{\"resourceSpans\":[", &out, &error));
  EXPECT_NE(error.find("invalid JSON"), std::string::npos);
  EXPECT_FALSE(otlp_json::DecodeTraces("[]", &out, &error));
  EXPECT_FALSE(otlp_json::DecodeTraces(
      R"({"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz"}]}]}]})", &out, &error));
  EXPECT_NE(error.find("trace_id"), std::string::npos) << error;
  EXPECT_FALSE(otlp_json::DecodeTraces(
      R"({"resourceSpans":[{"scopeSpans":[{"spans":[{"startTimeUnixNano":"12x"}]}]}]})", &out,
      &error));
  EXPECT_FALSE(otlp_json::DecodeTraces(R"({"resourceSpans":{"a":1}})", &out, &error));
  // Deep nesting is refused rather than recursing without bound.
  std::string deep = R"({"resourceSpans":[{"resource":{"attributes":[{"key":"k","value":)";
  for (int i = 0; i < 100; ++i) deep += R"({"arrayValue":{"values":[)";
  for (int i = 0; i < 100; ++i) deep += "]}}";
  deep += "}]}}]}";
  EXPECT_FALSE(otlp_json::DecodeTraces(deep, &out, &error));
}

// Within bounds, the elements of an array or key-value list value past the bound are skipped
// and counted, at any depth; other repeated fields are not bounded.
TEST(OtlpJsonTest, DecodesCollectionValuesWithinBounds) {
  std::string json = R"({"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"s","attributes":[)";
  json += R"({"key":"a","value":{"arrayValue":{"values":[)";
  for (int i = 0; i < 100; ++i)
    json += (i ? "," : "") + std::string(R"({"intValue":")") + std::to_string(i) + R"("})";
  json += R"(,null]}}},{"key":"l","value":{"kvlistValue":{"values":[)";
  json += R"({"key":"x","value":{"arrayValue":{"values":[{"boolValue":true},{},{}]}}},)";
  json += R"({"key":"y"},{"key":"z"}]}}},{"key":"b"},{"key":"c"}]}]}]}]})";
  TracesRequest r;
  std::string error;
  otlp_json::DecodeBounds bounds{2};
  ASSERT_TRUE(otlp_json::Decode(json, &r, &error, &bounds)) << error;
  const Span& s = r.resource_spans(0).scope_spans(0).spans(0);
  ASSERT_EQ(s.attributes_size(), 4);
  ASSERT_EQ(s.attributes(0).value().array_value().values_size(), 2);
  EXPECT_EQ(s.attributes(0).value().array_value().values(1).int_value(), 1);
  ASSERT_EQ(s.attributes(1).value().kvlist_value().values_size(), 2);
  EXPECT_EQ(s.attributes(1).value().kvlist_value().values(0).value().array_value().values_size(),
            2);
  EXPECT_EQ(bounds.skipped, 98u + 1u + 1u);
  TracesRequest unbounded;
  ASSERT_TRUE(otlp_json::Decode(json, &unbounded, &error)) << error;
  const auto& all = unbounded.resource_spans(0).scope_spans(0).spans(0).attributes(0);
  EXPECT_EQ(all.value().array_value().values_size(), 100);
}

// The decoder reads the text in place (otlp/json_cursor.h): it refuses what RFC 8259 refuses,
// in kept values and skipped ones alike, and unescapes what it keeps.
TEST(OtlpJsonTest, RefusesWhatTheJsonGrammarRefuses) {
  const auto refused = [](std::string_view json) {
    TracesRequest out;
    std::string error;
    const bool ok = otlp_json::DecodeTraces(json, &out, &error);
    return !ok && error.find("invalid JSON") != std::string::npos ? error : "taken: " + error;
  };
  const std::string span = R"({"resourceSpans":[{"scopeSpans":[{"spans":[{"name":)";
  EXPECT_NE(refused(span + "\"a\x01\"}]}]}]}").find("control character"), std::string::npos);
  EXPECT_NE(refused(span + R"("a\q"}]}]}]})").find("bad escape"), std::string::npos);
  EXPECT_NE(refused(span + R"("\ud800x"}]}]}]})").find("lone surrogate"), std::string::npos);
  EXPECT_NE(refused(span + R"("\udc00"}]}]}]})").find("lone surrogate"), std::string::npos);
  EXPECT_NE(refused(span + "\"\xff\"}]}]}]}").find("UTF-8"), std::string::npos);
  EXPECT_NE(refused(R"({"resourceSpans":[]} x)").find("trailing content"), std::string::npos);
  EXPECT_NE(refused(R"({"resourceSpans":[],})").find("member name"), std::string::npos);
  EXPECT_NE(refused(R"({"unknown":[1,]})").find("expected a value at byte"), std::string::npos);
  // In a field nobody reads, too.
  EXPECT_NE(refused(R"({"unknown":[01]})").find("expected ','"), std::string::npos);
  EXPECT_NE(refused(R"({"unknown":{"a":tru}})").find("true, false or null"), std::string::npos);
  EXPECT_NE(refused(R"({"unknown":"\u12"})").find("\\u escape"), std::string::npos);
  EXPECT_NE(refused(R"({"unknown":-})").find("bad number"), std::string::npos);
  EXPECT_NE(refused(R"({"unknown":1.})").find("bad number"), std::string::npos);
  EXPECT_NE(refused(R"({"unknown":"abc)").find("unterminated"), std::string::npos);
  EXPECT_NE(refused("").find("expected a value"), std::string::npos);
  // Skipped values nest at most JsonCursor::kMaxDepth deep.
  EXPECT_NE(refused("{\"unknown\":" + std::string(300, '[') + std::string(300, ']') + "}")
                .find("nesting too deep"),
            std::string::npos);
  TracesRequest out;
  std::string error;
  const std::string nested = "{\"unknown\":" + std::string(200, '[') + std::string(200, ']') + "}";
  EXPECT_TRUE(otlp_json::DecodeTraces(nested, &out, &error)) << error;
}

TEST(OtlpJsonTest, UnescapesStringsAndReadsNumbersAsTheirFieldWants) {
  const std::string json = R"({"resourceSpans":[{"scopeSpans":[{"spans":[{
      "n\u0061me":"caf\u00e9 \ud83d\ude00 \"q\" \\ \/ \n\t",
      "kind":"3","droppedAttributesCount":-0,"startTimeUnixNano":1.7e18,
      "attributes":[{"key":"tiny","value":{"doubleValue":1e-400}},
                    {"key":"int","value":{"intValue":"-9223372036854775808"}},
                    {"key":"e","value":{"doubleValue":-2.5E+2}}]}]}]}]})";
  TracesRequest out;
  std::string error;
  ASSERT_TRUE(otlp_json::DecodeTraces(json, &out, &error)) << error;
  const Span& s = out.resource_spans(0).scope_spans(0).spans(0);
  EXPECT_EQ(s.name(), "café \xF0\x9F\x98\x80 \"q\" \\ / \n\t");
  EXPECT_EQ(s.kind(), otlp_trace::Span::SPAN_KIND_CLIENT);
  EXPECT_EQ(s.start_time_unix_nano(), 1700000000000000000ull);
  EXPECT_EQ(s.attributes(0).value().double_value(), 0.0);
  EXPECT_EQ(s.attributes(1).value().int_value(), INT64_MIN);
  EXPECT_EQ(s.attributes(2).value().double_value(), -250.0);
  const auto refused = [&](std::string_view field, std::string_view value) {
    const std::string j = std::string(R"({"resourceSpans":[{"scopeSpans":[{"spans":[{")") +
                          std::string(field) + "\":" + std::string(value) + "}]}]}]}";
    return otlp_json::DecodeTraces(j, &out, &error) ? std::string("taken") : error;
  };
  EXPECT_NE(refused("droppedAttributesCount", "-1").find("out of range"), std::string::npos);
  EXPECT_NE(refused("droppedAttributesCount", "4294967296").find("out of range"),
            std::string::npos);
  EXPECT_NE(refused("startTimeUnixNano", "18446744073709551616").find("out of range"),
            std::string::npos);
  EXPECT_NE(refused("startTimeUnixNano", "1.5").find("not an integer"), std::string::npos);
  EXPECT_NE(refused("name", "5").find("expected a string"), std::string::npos);
  EXPECT_NE(refused("kind", "\"SPAN_KIND_NONE\"").find("unknown enum name"), std::string::npos);
  EXPECT_NE(refused("status", "{\"code\":true}").find("expected an integer"), std::string::npos);
  EXPECT_NE(refused("traceId", "[]").find("expected a string"), std::string::npos);
  EXPECT_NE(refused("events", "{}").find("expected an array"), std::string::npos);
  EXPECT_NE(refused("status", "[]").find("expected an object"), std::string::npos);
  EXPECT_NE(refused("attributes", R"([{"value":{"doubleValue":1e400}}])").find("out of range"),
            std::string::npos);
  EXPECT_NE(refused("attributes", R"([{"value":{"boolValue":"true"}}])").find("a boolean"),
            std::string::npos);
}

TEST(OtlpJsonTest, DecodesTheVllmFixture) {
  std::ifstream f(INFERTEL_FIXTURES_DIR "/vllm-llm_request-otlp-0.29.0-SANITIZED.json");
  ASSERT_TRUE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  TracesRequest out;
  std::string error;
  ASSERT_TRUE(otlp_json::DecodeTraces(ss.str(), &out, &error)) << error;
  ASSERT_EQ(CountSpans(out), 1u);
  const Span& s = out.resource_spans(0).scope_spans(0).spans(0);
  EXPECT_EQ(s.name(), semconv::kSpanLlmRequest);
  EXPECT_EQ(s.start_time_unix_nano(), 1790341371953418752ull);
  EXPECT_EQ(s.end_time_unix_nano(), 1790341372208341144ull);
  const AnyValue* prompt = FindAttr(s.attributes(), semconv::kGenAiUsagePromptTokens);
  ASSERT_NE(prompt, nullptr);
  EXPECT_EQ(prompt->int_value(), 14);
  const AnyValue* ttft = FindAttr(s.attributes(), semconv::kGenAiLatencyTimeToFirstToken);
  ASSERT_NE(ttft, nullptr);
  EXPECT_DOUBLE_EQ(ttft->double_value(), 0.11554598808288574);
  const AnyValue* id = FindAttr(s.attributes(), semconv::kGenAiRequestId);
  ASSERT_NE(id, nullptr);
  EXPECT_EQ(id->string_value(), "req-vllm-029-001");
  // And back: the re-encoded form decodes to the same message.
  TracesRequest again;
  ASSERT_TRUE(otlp_json::DecodeTraces(otlp_json::EncodeTraces(out), &again, &error));
  EXPECT_TRUE(MessageDifferencer::Equals(out, again));
}

TEST(JsonUtilTest, PlainAttributesAndBase64) {
  const TracesRequest req = RichRequest();
  const std::string plain =
      otlp_json::PlainAttributes(req.resource_spans(0).scope_spans(0).spans(0).attributes());
  EXPECT_NE(plain.find("\"gen_ai.usage.input_tokens\":42"), std::string::npos) << plain;
  EXPECT_NE(plain.find("\"gen_ai.request.is_stream\":true"), std::string::npos);
  EXPECT_NE(plain.find("\"gen_ai.response.finish_reasons\":[\"stop\",7]"), std::string::npos);
  EXPECT_NE(plain.find("\"kv\":{\"inner\":\"x\"}"), std::string::npos);
  EXPECT_NE(plain.find("\"quote\":\"a \\\"q\\\" \\\\ \\n\\t\\u0001 é\""), std::string::npos)
      << plain;
  std::string decoded;
  ASSERT_TRUE(otlp_json::Base64Decode(otlp_json::Base64Encode("hello!?"), &decoded));
  EXPECT_EQ(decoded, "hello!?");
  EXPECT_EQ(otlp_json::Base64Encode("ab"), "YWI=");
  EXPECT_FALSE(otlp_json::Base64Decode("a*b", &decoded));
}

}  // namespace
}  // namespace infertel::otlp_json
