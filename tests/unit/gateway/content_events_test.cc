// Content capture as log events: the strategy switch, JSON to structured AnyValue, and the
// gen_ai.client.inference.operation.details record built from an exchange.

#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

#include "config/settings.h"
#include "core/semconv.h"
#include "gateway/content_events.h"
#include "gateway/entry_span.h"

namespace infertel::gateway {

using openai::Exchange;
using openai::ExchangeListener;
using openai::Outcome;

namespace {
namespace sc = semconv;

const AnyValue* Attr(const otlp_logs::LogRecord& r, std::string_view key) {
  return FindAttr(r.attributes(), key);
}

// The value of `key` in a kvlist AnyValue; nullptr when absent.
const AnyValue* Field(const AnyValue& v, std::string_view key) {
  if (!v.has_kvlist_value()) return nullptr;
  for (const auto& kv : v.kvlist_value().values())
    if (kv.key() == key) return &kv.value();
  return nullptr;
}

class CollectingLogSink : public pipeline::LogSink {
 public:
  void Submit(LogsRequest&& req) noexcept override {
    std::lock_guard lock(mu);
    requests.push_back(std::move(req));
  }
  std::mutex mu;
  std::vector<LogsRequest> requests;
};

TEST(ContentStrategy, ParsesEverySpellingOfTheKey) {
  const auto& spec = config::Spec(config::Key::kMessageContentCaptureStrategy);
  struct Case {
    const char* text;
    ContentStrategy want;
  };
  for (const Case& c :
       {Case{"span", ContentStrategy::kSpan}, Case{"SPAN", ContentStrategy::kSpan},
        Case{"SPAN_ONLY", ContentStrategy::kSpan}, Case{"span_only", ContentStrategy::kSpan},
        Case{"event", ContentStrategy::kEvent}, Case{"Event", ContentStrategy::kEvent},
        Case{"EVENT_ONLY", ContentStrategy::kEvent},
        Case{"SPAN_AND_EVENT", ContentStrategy::kSpanAndEvent},
        Case{"span_and_event", ContentStrategy::kSpanAndEvent}}) {
    auto parsed = config::ParseValue(spec, c.text);
    ASSERT_TRUE(std::holds_alternative<config::Value>(parsed)) << c.text;
    const auto& canonical = std::get<std::string>(std::get<config::Value>(parsed));
    EXPECT_EQ(ParseContentStrategy(canonical), c.want) << c.text << " -> " << canonical;
  }
  EXPECT_TRUE(std::holds_alternative<std::string>(config::ParseValue(spec, "logs")));
  EXPECT_TRUE(std::holds_alternative<std::string>(config::ParseValue(spec, "EVENT_AND_SPAN")));
  // The default is span.
  auto settings = config::Resolve(nullptr).settings;
  EXPECT_EQ(ParseContentStrategy(settings.GetString(config::Key::kMessageContentCaptureStrategy)),
            ContentStrategy::kSpan);
  // An env value is honoured in any spelling.
  auto env = [](std::string_view n) -> std::optional<std::string> {
    if (n == "OTEL_INSTRUMENTATION_GENAI_MESSAGE_CONTENT_CAPTURE_STRATEGY") return "EVENT_ONLY";
    return std::nullopt;
  };
  auto r = config::Resolve(env);
  EXPECT_TRUE(r.errors.empty());
  EXPECT_EQ(ParseContentStrategy(r.settings.GetString(config::Key::kMessageContentCaptureStrategy)),
            ContentStrategy::kEvent);
}

TEST(JsonToAnyValue, KeepsStructureAndTypes) {
  AnyValue v;
  ASSERT_TRUE(JsonToAnyValue(
      R"({"s":"x","i":-3,"u":18446744073709551615,"d":1.5,"b":true,"n":null,"a":[1,"y",[]],"o":{}})",
      &v));
  ASSERT_TRUE(v.has_kvlist_value());
  EXPECT_EQ(Field(v, "s")->string_value(), "x");
  EXPECT_EQ(Field(v, "i")->int_value(), -3);
  EXPECT_TRUE(Field(v, "u")->has_double_value());
  EXPECT_DOUBLE_EQ(Field(v, "d")->double_value(), 1.5);
  EXPECT_TRUE(Field(v, "b")->bool_value());
  EXPECT_EQ(Field(v, "n")->value_case(), AnyValue::VALUE_NOT_SET);
  const auto& a = Field(v, "a")->array_value();
  ASSERT_EQ(a.values_size(), 3);
  EXPECT_EQ(a.values(0).int_value(), 1);
  EXPECT_EQ(a.values(1).string_value(), "y");
  EXPECT_TRUE(a.values(2).has_array_value());
  EXPECT_TRUE(Field(v, "o")->has_kvlist_value());

  AnyValue untouched;
  untouched.set_string_value("keep");
  EXPECT_FALSE(JsonToAnyValue("{\"unterminated\":", &untouched));
  EXPECT_EQ(untouched.string_value(), "keep");

  // Beyond the depth bound the rest is kept as JSON text.
  AnyValue deep;
  ASSERT_TRUE(JsonToAnyValue(R"([[[1]]])", &deep, 2));
  EXPECT_EQ(deep.array_value().values(0).array_value().values(0).string_value(), "[1]");
}

// An exchange as the gateway leaves it: request and response parsed with capture on.
Exchange ChatExchange() {
  openai::Exchange ex;
  ex.op = openai::Operation::kChat;
  openai::CaptureOptions capture;
  ex.request = openai::ParseRequest(
      ex.op,
      R"({"model":"m","max_tokens":16,"temperature":0.2,"stream":true,"messages":[
        {"role":"system","content":"Be brief."},{"role":"user","content":"hi"}]})",
      capture);
  ex.response = openai::ParseResponse(
      ex.op,
      R"({"id":"chatcmpl-1","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7,"prompt_tokens_details":{"cached_tokens":4}}})",
      capture);
  ex.trace_id = NewTraceId();
  ex.span_id = NewSpanId();
  ex.start = Stopwatch::Start();
  ex.streamed = true;
  ex.first_token_mono_ns = ex.start.mono_start_ns + 25'000'000;
  ex.end_mono_ns = ex.start.mono_start_ns + 100'000'000;
  ex.http_status = 200;
  ex.content_on_span = false;
  ex.content_on_event = true;
  return ex;
}

