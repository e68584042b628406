#include "console/admin_api.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include "common/env_lookup.h"
#include "console/report.h"
#include "engines/vllm/vllm_keys.h"

namespace infertel::console {
namespace {

using config::Key;
using config::Value;
namespace bhttp = boost::beast::http;

using testing::EnvOf;

http::StringRequest Req(bhttp::verb method, std::string target, std::string body = "",
                        std::string auth = "") {
  http::StringRequest req{method, target, 11};
  if (!auth.empty()) req.set(bhttp::field::authorization, auth);
  req.body() = std::move(body);
  req.prepare_payload();
  return req;
}

class ConfigApiTest : public ::testing::Test {
 protected:
  ConfigApiTest()
      : config_(EnvOf({{"OTEL_INSTRUMENTATION_VLLM_TRACING_LEVEL", "2"}}), nullptr),
        api_(&config_, nullptr, "") {}

  // Parses a JSON body; the document lives as long as the fixture's parser.
  simdjson::dom::element Parse(const std::string& body) {
    bodies_.push_back(body);
    simdjson::dom::element doc;
    EXPECT_FALSE(parser_.parse(bodies_.back()).get(doc)) << body;
    return doc;
  }

  LayeredConfig config_;
  ConfigApi api_;
  simdjson::dom::parser parser_;
  std::vector<std::string> bodies_;
};

constexpr const char* kLevel = "/api/config/otel.instrumentation.vllm.tracing.level";

TEST_F(ConfigApiTest, GetListsEveryKeyWithSourceEnvAndApply) {
  auto res = api_.Handle(Req(bhttp::verb::get, "/api/config"));
  ASSERT_EQ(res.result_int(), 200u) << res.body();
  EXPECT_EQ(res[bhttp::field::content_type], "application/json");
  auto doc = Parse(res.body());
  simdjson::dom::array keys;
  ASSERT_FALSE(doc["keys"].get(keys));
  EXPECT_EQ(keys.size(), config::KeyCount());
  bool seen = false;
  for (auto k : keys) {
    std::string_view name, source, apply;
    ASSERT_FALSE(k["key"].get(name));
    ASSERT_FALSE(k["source"].get(source));
    ASSERT_FALSE(k["apply"].get(apply));
    EXPECT_FALSE(k["env"].error());
    if (name == "otel.instrumentation.vllm.tracing.level") {
      seen = true;
      EXPECT_EQ(source, "env");
      EXPECT_EQ(k["value"].get_int64().value(), 2);
      EXPECT_EQ(k["env"].get_string().value(), "OTEL_INSTRUMENTATION_VLLM_TRACING_LEVEL");
      EXPECT_EQ(apply, "live");
    }
    if (name == "otel.instrumentation.vllm.enabled") {
      EXPECT_EQ(apply, "restart");
      EXPECT_FALSE(k["pending_restart"].get_bool().value());
    }
    if (name == "apsara.apm.inference.vllm.logging.level") {
      EXPECT_TRUE(k["value"].is_null());  // engine's own
      EXPECT_TRUE(k["engine_knob"].get_bool().value());
      std::string_view reason;
      ASSERT_FALSE(k["unsupported"].get(reason));
      EXPECT_NE(reason.find("VLLM_LOGGING_LEVEL"), std::string_view::npos);
    }
  }
  EXPECT_TRUE(seen);
  simdjson::dom::object status;
  ASSERT_FALSE(doc["status"].get(status));
  EXPECT_FALSE(status["file"]["configured"].get_bool().value());
}

TEST_F(ConfigApiTest, PutGetDelete) {
  auto res = api_.Handle(Req(bhttp::verb::put, kLevel, R"({"value": 0})"));
  ASSERT_EQ(res.result_int(), 200u) << res.body();
  auto doc = Parse(res.body());
  EXPECT_EQ(doc["value"].get_int64().value(), 0);
  EXPECT_EQ(doc["source"].get_string().value(), "console");
  EXPECT_EQ(doc["layer"].get_string().value(), "api");

  res = api_.Handle(Req(bhttp::verb::get, kLevel));
  doc = Parse(res.body());
  EXPECT_EQ(doc["value"].get_int64().value(), 0);

  // Strings are parsed like the file's values; booleans must be booleans or their words.
  res = api_.Handle(Req(bhttp::verb::put, kLevel, R"({"value": "1"})"));
  ASSERT_EQ(res.result_int(), 200u) << res.body();
  res = api_.Handle(Req(bhttp::verb::put,
                        "/api/config/otel.instrumentation.genai.capture-message-content",
                        R"({"value": false})"));
  ASSERT_EQ(res.result_int(), 200u) << res.body();
  EXPECT_EQ(config_.KeyOf(Key::kCaptureMessageContent).value, Value{false});

  res = api_.Handle(Req(bhttp::verb::delete_, kLevel));
  ASSERT_EQ(res.result_int(), 200u);
  doc = Parse(res.body());
  EXPECT_EQ(doc["source"].get_string().value(), "env");
  EXPECT_EQ(doc["value"].get_int64().value(), 2);
}

TEST_F(ConfigApiTest, BadValuesAre400AndChangeNothing) {
  struct Case {
    std::string target, body, accepted;
  };
  const Case cases[] = {
      {kLevel, R"({"value": 3})", "an integer from 0 to 2"},
      {kLevel, R"({"value": "two"})", "an integer from 0 to 2"},
      {kLevel, R"({"value": true})", "an integer from 0 to 2"},
      {kLevel, R"({"value": 1.5})", "an integer from 0 to 2"},
      {kLevel, R"({"value": null})", "an integer from 0 to 2"},
      {kLevel, R"({"val": 1})", "an integer from 0 to 2"},
      {kLevel, "not json", "an integer from 0 to 2"},
      {"/api/config/apsara.apm.inference.sglang.logging.level", R"({"value": "LOUD"})",
       "one of DEBUG,INFO,WARNING,ERROR,CRITICAL"},
      {"/api/config/otel.instrumentation.genai.capture-message-content", R"({"value": 1})",
       "true or false"},
  };
  for (const auto& c : cases) {
    auto res = api_.Handle(Req(bhttp::verb::put, c.target, c.body));
    ASSERT_EQ(res.result_int(), 400u) << c.body;
    auto doc = Parse(res.body());
    std::string key = c.target.substr(std::string_view("/api/config/").size());
    EXPECT_EQ(doc["error"]["key"].get_string().value(), key);
    EXPECT_EQ(doc["error"]["accepted"].get_string().value(), c.accepted);
    std::string_view message = doc["error"]["message"].get_string().value();
    EXPECT_NE(message.find(key), std::string_view::npos) << message;
  }
  EXPECT_EQ(config_.KeyOf(engines::vllm::keys().tracing_level).value, Value{std::int64_t{2}});
  EXPECT_EQ(config_.Status(Layer::kApi).keys, 0u);
}

TEST_F(ConfigApiTest, UnknownKeysPathsAndMethods) {
  EXPECT_EQ(
      api_.Handle(Req(bhttp::verb::put, "/api/config/no.such.key", R"({"value":1})")).result_int(),
      404u);
  EXPECT_EQ(api_.Handle(Req(bhttp::verb::get, "/api/configuration")).result_int(), 404u);
  EXPECT_EQ(api_.Handle(Req(bhttp::verb::post, kLevel, R"({"value":1})")).result_int(), 405u);
  EXPECT_EQ(api_.Handle(Req(bhttp::verb::delete_, "/api/config")).result_int(), 405u);
  auto res = api_.Handle(Req(bhttp::verb::get, "/api/config/status"));
  ASSERT_EQ(res.result_int(), 200u);
  auto doc = Parse(res.body());
  EXPECT_TRUE(doc["api"]["ok"].get_bool().value());
  EXPECT_EQ(api_.Handle(Req(bhttp::verb::get, "/api/config?x=1")).result_int(), 200u);
}

TEST_F(ConfigApiTest, TokenIsRequiredWhenSet) {
  ConfigApi guarded(&config_, nullptr, "s3cret");
  auto res = guarded.Handle(Req(bhttp::verb::get, "/api/config"));
  EXPECT_EQ(res.result_int(), 401u);
  EXPECT_EQ(res[bhttp::field::www_authenticate], R"(Bearer realm="infertel")");
  EXPECT_EQ(guarded.Handle(Req(bhttp::verb::get, "/api/config", "", "Bearer nope")).result_int(),
            401u);
  EXPECT_EQ(guarded.Handle(Req(bhttp::verb::get, "/api/config", "", "Bearer s3cretx")).result_int(),
            401u);
  EXPECT_EQ(
      guarded.Handle(Req(bhttp::verb::put, kLevel, R"({"value":0})", "Basic s3cret")).result_int(),
      401u);
  EXPECT_EQ(config_.KeyOf(engines::vllm::keys().tracing_level).value, Value{std::int64_t{2}});
  EXPECT_EQ(guarded.Handle(Req(bhttp::verb::get, "/api/config", "", "Bearer s3cret")).result_int(),
            200u);
  EXPECT_EQ(
      guarded.Handle(Req(bhttp::verb::put, kLevel, R"({"value":0})", "bearer s3cret")).result_int(),
      200u);
}

TEST_F(ConfigApiTest, TextRowsFromTheJsonMatchTheLocalOnes) {
  config_.SetApiValue(engines::vllm::keys().enabled, Value{false});  // no store: no pending restart
  config_.SetApiValue(Key::kMessageContentMaxLength, Value{std::int64_t{64}});
  auto reports = BuildReports(config_, nullptr);
  LayerStatuses statuses;
  for (std::size_t i = 0; i < kLayerCount; ++i) statuses[i] = config_.Status(static_cast<Layer>(i));
  std::vector<TextRow> rows;
  std::vector<std::string> footer;
  std::string error;
  ASSERT_TRUE(RowsFromConfigJson(ConfigJson(reports, statuses), &rows, &footer, &error)) << error;
  auto local = RowsFromReports(reports);
  ASSERT_EQ(rows.size(), local.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].key, local[i].key);
    EXPECT_EQ(rows[i].value, local[i].value) << rows[i].key;
    EXPECT_EQ(rows[i].source, local[i].source) << rows[i].key;
    EXPECT_EQ(rows[i].apply, local[i].apply);
    EXPECT_EQ(rows[i].env, local[i].env);
  }
  EXPECT_EQ(footer, StatusLines(statuses));
  std::string text = DescribeRows(rows, footer);
  EXPECT_NE(text.find("console (api)"), std::string::npos) << text;
}

}  // namespace
}  // namespace infertel::console

