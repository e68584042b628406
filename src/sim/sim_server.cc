#include "sim/sim_server.h"

#include <algorithm>

#include "sim/http_server.h"
#include "sim/vllm/vllm_surface.h"

namespace infertel::sim {

struct SimServer::Impl {
  // Destroyed bottom-up: the engine (whose pending callbacks hold executors of the server's
  // io_context) must go before the HTTP server and its io_context.
  std::unique_ptr<HttpServer> http;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<VllmSurface> surface;
};

std::unique_ptr<SimServer> SimServer::Start(const SimOptions& options, std::string* error) {
  if (options.engine != "vllm") {
    *error = "engine '" + options.engine + "' is not simulated yet (supported: vllm)";
    return nullptr;
  }
  if (options.engine_version != "v1" && options.engine_version != "v0") {
    *error = "--engine-version must be v1 or v0";
    return nullptr;
  }
  std::unique_ptr<SimServer> s(new SimServer());
  s->impl_ = std::make_unique<Impl>();
  Impl& impl = *s->impl_;
  EngineConfig ec = options.engine_config;
  // A sequence longer than the whole KV cache could never be scheduled; vLLM refuses to start
  // in that case, the simulator shortens the context length instead so that small caches
  // (for preemption tests) need no second flag.
  ec.max_model_len = std::max(
      1, std::min(ec.max_model_len, std::max(1, ec.num_kv_blocks) * std::max(1, ec.block_size)));
  impl.engine = std::make_unique<Engine>(ec);
  VllmSurfaceOptions vo;
  vo.model = options.model;
  vo.enable_prompt_tokens_details = options.enable_prompt_tokens_details;
  vo.v0 = options.engine_version == "v0";
  impl.surface = std::make_unique<VllmSurface>(impl.engine.get(), vo);
  VllmSurface* surface = impl.surface.get();
  impl.engine->Start();
  impl.http = HttpServer::Start(
      options.host, options.port, options.io_threads,
      [surface](HttpConnection& c, HttpRequest& r) { return surface->Handle(c, r); }, error);
  if (!impl.http) {
    impl.engine->Stop();
    return nullptr;
  }
  return s;
}

SimServer::~SimServer() { Stop(); }

std::uint16_t SimServer::port() const { return impl_->http->port(); }

Engine& SimServer::engine() { return *impl_->engine; }

void SimServer::Stop() {
  if (!impl_) return;
  // The HTTP side first: no handler may touch the engine once it is stopped.
  if (impl_->http) impl_->http->Stop();
  if (impl_->engine) impl_->engine->Stop();
}

}  // namespace infertel::sim
