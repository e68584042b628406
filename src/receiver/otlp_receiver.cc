#include "receiver/otlp_receiver.h"

#include "receiver/frontends.h"

namespace infertel::receiver {

OtlpReceiver::OtlpReceiver(OtlpReceiverOptions options, ReceiverSinks sinks)
    : options_(std::move(options)), ingestor_(sinks, &stats_, options_.span_limits) {}

OtlpReceiver::~OtlpReceiver() { Stop(); }

bool OtlpReceiver::Start(std::string* error) {
  if (!options_.grpc_address.empty()) {
    grpc_ = internal::GrpcFrontend::Start(options_, &ingestor_, &grpc_stats_, error);
    if (!grpc_) return false;
    grpc_port_ = grpc_->port();
  }
  if (!options_.http_address.empty()) {
    http_ = internal::HttpFrontend::Start(options_, &ingestor_, error);
    if (!http_) {
      Stop();
      return false;
    }
    http_port_ = http_->port();
  }
  return true;
}

void OtlpReceiver::Stop() {
  if (grpc_) grpc_->Stop();
  if (http_) http_->Stop();
  grpc_.reset();
  http_.reset();
  grpc_port_ = 0;
  http_port_ = 0;
}

}  // namespace infertel::receiver