namespace infertel::console {
namespace {

// A 400 used to quote the whole bad value back (500 KB in, 500 KB out).
TEST_F(ConfigApiTest, BadValuesAreQuotedCutAndEscaped) {
  for (const std::string& value :
       {"\"" + std::string(500 * 1024, 'x') + "\"", "[" + std::string(100000, '1') + "]",
        std::string("\"\\u001b]0;owned\\u0007\"")}) {
    auto res = api_.Handle(Req(bhttp::verb::put, kLevel, R"({"value": )" + value + "}"));
    ASSERT_EQ(res.result_int(), 400u);
    EXPECT_LT(res.body().size(), 1024u) << res.body().substr(0, 2000);
    std::string_view message = Parse(res.body())["error"]["message"].get_string().value();
    EXPECT_EQ(message.find('\x1b'), std::string_view::npos) << message;
  }
  EXPECT_EQ(api_.stats().refused[static_cast<std::size_t>(ApiRefusal::kInvalidValue)], 3u);
}

// A number past 64 bits was answered "body must be a JSON object".
TEST_F(ConfigApiTest, HugeNumbersAreSaidToBeOutOfRange) {
  for (std::string_view n : {"99999999999999999999999999", "1e999", "-99999999999999999999999"}) {
    auto res = api_.Handle(
        Req(bhttp::verb::put, kLevel, std::string(R"({"value": )") + std::string(n) + "}"));
    ASSERT_EQ(res.result_int(), 400u);
    std::string_view message = Parse(res.body())["error"]["message"].get_string().value();
    EXPECT_EQ(message.find("must be a JSON object"), std::string_view::npos) << message;
    EXPECT_NE(message.find("out of range"), std::string_view::npos) << message;
  }
  // Within 64 bits but outside the key's range: the value and the accepted range.
  auto res = api_.Handle(Req(bhttp::verb::put, kLevel, R"({"value": 18446744073709551615})"));
  ASSERT_EQ(res.result_int(), 400u);
  std::string_view message = Parse(res.body())["error"]["message"].get_string().value();
  EXPECT_NE(message.find("an integer from 0 to 2"), std::string_view::npos) << message;
}

// Two Authorization headers used to be read as the first; now neither is.
TEST_F(ConfigApiTest, TwoAuthorizationHeadersAreRefused) {
  ConfigApi guarded(&config_, nullptr, "s3cret");
  for (ConfigApi* api : {&guarded, &api_}) {
    auto req = Req(bhttp::verb::put, kLevel, R"({"value":0})", "Bearer s3cret");
    req.insert(bhttp::field::authorization, "Bearer other");
    auto res = api->Handle(req);
    EXPECT_EQ(res.result_int(), 400u) << res.body();
    EXPECT_NE(res.body().find("more than one Authorization header"), std::string::npos);
    EXPECT_EQ(api->stats().refused[static_cast<std::size_t>(ApiRefusal::kDuplicateAuthorization)],
              1u);
  }
  EXPECT_EQ(config_.KeyOf(engines::vllm::keys().tracing_level).value, Value{std::int64_t{2}});
  EXPECT_EQ(guarded.Handle(Req(bhttp::verb::get, "/api/config")).result_int(), 401u);
  EXPECT_EQ(guarded.stats().refused[static_cast<std::size_t>(ApiRefusal::kUnauthorized)], 1u);
}

TEST_F(ConfigApiTest, LongUnknownKeysAreQuotedCut) {
  auto res = api_.Handle(Req(bhttp::verb::get, "/api/config/" + std::string(6000, 'k')));
  EXPECT_EQ(res.result_int(), 404u);
  EXPECT_LT(res.body().size(), 1024u);
}

}  // namespace
}  // namespace infertel::console
