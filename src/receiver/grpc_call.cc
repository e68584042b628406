#include "receiver/grpc_call.h"

#include <fmt/format.h>

#include <algorithm>

#include "receiver/frontends.h"

namespace infertel::receiver::internal {
namespace {

// RFC 9113 §6.5.2: a field counts its name, its value and 32 bytes.
constexpr std::size_t kFieldOverhead = 32;

// application/grpc, application/grpc+proto and their parameters; not +json or other codecs.
bool IsGrpcProto(std::string_view content_type) {
  const std::string_view type = content_type.substr(0, content_type.find(';'));
  return type == "application/grpc" || type == "application/grpc+proto";
}

nghttp2_nv Field(const std::pair<std::string, std::string>& f) {
  return nghttp2_nv{reinterpret_cast<std::uint8_t*>(const_cast<char*>(f.first.data())),
                    reinterpret_cast<std::uint8_t*>(const_cast<char*>(f.second.data())),
                    f.first.size(), f.second.size(), NGHTTP2_NV_FLAG_NONE};
}

std::vector<nghttp2_nv> Fields(const std::vector<std::pair<std::string, std::string>>& fields) {
  std::vector<nghttp2_nv> nv;
  nv.reserve(fields.size());
  for (const auto& f : fields) nv.push_back(Field(f));
  return nv;
}

// grpc-status, grpc-message and what goes with them, in the trailers (or Trailers-Only).
void AddStatusFields(const GrpcAnswer& a, std::vector<std::pair<std::string, std::string>>* out) {
  out->emplace_back("grpc-status", std::to_string(a.grpc_status));
  if (!a.message.empty()) out->emplace_back("grpc-message", PercentEncode(a.message));
  if (a.retry_info) {
    static constexpr auto kRetryInfo = RetryInfoBytes(kRetryAfterSeconds);
    out->emplace_back(std::string(kRetryInfoTrailer),
                      Base64Unpadded(std::string_view(kRetryInfo.data(), kRetryInfo.size())));
  }
  if (a.accept_encoding) out->emplace_back("grpc-accept-encoding", "identity,gzip");
}

}  // namespace

bool BufferBudget::Take(std::size_t n) noexcept {
  std::size_t used = used_.load(std::memory_order_relaxed);
  do {
    if (used + n > max_) return false;
  } while (!used_.compare_exchange_weak(used, used + n, std::memory_order_relaxed));
  return true;
}

std::optional<Signal> SignalForGrpcPath(std::string_view path) {
  if (path == "/opentelemetry.proto.collector.trace.v1.TraceService/Export") return Signal::kTraces;
  if (path == "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export")
    return Signal::kMetrics;
  if (path == "/opentelemetry.proto.collector.logs.v1.LogsService/Export") return Signal::kLogs;
  return std::nullopt;
}

void GrpcCall::AddHeader(std::string_view name, std::string_view value) {
  if (header_overflow_) return;
  header_bytes_ += name.size() + value.size() + kFieldOverhead;
  if (header_bytes_ > max_header_list_) {
    header_overflow_ = true;
    return;
  }
  if (name == ":method")
    method_ = value;
  else if (name == ":path")
    path_ = value;
  else if (name == "content-type")
    content_type_ = value;
  else if (name == "grpc-encoding")
    encoding_ = value;
  else if (name == "grpc-timeout")
    timeout_ = value, has_timeout_ = true;
}

std::optional<GrpcCall::Refusal> GrpcCall::CheckHeaders(GrpcClock::time_point now) {
  auto refuse = [](GrpcRefusal reason, int code, std::string message) {
    GrpcAnswer a = GrpcAnswer::Status(code, std::move(message));
    a.stop_request = true;
    return Refusal{reason, std::move(a)};
  };
  if (header_overflow_)
    return refuse(GrpcRefusal::kHeaderList, kGrpcResourceExhausted,
                  fmt::format("header list larger than {} bytes", max_header_list_));
  if (!IsGrpcProto(content_type_)) {
    // Not a gRPC request at all: HTTP's answer (PROTOCOL-HTTP2.md: 415).
    Refusal r = refuse(GrpcRefusal::kContentType, kGrpcInternal, "");
    r.answer.http_status = 415;
    return r;
  }
  signal_ = SignalForGrpcPath(path_);
  if (method_ != "POST" || !signal_)
    return refuse(GrpcRefusal::kMethod, kGrpcUnimplemented,
                  fmt::format("unknown method {} {}", method_, path_.substr(0, 200)));
  if (!encoding_.empty() && encoding_ != "identity" && encoding_ != "gzip") {
    Refusal r = refuse(GrpcRefusal::kEncoding, kGrpcUnimplemented,
                       fmt::format("grpc-encoding {} is not supported", encoding_.substr(0, 100)));
    r.answer.accept_encoding = true;
    return r;
  }
  gzip_ = encoding_ == "gzip";
  if (has_timeout_) {
    const auto timeout = ParseGrpcTimeout(timeout_);
    if (!timeout)
      return refuse(GrpcRefusal::kMalformed, kGrpcInternal,
                    fmt::format("malformed grpc-timeout '{}'", timeout_.substr(0, 20)));
    // A deadline beyond what the clock holds is no deadline.
    if (*timeout < GrpcClock::time_point::max() - now)
      deadline_ = now + std::chrono::duration_cast<GrpcClock::duration>(*timeout);
  }
  return std::nullopt;
}

void GrpcCall::SetAnswer(const GrpcAnswer& a) {
  header_fields_.clear();
  trailer_fields_.clear();
  header_fields_.emplace_back(":status", std::to_string(a.http_status));
  has_body_ = false;
  if (a.http_status == 200) {
    header_fields_.emplace_back("content-type", "application/grpc");
    if (a.grpc_status != kGrpcOk) {
      AddStatusFields(a, &header_fields_);  // Trailers-Only
    } else {
      has_body_ = true;
      const auto n = static_cast<std::uint32_t>(a.body.size());
      data_.clear();
      data_.reserve(5 + a.body.size());
      data_.push_back('\0');  // not compressed
      for (int shift : {24, 16, 8, 0}) data_.push_back(static_cast<char>((n >> shift) & 0xff));
      data_.append(a.body);
      data_sent_ = 0;
      AddStatusFields(a, &trailer_fields_);
    }
  }
  headers_nv_ = Fields(header_fields_);
  trailers_nv_ = Fields(trailer_fields_);
}

std::size_t GrpcCall::ReadBody(std::uint8_t* dst, std::size_t max, bool* eof) {
  const std::size_t n = std::min(max, data_.size() - data_sent_);
  std::copy_n(data_.data() + data_sent_, n, dst);
  data_sent_ += n;
  *eof = data_sent_ == data_.size();
  return n;
}

}  // namespace infertel::receiver::internal
