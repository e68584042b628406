#pragma once
// A span read back from the store (its attributes and events as JSON text) in the form the
// analytics read (analytics/explain.h): `infertel traces --explain` and `infertel slo`.

#include "analytics/explain.h"
#include "export/sqlite/sqlite_store.h"

namespace infertel {

analytics::TraceSpan ToTraceSpan(const exporting::StoredSpan& s);

}  // namespace infertel