TEST(OperationDetailsEvent, IsStructuredPerTheGenAiConventions) {
  const openai::Exchange ex = ChatExchange();
  otlp_logs::LogRecord r;
  BuildOperationDetailsEvent(ex, &r);

  EXPECT_EQ(r.trace_id(), std::string(AsBytes(ex.trace_id)));
  EXPECT_EQ(r.span_id(), std::string(AsBytes(ex.span_id)));
  EXPECT_EQ(r.time_unix_nano(), ex.start.WallAt(ex.end_mono_ns));
  EXPECT_GT(r.observed_time_unix_nano(), 0u);
  EXPECT_EQ(r.severity_number(), otlp_logs::SEVERITY_NUMBER_INFO);
  EXPECT_FALSE(r.has_body());  // everything is in attributes

  ASSERT_NE(Attr(r, sc::kEventName), nullptr);
  EXPECT_EQ(Attr(r, sc::kEventName)->string_value(), "gen_ai.client.inference.operation.details");
  EXPECT_EQ(Attr(r, sc::kGenAiOperationName)->string_value(), "chat");
  EXPECT_EQ(Attr(r, sc::kGenAiRequestModel)->string_value(), "m");
  EXPECT_EQ(Attr(r, sc::kGenAiRequestMaxTokens)->int_value(), 16);
  EXPECT_DOUBLE_EQ(Attr(r, sc::kGenAiRequestTemperature)->double_value(), 0.2);
  EXPECT_TRUE(Attr(r, sc::kGenAiRequestStream)->bool_value());
  EXPECT_EQ(Attr(r, sc::kGenAiResponseId)->string_value(), "chatcmpl-1");
  EXPECT_EQ(Attr(r, sc::kGenAiResponseModel)->string_value(), "m");
  EXPECT_EQ(Attr(r, sc::kGenAiResponseFinishReasons)->array_value().values(0).string_value(),
            "stop");
  EXPECT_EQ(Attr(r, sc::kGenAiUsageInputTokens)->int_value(), 5);
  EXPECT_EQ(Attr(r, sc::kGenAiUsageOutputTokens)->int_value(), 2);
  EXPECT_EQ(Attr(r, sc::kGenAiUsageCacheReadInputTokens)->int_value(), 4);
  EXPECT_NEAR(Attr(r, sc::kGenAiResponseTimeToFirstChunk)->double_value(), 0.025, 1e-9);
  EXPECT_EQ(Attr(r, sc::kErrorType), nullptr);

  // Messages are structured (arrays of kvlists), never JSON strings, on events.
  const AnyValue* in = Attr(r, sc::kGenAiInputMessages);
  ASSERT_NE(in, nullptr);
  ASSERT_TRUE(in->has_array_value());
  ASSERT_EQ(in->array_value().values_size(), 2);
  const AnyValue& system = in->array_value().values(0);
  EXPECT_EQ(Field(system, "role")->string_value(), "system");  // chat history, not instructions
  const AnyValue& user = in->array_value().values(1);
  EXPECT_EQ(Field(user, "role")->string_value(), "user");
  const AnyValue& part = Field(user, "parts")->array_value().values(0);
  EXPECT_EQ(Field(part, "type")->string_value(), "text");
  EXPECT_EQ(Field(part, "content")->string_value(), "hi");
  const AnyValue* out = Attr(r, sc::kGenAiOutputMessages);
  ASSERT_NE(out, nullptr);
  ASSERT_EQ(out->array_value().values_size(), 1);
  const AnyValue& choice = out->array_value().values(0);
  EXPECT_EQ(Field(choice, "role")->string_value(), "assistant");
  EXPECT_EQ(Field(choice, "finish_reason")->string_value(), "stop");
  EXPECT_EQ(Field(Field(choice, "parts")->array_value().values(0), "content")->string_value(),
            "hello");
}

