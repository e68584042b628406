#pragma once
// Content capture as log events (spec C2, capture strategy `event` / `span_and_event`): one
// `gen_ai.client.inference.operation.details` log record per exchange, structured as the
// OpenTelemetry GenAI conventions define it, carrying the entry span's trace and span ids so
// that a backend can join it to the span.

#include <string_view>

#include "core/telemetry.h"
#include "openai/exchange.h"
#include "pipeline/exporter.h"

namespace infertel::gateway {

// Where captured content goes, from the canonical values of
// otel.instrumentation.genai.message-content.capture-strategy (config/settings.cc maps the
// SPAN_ONLY / EVENT_ONLY / SPAN_AND_EVENT spellings onto them).
enum class ContentStrategy { kSpan, kEvent, kSpanAndEvent };
// "span" | "event" | "span_and_event" (any case); anything else is kSpan, the default.
ContentStrategy ParseContentStrategy(std::string_view value);

// Converts JSON text to a structured AnyValue: object → kvlist, array → array, integers that
// fit int64 → int, other numbers → double, null → an empty AnyValue. Nesting deeper than
// `max_depth` is kept as its JSON text (a string). False, and *out untouched, when `json` is
// not valid JSON.
bool JsonToAnyValue(std::string_view json, AnyValue* out, int max_depth = 32);

// Fills *record with the event of a finished exchange: event name (as the `event.name`
// attribute: the OTLP protos in use have no LogRecord.event_name), time, severity INFO, the
// entry span's ids, gen_ai.operation.name, request parameters, response id/model/finish
// reasons, usage, time to first chunk, error.type, and, when content was captured,
// gen_ai.input.messages / gen_ai.output.messages as structured values.
//
// System and developer messages stay in gen_ai.input.messages: the OpenAI chat API sends them
// as part of the chat history, for which the conventions say not to use
// gen_ai.system_instructions.
void BuildOperationDetailsEvent(const openai::Exchange& ex, otlp_logs::LogRecord* record);

// The listener that emits the event for every exchange whose content goes to events
// (Exchange::content_on_event with capture on) into the log pipeline. Thread-safe; never
// blocks (the sink drops rather than waits).
class ContentEventEmitter : public openai::ExchangeListener {
 public:
  ContentEventEmitter(pipeline::LogSink* sink, Resource resource);
  void OnExchangeFinished(const openai::Exchange& ex) noexcept override;

 private:
  pipeline::LogSink* sink_;
  Resource resource_;
};

}  // namespace infertel::gateway
