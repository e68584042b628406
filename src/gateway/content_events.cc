#include "gateway/content_events.h"

#include <algorithm>
#include <cctype>

#include "core/clock.h"
#include "core/semconv.h"
#include "core/static_key.h"
#include "gateway/entry_span.h"
#include "openai/json_util.h"

namespace infertel::gateway {
namespace sc = semconv;

namespace {

bool EqualsNoCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

void Convert(simdjson::dom::element e, AnyValue* out, int depth, int max_depth) {
  using simdjson::dom::element_type;
  switch (e.type()) {
    case element_type::OBJECT: {
      if (depth >= max_depth) {
        out->set_string_value(simdjson::minify(e));
        return;
      }
      simdjson::dom::object obj;
      if (e.get_object().get(obj)) return;  // a local: iterating a temporary would dangle
      auto* list = out->mutable_kvlist_value();
      for (auto field : obj) {
        auto* kv = list->add_values();
        kv->set_key(std::string(field.key));  // one allocation, not two (core/telemetry.h)
        Convert(field.value, kv->mutable_value(), depth + 1, max_depth);
      }
      return;
    }
    case element_type::ARRAY: {
      if (depth >= max_depth) {
        out->set_string_value(simdjson::minify(e));
        return;
      }
      simdjson::dom::array items;
      if (e.get_array().get(items)) return;
      auto* arr = out->mutable_array_value();
      for (auto item : items) Convert(item, arr->add_values(), depth + 1, max_depth);
      return;
    }
    case element_type::STRING: {
      std::string_view s = e.get_string().value_unsafe();
      out->set_string_value(std::string(s));
      return;
    }
    case element_type::INT64:
      out->set_int_value(e.get_int64().value_unsafe());
      return;
    case element_type::UINT64:  // above int64's range
      out->set_double_value(static_cast<double>(e.get_uint64().value_unsafe()));
      return;
    case element_type::DOUBLE:
      out->set_double_value(e.get_double().value_unsafe());
      return;
    case element_type::BOOL:
      out->set_bool_value(e.get_bool().value_unsafe());
      return;
    case element_type::NULL_VALUE:
      out->Clear();
      return;
  }
}

// A GenAI message array as a structured attribute; as its JSON text if it cannot be parsed
// (it is built by our own writer, so that would be a bug, but the content is not lost).
void AddMessages(google::protobuf::RepeatedPtrField<KeyValue>* attrs, const StaticKey& key,
                 const std::string& json) {
  if (json.empty()) return;
  auto* kv = AddKey(attrs, key);
  if (!JsonToAnyValue(json, kv->mutable_value())) kv->mutable_value()->set_string_value(json);
}

}  // namespace

ContentStrategy ParseContentStrategy(std::string_view value) {
  if (EqualsNoCase(value, "event")) return ContentStrategy::kEvent;
  if (EqualsNoCase(value, "span_and_event")) return ContentStrategy::kSpanAndEvent;
  return ContentStrategy::kSpan;
}

bool JsonToAnyValue(std::string_view json, AnyValue* out, int max_depth) {
  try {
    openai::internal::ParserLease lease;
    simdjson::dom::element root;
    if (lease.parser().parse(json.data(), json.size()).get(root)) return false;
    AnyValue value;
    Convert(root, &value, 0, max_depth);
    *out = std::move(value);
    return true;
  } catch (...) {  // allocation failure
    return false;
  }
}

void BuildOperationDetailsEvent(const openai::Exchange& ex, otlp_logs::LogRecord* record) {
  record->set_time_unix_nano(ex.start.WallAt(std::max(ex.end_mono_ns, ex.start.mono_start_ns)));
  record->set_observed_time_unix_nano(WallNanos());
  record->set_severity_number(otlp_logs::SEVERITY_NUMBER_INFO);
  record->set_trace_id(std::string(AsBytes(ex.trace_id)));
  record->set_span_id(std::string(AsBytes(ex.span_id)));
  record->set_flags(1);  // sampled: the entry span it belongs to is always exported

  auto* a = record->mutable_attributes();
  const auto& rq = ex.request;
  const auto& rs = ex.response;
  AddAttr(a, Key<sc::kEventName>(), sc::kEventInferenceOperationDetails);
  AddAttr(a, Key<sc::kGenAiOperationName>(), openai::OperationName(ex.op));
  AddRequestParameters(rq, a);
  if (rq.parsed) AddAttr(a, Key<sc::kGenAiRequestStream>(), rq.stream);
  if (rs.id) AddAttr(a, Key<sc::kGenAiResponseId>(), *rs.id);
  if (rs.model) AddAttr(a, Key<sc::kGenAiResponseModel>(), *rs.model);
  AddFinishReasons(rs, a);
  if (ex.streamed && ex.first_token_mono_ns > ex.start.mono_start_ns) {
    AddAttr(a, Key<sc::kGenAiResponseTimeToFirstChunk>(),
            static_cast<double>(ex.first_token_mono_ns - ex.start.mono_start_ns) / 1e9);
  }
  if (rs.usage.input_tokens) AddAttr(a, Key<sc::kGenAiUsageInputTokens>(), *rs.usage.input_tokens);
  if (rs.usage.output_tokens)
    AddAttr(a, Key<sc::kGenAiUsageOutputTokens>(), *rs.usage.output_tokens);
  if (rs.usage.cached_tokens)
    AddAttr(a, Key<sc::kGenAiUsageCacheReadInputTokens>(), *rs.usage.cached_tokens);
  if (ex.outcome != openai::Outcome::kOk) {
    AddAttr(a, Key<sc::kErrorType>(),
            ex.error_type.empty() ? std::string_view("_OTHER") : ex.error_type);
  }
  if (ex.capture_content) {
    AddMessages(a, Key<sc::kGenAiInputMessages>(), rq.input_messages_json);
    AddMessages(a, Key<sc::kGenAiOutputMessages>(), rs.output_messages_json);
  }
}

ContentEventEmitter::ContentEventEmitter(pipeline::LogSink* sink, Resource resource)
    : sink_(sink), resource_(std::move(resource)) {}

void ContentEventEmitter::OnExchangeFinished(const openai::Exchange& ex) noexcept {
  if (!ex.content_on_event || !ex.capture_content) return;
  try {
    LogsRequest req;
    auto* rl = req.add_resource_logs();
    *rl->mutable_resource() = resource_;
    auto* sl = rl->add_scope_logs();
    sl->mutable_scope()->set_name(std::string(sc::kAgentScopeName));
    BuildOperationDetailsEvent(ex, sl->add_log_records());
    sink_->Submit(std::move(req));
  } catch (...) {  // allocation failure: the event is lost, the exchange is not
  }
}

}  // namespace infertel::gateway
