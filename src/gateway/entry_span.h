#pragma once
// Entry spans (spec M1, M2.1, M4.1): one INTERNAL span per observed OpenAI-API exchange,
// named "{operation} {model}", with the request and response attributes the gateway saw.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/telemetry.h"
#include "engines/profile.h"
#include "openai/exchange.h"
#include "pipeline/exporter.h"
#include "pipeline/held.h"

namespace infertel::gateway {

// What an entry span needs to know of the engine beyond the exchange itself.
using engines::EngineFacts;

using Attributes = google::protobuf::RepeatedPtrField<KeyValue>;

// The request's model and sampling parameters (n, temperature, top_p, top_k, max_tokens), those
// it had, as the entry span and the inference event both carry them.
void AddRequestParameters(const openai::RequestInfo& rq, Attributes* a);
// The response's finish reasons, one per choice, as an array attribute (none without any).
void AddFinishReasons(const openai::ResponseInfo& rs, Attributes* a);

// Fills *span from a finished exchange (ids, times, name, kind, attributes, status): the common
// attributes (spec M2.1) as the engine's profile shapes them, then the engine's own (M4.1).
void BuildEntrySpan(const openai::Exchange& ex, Span* span, const EngineFacts& engine = {});

// The listener that turns every finished exchange into an entry span and hands it to the
// trace pipeline. Thread-safe; never blocks (the sink drops rather than waits).
//
// Each span is built on the arena of its own held request, under a resource and scope made
// once and borrowed by every request (pipeline/held.h): no copy of the resource per span,
// no heap objects to free one by one after the export, and the batch merger folds the
// requests by the identity of their shared headers without serializing them.
class EntrySpanEmitter : public openai::ExchangeListener {
 public:
  EntrySpanEmitter(pipeline::TraceSink* sink, Resource resource);
  void OnExchangeFinished(const openai::Exchange& ex) noexcept override;
  // What the engine behind `upstream` said about itself (its profile's ReadFacts); until then
  // nothing is known. Any thread.
  void SetEngineFacts(const std::string& upstream, EngineFacts facts);

 private:
  pipeline::TraceSink* sink_;
  // The one resource block, with its one scope block, that every entry span's request
  // borrows; never changed after construction.
  pipeline::Held<TracesRequest> header_;
  std::mutex facts_mu_;  // guards facts_; written once per upstream, read per exchange of an engine
                         // with facts
  std::map<std::string, EngineFacts, std::less<>> facts_;
};

}  // namespace infertel::gateway
