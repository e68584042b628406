// libFuzzer target for the gateway's SSE relay and stream observer (streams written by engines).
// Built and run by scripts/fuzz.sh (`make fuzz`).
//
// Besides memory errors it checks the relay's two promises:
// - transparency: with nothing to remove (no usage or logprobs injected by the gateway), the
//   client gets the engine's bytes exactly, whatever they are;
// - chunking does not matter: the same bytes cut into other pieces give the same output.
// The first input byte picks the operation and the options; the second the piece size.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "gateway/sse_relay.h"
#include "openai/openai.h"

namespace oa = infertel::openai;

namespace {

std::string Relay(oa::Operation op, const oa::StreamObserver::Options& options,
                  std::string_view stream, std::size_t piece) {
  oa::StreamObserver observer(op, options);
  infertel::gateway::SseRelay relay(&observer);
  std::string out;
  for (std::size_t at = 0; at < stream.size(); at += piece)
    relay.Feed(stream.substr(at, piece), &out);
  relay.Finish(&out);
  (void)observer.Finish();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const auto op = static_cast<oa::Operation>(1 + data[0] % 4);
  const std::size_t piece = 1 + data[1] % 97;
  const std::string_view stream(reinterpret_cast<const char*>(data) + 2, size - 2);
  oa::StreamObserver::Options options;
  options.capture.max_length = 1 + data[0] / 4 % 64;
  options.drop_injected_usage = data[0] & 0x40;
  options.strip_injected_logprobs = data[0] & 0x80;
  const std::string whole = Relay(op, options, stream, stream.size() + 1);
  if (Relay(op, options, stream, piece) != whole) std::abort();
  if (!options.drop_injected_usage && !options.strip_injected_logprobs && whole != stream)
    std::abort();
  return 0;
}
