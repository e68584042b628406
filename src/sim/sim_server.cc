#include "sim/sim_server.h"

#include <simdjson.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "sim/http_server.h"
#include "sim/sglang/sglang_metrics.h"
#include "sim/sglang/sglang_surface.h"
#include "sim/sglang/sglang_tracing.h"
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
  std::unique_ptr<SglangMetrics> sg_metrics;
  std::unique_ptr<HttpServer> http;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<VllmSurface> surface;
  std::unique_ptr<SglangSurface> sg_surface;
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
  if (options.engine == "sglang") return StartSglang(options, error);
  if (options.engine != "vllm") {
    *error = "engine '" + options.engine + "' is not simulated (supported: vllm, sglang)";
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

namespace {

// The SGLang flags checked as SGLang's argument parser checks them.
bool CheckSglangFlags(const SglangSimOptions& f, SglangVersion* version, std::string* error) {
  if (!ParseSglangVersion(f.version, version)) {
    *error = "--sglang-version must look like 0.5.20, got '" + f.version + "'";
    return false;
  }
  if (f.enable_trace && !SglangEra(*version).tracing) {
    // Releases before native tracing do not know the flag.
    *error = "unrecognized arguments: --enable-trace (SGLang " + f.version + " has no tracing)";
    return false;
  }
  if (f.disaggregation_mode != "null" && f.disaggregation_mode != "prefill" &&
      f.disaggregation_mode != "decode") {
    *error = "--disaggregation-mode must be null, prefill or decode";
    return false;
  }
  if (f.tp_size < 1 || f.stream_interval < 1 || f.decode_log_interval < 1) {
    *error = "--tp-size, --stream-interval and --decode-log-interval must be at least 1";
    return false;
  }
  if (f.log_requests_level > 3) {
    *error = "--log-requests-level must be 0, 1, 2 or 3";
    return false;
  }
  return true;
}

// An integer from the environment, else `def`.
int EnvInt(const SimEnvFn& env, std::string_view name, int def) {
  auto v = env(name);
  if (!v || v->empty()) return def;
  try {
    return std::stoi(*v);
  } catch (...) {
    return def;
  }
}

// SGLang's span processor: its own delay and batch size for the BatchSpanProcessor. Null with
// *error set when the exporter's configuration is refused.
std::unique_ptr<BatchSpanProcessor> SglangSpans(const SimOptions& options, const SimEnvFn& env,
                                                std::string* error) {
  const SglangSimOptions& f = options.sglang;
  std::string endpoint = !f.otlp_traces_endpoint.empty()         ? f.otlp_traces_endpoint
                         : !options.otlp_traces_endpoint.empty() ? options.otlp_traces_endpoint
                                                                 : "localhost:4317";
  auto cfg = SpanExportConfigFromEnv(endpoint, env, error);
  if (!cfg) return nullptr;
  cfg->batch.schedule_delay =
      std::chrono::milliseconds(EnvInt(env, "SGLANG_OTLP_EXPORTER_SCHEDULE_DELAY_MILLIS", 500));
  cfg->batch.max_export_batch_size = static_cast<std::size_t>(
      std::max(1, EnvInt(env, "SGLANG_OTLP_EXPORTER_MAX_EXPORT_BATCH_SIZE", 64)));
  cfg->batch.max_queue_size = std::max(cfg->batch.max_queue_size, cfg->batch.max_export_batch_size);
  return std::make_unique<BatchSpanProcessor>(std::move(cfg->exporter), BuildSglangResource(env),
                                              std::string(kSglangScope), cfg->batch);
}

SglangMetricsOptions SglangMetricsOptionsFor(const SglangSimOptions& f, const SglangEra& era,
                                             const std::string& served, const Engine& engine,
                                             const SglangTraceStyle& style) {
  const EngineConfig& ec = engine.config();
  SglangMetricsOptions mo;
  mo.era = era.metrics;
  mo.model_name = served;
  mo.engine_type = f.disaggregation_mode == "null" ? "unified" : f.disaggregation_mode;
  mo.tp_size = f.tp_size;
  mo.all_schedulers = f.enable_metrics_for_all_schedulers;
  mo.decode_log_interval = f.decode_log_interval;
  mo.max_total_num_tokens = ec.num_kv_blocks * ec.block_size;
  mo.max_running_requests = ec.max_num_seqs;
  mo.context_len = ec.max_model_len;
  mo.spec = !f.speculative_algorithm.empty();
  mo.scheduler_pids = style.scheduler_tids;
  return mo;
}

}  // namespace

std::unique_ptr<SimServer> SimServer::StartSglang(const SimOptions& options, std::string* error) {
  const SglangSimOptions& f = options.sglang;
  SglangVersion version;
  if (!CheckSglangFlags(f, &version, error)) return nullptr;
  const SglangEra era(version);
  const SimEnvFn env = options.env ? options.env : ProcessEnv();
  const std::string served = f.served_model_name.empty() ? options.model : f.served_model_name;

  std::unique_ptr<SimServer> s(new SimServer());
  s->impl_ = std::make_unique<Impl>();
  Impl& impl = *s->impl_;
  impl.kv_role = f.disaggregation_mode == "null" ? "" : f.disaggregation_mode;
  if (f.enable_trace && !(impl.spans = SglangSpans(options, env, error))) return nullptr;
  EngineConfig ec = options.engine_config;
  ec.max_model_len = std::max(
      1, std::min(ec.max_model_len, std::max(1, ec.num_kv_blocks) * std::max(1, ec.block_size)));
  ec.record_steps = f.enable_trace || f.enable_metrics;
  if (!f.speculative_algorithm.empty())
    ec.spec_num_draft_tokens = std::max(1, f.speculative_num_draft_tokens - 1);
  impl.engine = std::make_unique<Engine>(ec);

  const int pid = static_cast<int>(getpid());
  SglangTraceStyle style;
  style.era = era;
  style.host_id = SglangHostId();
  style.tokenizer_tid = pid;
  style.scheduler_tids.clear();
  for (int r = 0; r < f.tp_size; ++r) style.scheduler_tids.push_back(pid + 1 + r);
  style.overlap_schedule = !f.disable_overlap_schedule;
  if (f.enable_metrics) {
    impl.sg_metrics = std::make_unique<SglangMetrics>(
        impl.engine.get(), SglangMetricsOptionsFor(f, era, served, *impl.engine, style));
    impl.engine->SetObserver(impl.sg_metrics.get());
  }

  SglangSurfaceOptions so;
  so.served_model_name = served;
  so.model_path = options.model;
  so.host = options.host;
  so.port = options.port;
  so.flags = f;
  // What /server_info reports: the flag as given (either spelling), else SGLang's default.
  so.flags.otlp_traces_endpoint =
      !f.otlp_traces_endpoint.empty() ? f.otlp_traces_endpoint : options.otlp_traces_endpoint;
  so.version = version;
  so.metrics = impl.sg_metrics.get();
  so.spans = impl.spans.get();
  so.style = style;
  so.env = env;
  so.log_sink = options.log_sink;
  so.initial_trace_level = era.trace_level_env ? EnvInt(env, "SGLANG_TRACE_LEVEL", 3) : 3;
  impl.sg_surface = std::make_unique<SglangSurface>(impl.engine.get(), so);
  SglangSurface* surface = impl.sg_surface.get();
  impl.engine->Start();
  impl.http = HttpServer::Start(
      options.host, options.port, options.io_threads,
      [surface](HttpConnection& c, HttpRequest& r) { return surface->Handle(c, r); }, error);
  if (!impl.http) {
    impl.engine->Stop();
    if (impl.spans) impl.spans->Shutdown();
    return nullptr;
  }
  surface->set_port(impl.http->port());
  return s;
}

SimServer::~SimServer() { Stop(); }

std::uint16_t SimServer::port() const { return impl_->http->port(); }

Engine& SimServer::engine() { return *impl_->engine; }

const std::string& SimServer::kv_role() const { return impl_->kv_role; }

int SimServer::sglang_trace_level() const {
  return impl_->sg_surface ? impl_->sg_surface->trace_level() : -1;
}

void SimServer::Drain(std::chrono::milliseconds timeout) {
  if (!impl_ || !impl_->http) return;
  impl_->http->StopAccepting();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (impl_->http->InFlight() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

void SimServer::Stop() {
  if (!impl_) return;
  // The HTTP side first: no handler may touch the engine once it is stopped. Then the
  // engine, so that no span can arrive after the final flush.
  if (impl_->http) impl_->http->Stop();
  if (impl_->engine) impl_->engine->Stop();
  if (impl_->spans) impl_->spans->Shutdown();
}

}  // namespace infertel::sim
