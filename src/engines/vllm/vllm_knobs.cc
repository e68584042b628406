#include "engines/vllm/vllm_knobs.h"

#include "engines/vllm/vllm_keys.h"

namespace infertel::engines::vllm {
namespace {

class VllmKnobs final : public EngineKnobs {
 public:
  std::string_view engine() const override { return "vllm"; }
  std::string Unsupported(config::Key key) const override { return UnsupportedReason(key); }
  std::optional<Original> ReadOriginal(config::Key key, std::string* error) override {
    *error = UnsupportedReason(key);
    return std::nullopt;
  }
  bool Apply(config::Key key, const config::Value&, std::string* error) override {
    *error = UnsupportedReason(key);
    return false;
  }
  bool Answers(std::string*) override { return true; }  // never holds a value of ours
};

}  // namespace

std::string UnsupportedReason(config::Key key) {
  // vLLM's HTTP API (facts/vllm.md §3.1) has no endpoint that changes logging while the server
  // runs; these switches need code inside the engine process, which infertel is not.
  const Keys& k = keys();
  if (key == k.log_requests)
    return "vLLM chooses its own request logging when it starts (--enable-log-requests) and "
           "its HTTP API has no endpoint to change it while it runs; infertel runs outside the "
           "engine process. Set it on the vLLM command line. infertel's own request lines "
           "still follow this key.";
  if (key == k.log_iteration_details)
    return "vLLM's iteration detail logs are chosen when the server starts and its HTTP API "
           "has no endpoint to turn them on while it runs; infertel runs outside the engine "
           "process. Set them when starting vLLM.";
  if (key == k.log_trace_context)
    return "vLLM's log format is fixed when the server starts (its logging configuration, "
           "VLLM_LOGGING_CONFIG_PATH); infertel runs outside the engine process and cannot "
           "add TraceId and SpanId to vLLM's own log prefix. infertel's own request lines "
           "still follow this key.";
  if (key == k.logging_level)
    return "vLLM reads its log level once at start (VLLM_LOGGING_LEVEL) and its HTTP API has "
           "no endpoint to change it while it runs; infertel runs outside the engine "
           "process. Set VLLM_LOGGING_LEVEL when starting vLLM.";
  return "";
}

std::unique_ptr<EngineKnobs> MakeKnobs() { return std::make_unique<VllmKnobs>(); }

}  // namespace infertel::engines::vllm
