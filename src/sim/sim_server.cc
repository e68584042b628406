#include "sim/sim_server.h"

#include <simdjson.h>
#include <unistd.h>

#include <algorithm>

#include "sim/http_server.h"
#include "sim/vllm/vllm_metrics.h"
#include "sim/vllm/vllm_surface.h"
#include "sim/vllm/vllm_tracing.h"

namespace infertel::sim {

struct SimServer::Impl {
  // Destroyed bottom-up: the engine (whose pending callbacks hold executors of the server's
  // io_context and feed the metrics and the span processor) must go before the HTTP server,
  // the metrics and the span processor.
  std::unique_ptr<BatchSpanProcessor> spans;
  std::unique_ptr<VllmMetrics> metrics;
  std::unique_ptr<HttpServer> http;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<VllmSurface> surface;
  std::string kv_role;
};

namespace {

bool ParseDetailedTraces(const std::string& text, DetailedTraces* out, std::string* error) {
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t comma = text.find(',', pos);
    std::string v = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (v == "model") {
      out->forward = true;
    } else if (v == "worker") {
      out->execute = true;
    } else if (v == "all") {
      out->forward = out->execute = true;
    } else {
      *error = "--collect-detailed-traces: invalid value '" + v + "' (model, worker, all)";
      return false;
    }
    out->scheduler = true;
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return true;
}

bool ResolveKvRole(const SimOptions& o, std::string* role, std::string* error) {
  *role = o.kv_role;
  if (!o.kv_transfer_config.empty()) {
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    if (parser.parse(o.kv_transfer_config).get(doc) != simdjson::SUCCESS || !doc.is_object()) {
      *error = "--kv-transfer-config must be a JSON object";
      return false;
    }
    std::string_view r;
    if (doc["kv_role"].get_string().get(r) == simdjson::SUCCESS) {
      if (!role->empty() && *role != r) {
        *error = "--kv-role and --kv-transfer-config disagree on kv_role";
        return false;
      }
      *role = std::string(r);
    }
  }
  if (!role->empty() && *role != "kv_producer" && *role != "kv_consumer" && *role != "kv_both") {
    *error = "kv_role must be kv_producer, kv_consumer or kv_both, got '" + *role + "'";
    return false;
  }
  return true;
}

}  // namespace

std::unique_ptr<SimServer> SimServer::Start(const SimOptions& options, std::string* error) {
  if (options.engine != "vllm") {
    *error = "engine '" + options.engine + "' is not simulated yet (supported: vllm)";
    return nullptr;
  }
  if (options.engine_version != "v1" && options.engine_version != "v0") {
    *error = "--engine-version must be v1 or v0";
    return nullptr;
  }
  const bool v0 = options.engine_version == "v0";
  int major = 0, minor = 0;
  if (!ParseVllmVersion(options.vllm_version, &major, &minor)) {
    *error = "--vllm-version must look like 0.11.0, got '" + options.vllm_version + "'";
    return nullptr;
  }
  DetailedTraces detailed;
  if (!options.collect_detailed_traces.empty()) {
    if (options.otlp_traces_endpoint.empty()) {
      *error = "--collect-detailed-traces requires --otlp-traces-endpoint to be set";
      return nullptr;
    }
    if (!ParseDetailedTraces(options.collect_detailed_traces, &detailed, error)) return nullptr;
  }
  std::string kv_role;
  if (!ResolveKvRole(options, &kv_role, error)) return nullptr;
  const SimEnvFn env = options.env ? options.env : ProcessEnv();

  std::unique_ptr<SimServer> s(new SimServer());
  s->impl_ = std::make_unique<Impl>();
  Impl& impl = *s->impl_;
  impl.kv_role = kv_role;
  if (!options.otlp_traces_endpoint.empty()) {
    auto cfg = SpanExportConfigFromEnv(options.otlp_traces_endpoint, env, error);
    if (!cfg) return nullptr;
    impl.spans = std::make_unique<BatchSpanProcessor>(
        std::move(cfg->exporter), BuildVllmResource(env, static_cast<int>(getpid())),
        std::string(v0 ? kVllmScopeV0 : kVllmScopeV1), cfg->batch);
  }
  EngineConfig ec = options.engine_config;
  // A sequence longer than the whole KV cache could never be scheduled; vLLM refuses to start
  // in that case, the simulator shortens the context length instead so that small caches
  // (for preemption tests) need no second flag.
  ec.max_model_len = std::max(
      1, std::min(ec.max_model_len, std::max(1, ec.num_kv_blocks) * std::max(1, ec.block_size)));
  impl.engine = std::make_unique<Engine>(ec);
  VllmMetricsOptions mo;
  mo.model_name = options.model;
  mo.v0 = v0;
  mo.version_major = major;
  mo.version_minor = minor;
  mo.show_hidden_metrics_for_version = options.show_hidden_metrics_for_version;
  mo.max_model_len = impl.engine->config().max_model_len;
  mo.block_size = impl.engine->config().block_size;
  mo.num_gpu_blocks = impl.engine->config().num_kv_blocks;
  impl.metrics = std::make_unique<VllmMetrics>(impl.engine.get(), mo);
  impl.engine->SetObserver(impl.metrics.get());
  VllmSurfaceOptions vo;
  vo.model = options.model;
  vo.enable_prompt_tokens_details = options.enable_prompt_tokens_details;
  vo.v0 = v0;
  vo.vllm_version = options.vllm_version;
  vo.metrics = impl.metrics.get();
  vo.spans = impl.spans.get();
  vo.detailed = detailed;
  impl.surface = std::make_unique<VllmSurface>(impl.engine.get(), vo);
  VllmSurface* surface = impl.surface.get();
  impl.engine->Start();
  const bool drop_context = options.drop_trace_context;
  impl.http = HttpServer::Start(
      options.host, options.port, options.io_threads,
      [surface, drop_context](HttpConnection& c, HttpRequest& r) {
        if (drop_context) {
          r.erase("traceparent");
          r.erase("tracestate");
        }
        return surface->Handle(c, r);
      },
      error);
  if (!impl.http) {
    impl.engine->Stop();
    if (impl.spans) impl.spans->Shutdown();
    return nullptr;
  }
  return s;
}

SimServer::~SimServer() { Stop(); }

std::uint16_t SimServer::port() const { return impl_->http->port(); }

Engine& SimServer::engine() { return *impl_->engine; }

const std::string& SimServer::kv_role() const { return impl_->kv_role; }

void SimServer::Stop() {
  if (!impl_) return;
  // The HTTP side first: no handler may touch the engine once it is stopped. Then the
  // engine, so that no span can arrive after the final flush.
  if (impl_->http) impl_->http->Stop();
  if (impl_->engine) impl_->engine->Stop();
  if (impl_->spans) impl_->spans->Shutdown();
}

}  // namespace infertel::sim
