#pragma once
// A request's latency attribution as span attributes (semconv.h, infertel's additions), and
// the gateway's part of its timeline (the exchange record). Where they go
// (docs/telemetry-reference.md, "Latency causes"):
//   entry span   infertel.cache.hit_ratio whenever the engine reported cached tokens;
//                infertel.latency.client whenever the gateway waited for the client; when the
//                request missed an objective, infertel.latency.gateway, and the cause when the
//                gateway's view alone decides it (client, gateway, engine_error).
//   engine span  (joined to its exchange) the hit ratio likewise; when the request missed, the
//                cause from every part and its evidence.

#include "analytics/latency_cause.h"
#include "core/telemetry.h"
#include "openai/exchange.h"

namespace infertel::analytics {

using Attributes = google::protobuf::RepeatedPtrField<KeyValue>;

// Whether the engine failed the exchange (a non-2xx status or stream error, unreachable, no
// answer in time): engine_error. A client that left, a refusal or a shutdown is not the
// engine's.
bool EngineFailed(const openai::Exchange& ex);

// What the gateway measured of an exchange: its duration, its own time before the engine had
// the request, the client's, the usage's token counts, the error, the objectives missed.
Timeline GatewayTimeline(const openai::Exchange& ex);

// The cause, its evidence and the gateway's and client's parts (each when known).
void AddCauseAttributes(const Timeline& t, const Attribution& a, Attributes* attrs);

// The entry span's latency attributes (above).
void AddEntryLatencyAttributes(const openai::Exchange& ex, Attributes* attrs);

}  // namespace infertel::analytics