TEST(OperationDetailsEvent, CarriesErrorTypeOnFailure) {
  openai::Exchange ex = ChatExchange();
  ex.outcome = openai::Outcome::kUpstreamUnavailable;
  ex.error_type = "BadGateway";
  ex.response = {};
  otlp_logs::LogRecord r;
  BuildOperationDetailsEvent(ex, &r);
  ASSERT_NE(Attr(r, sc::kErrorType), nullptr);
  EXPECT_EQ(Attr(r, sc::kErrorType)->string_value(), "BadGateway");
  EXPECT_EQ(Attr(r, sc::kGenAiOutputMessages), nullptr);
  EXPECT_NE(Attr(r, sc::kGenAiInputMessages), nullptr);
}

TEST(ContentEventEmitter, EmitsOnlyWhenContentGoesToEvents) {
  CollectingLogSink sink;
  Resource resource;
  AddAttr(resource.mutable_attributes(), sc::kServiceName, "svc");
  ContentEventEmitter emitter(&sink, resource);

  openai::Exchange ex = ChatExchange();
  ex.content_on_event = false;  // strategy span
  emitter.OnExchangeFinished(ex);
  ex.content_on_event = true;
  ex.capture_content = false;  // capture off: no event, whatever the strategy
  emitter.OnExchangeFinished(ex);
  EXPECT_TRUE(sink.requests.empty());

  ex.capture_content = true;
  emitter.OnExchangeFinished(ex);
  ASSERT_EQ(sink.requests.size(), 1u);
  const auto& rl = sink.requests[0].resource_logs(0);
  EXPECT_EQ(FindAttr(rl.resource().attributes(), sc::kServiceName)->string_value(), "svc");
  EXPECT_EQ(rl.scope_logs(0).scope().name(), sc::kAgentScopeName);
  ASSERT_EQ(rl.scope_logs(0).log_records_size(), 1);
  EXPECT_EQ(rl.scope_logs(0).log_records(0).span_id(), std::string(AsBytes(ex.span_id)));
}

TEST(ContentEventEmitter, EntrySpanKeepsContentOnlyWhenTheStrategySaysSpan) {
  openai::Exchange ex = ChatExchange();
  Span span;
  ex.content_on_span = false;  // strategy event
  BuildEntrySpan(ex, &span);
  EXPECT_EQ(FindAttr(span.attributes(), sc::kGenAiInputMessages), nullptr);
  EXPECT_EQ(FindAttr(span.attributes(), sc::kGenAiOutputMessages), nullptr);
  EXPECT_NE(FindAttr(span.attributes(), sc::kGenAiUsageInputTokens), nullptr);

  span.Clear();
  ex.content_on_span = true;  // span or span_and_event
  BuildEntrySpan(ex, &span);
  ASSERT_NE(FindAttr(span.attributes(), sc::kGenAiInputMessages), nullptr);
  EXPECT_TRUE(FindAttr(span.attributes(), sc::kGenAiInputMessages)->has_string_value());
}

}  // namespace
}  // namespace infertel::gateway
