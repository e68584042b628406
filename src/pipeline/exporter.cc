#include "pipeline/exporter.h"

namespace infertel::pipeline {

bool IsRetryableHttpStatus(int status) {
  return status == 429 || status == 502 || status == 503 || status == 504;
}

bool IsRetryableGrpcCode(int code) {
  // grpc::StatusCode values: CANCELLED 1, DEADLINE_EXCEEDED 4, RESOURCE_EXHAUSTED 8,
  // ABORTED 10, OUT_OF_RANGE 11, UNAVAILABLE 14, DATA_LOSS 15 (the OTLP spec's retryable set).
  switch (code) {
    case 1:
    case 4:
    case 8:
    case 10:
    case 11:
    case 14:
    case 15:
      return true;
    default:
      return false;
  }
}

}  // namespace infertel::pipeline
