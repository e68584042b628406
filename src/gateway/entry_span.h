#pragma once
// Entry spans (spec M1, M2.1, M4.1): one INTERNAL span per observed OpenAI-API exchange,
// named "{operation} {model}", with the request and response attributes the gateway saw.

#include <memory>

#include "core/telemetry.h"
#include "gateway/exchange.h"
#include "pipeline/exporter.h"

namespace infertel::gateway {

// Fills *span from a finished exchange (ids, times, name, kind, attributes, status).
void BuildEntrySpan(const Exchange& ex, Span* span);

// The listener that turns every finished exchange into an entry span and hands it to the
// trace pipeline. Thread-safe; never blocks (the sink drops rather than waits).
class EntrySpanEmitter : public ExchangeListener {
 public:
  EntrySpanEmitter(pipeline::TraceSink* sink, Resource resource);
  void OnExchangeFinished(const Exchange& ex) noexcept override;

 private:
  pipeline::TraceSink* sink_;
  Resource resource_;
};

}  // namespace infertel::gateway
