#pragma once
// The exporter the in-process pipeline benchmarks end in: it encodes each batch as the gRPC
// exporter's codec does, counts the bytes, and sends nothing.

#include <atomic>
#include <cstddef>
#include <string>
#include <string_view>

#include "core/telemetry.h"
#include "pipeline/exporter.h"

namespace infertel::bench {

class EncodingExporter final : public pipeline::TraceExporter {
 public:
  std::string_view Name() const noexcept override { return "encode"; }
  pipeline::ExportResult Export(const TracesRequest& r) noexcept override {
    buf_.clear();
    r.SerializeToString(&buf_);
    bytes.fetch_add(buf_.size(), std::memory_order_relaxed);
    return pipeline::ExportResult::Ok();
  }
  std::atomic<std::size_t> bytes{0};

 private:
  std::string buf_;
};

}  // namespace infertel::bench
