#include "app/agent.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>

#include "app/engine_probe.h"
#include "core/otel_env.h"
#include "core/resource.h"
#include "core/thread_name.h"
#include "engines/registry.h"
#include "gateway/content_events.h"
#include "gateway/entry_span.h"
#include "gateway/request_log.h"
#include "http/simple_server.h"
#include "metrics/exposition.h"
#include "metrics/served_models.h"

namespace infertel {

namespace {}  // namespace

bool LoadAgentFile(const std::string& path, AgentOptions* options, std::string* error) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const std::exception& e) {
    *error = fmt::format("{}: {}", path, e.what());
    return false;
  }
  try {
    if (auto ups = root["upstreams"]) {
      if (!ups.IsSequence()) {
        *error = fmt::format("{}: upstreams: expected a list", path);
        return false;
      }
      std::vector<gateway::UpstreamConfig> list;
      std::size_t i = 0;
      for (const auto& u : ups) {
        gateway::UpstreamConfig uc;
        uc.name = u["name"] ? u["name"].as<std::string>() : fmt::format("upstream{}", i);
        // Without `engine`, the registry's first engine.
        auto engine = u["engine"] ? engines::FindEngine(u["engine"].as<std::string>())
                                  : std::optional<EngineId>(EngineId{});
        if (!engine) {
          *error =
              fmt::format("{}: upstreams[{}].engine: expected {}", path, i, engines::EngineNames());
          return false;
        }
        uc.engine = *engine;
        auto url = u["url"] ? http::ParseUrl(u["url"].as<std::string>()) : std::nullopt;
        if (!url) {
          *error = fmt::format("{}: upstreams[{}].url: expected http://HOST:PORT", path, i);
          return false;
        }
        uc.url = *url;
        auto listen =
            u["listen"] ? http::ParseHostPort(u["listen"].as<std::string>()) : std::nullopt;
        if (!listen) {
          *error = fmt::format("{}: upstreams[{}].listen: expected HOST:PORT", path, i);
          return false;
        }
        uc.listen = *listen;
        if (u["pd_role"]) {
          uc.pd_role = u["pd_role"].as<std::string>();
          if (uc.pd_role != "producer" && uc.pd_role != "consumer" && uc.pd_role != "none") {
            *error = fmt::format("{}: upstreams[{}].pd_role: expected producer, consumer or none",
                                 path, i);
            return false;
          }
        }
        if (u["engine_version"]) {
          uc.engine_version = u["engine_version"].as<std::string>();
          if (uc.engine_version != "auto" && uc.engine_version != "v0" &&
              uc.engine_version != "v1") {
            *error =
                fmt::format("{}: upstreams[{}].engine_version: expected auto, v0 or v1", path, i);
            return false;
          }
        }
        if (u["data_parallel_size"]) uc.data_parallel_size = u["data_parallel_size"].as<int>();
        if (u["metrics_url"]) {
          uc.metrics_url = u["metrics_url"].as<std::string>();
          if (uc.metrics_url != "off" && !http::ParseUrl(uc.metrics_url)) {
            *error = fmt::format(
                "{}: upstreams[{}].metrics_url: expected http://HOST:PORT/PATH or off", path, i);
            return false;
          }
        }
        list.push_back(std::move(uc));
        ++i;
      }
      if (options->upstreams.empty()) options->upstreams = std::move(list);
    }
    if (auto a = root["admin"]) {
      auto hp = http::ParseHostPort(a.as<std::string>());
      if (!hp) {
        *error = fmt::format("{}: admin: expected HOST:PORT", path);
        return false;
      }
      options->admin = *hp;
    }
  } catch (const YAML::Exception& e) {
    *error = fmt::format("{}: {}", path, e.what());
    return false;
  }
  return true;
}

struct Agent::Impl {
  Resource resource;
  std::unique_ptr<exporting::Pipelines> pipelines;
  // Before the assembler, which tells it of joined engine spans until its timer stops.
  std::unique_ptr<metrics::MetricsService> metrics;
  std::unique_ptr<engines::Assembler> assembler;
  std::unique_ptr<receiver::OtlpReceiver> receiver;
  std::unique_ptr<gateway::EntrySpanEmitter> entry_spans;
  std::unique_ptr<gateway::ContentEventEmitter> content_events;  // capture strategy `event`
  std::unique_ptr<gateway::RequestLog> request_log;              // the agent's request lines
  std::vector<std::unique_ptr<EngineProbe>> probes;
  std::unique_ptr<gateway::Gateway> gateway;
  std::unique_ptr<http::SimpleServer> admin;
};

namespace {

// What each engine says about itself beside its traffic (its profile's facts), followed on a
// probe of its own and handed to the assembler, the entry spans and the metrics. A generation given
// in the configuration is taken as is, and wins over the one the engine reports.
void StartFactProbes(Agent::Impl& im, const std::vector<gateway::UpstreamConfig>& upstreams) {
  for (const auto& u : upstreams) {
    const bool pinned = u.engine_version == "v0" || u.engine_version == "v1";
    if (pinned) im.assembler->SetEngineFacts(u.name, {.span_generation = u.engine_version});
    const engines::EngineProfile& engine = engines::Profile(u.engine);
    auto probe = engine.facts_probe();
    if (!probe || (pinned && probe->generation_only)) continue;
    im.probes.push_back(std::make_unique<EngineProbe>(
        std::string(probe->thread_name), u.name, std::string(probe->what), ProbeSchedule{},
        [&engine, assembler = im.assembler.get(), emitter = im.entry_spans.get(),
         metrics = im.metrics.get(), u, pinned](std::string* err) {
          auto facts = engine.ReadFacts(u.url, err);
          if (!facts) return false;
          if (pinned) facts->span_generation = u.engine_version;
          assembler->SetEngineFacts(u.name, *facts);
          emitter->SetEngineFacts(u.name, *facts);
          metrics->SetEngineFacts(u.name, *facts);
          return true;
        }));
  }
}

}  // namespace

Agent::Agent(AgentOptions options, config::Settings settings)
    : options_(std::move(options)),
      config_(std::make_shared<config::ConfigStore>(std::move(settings))),
      impl_(std::make_unique<Impl>()) {}

Agent::~Agent() { Stop(); }

bool Agent::Start(std::string* error) {
  Impl& im = *impl_;
  im.resource = BuildResource(config::ProcessEnv(), options_.default_service_name);
  im.pipelines = exporting::BuildPipelines(options_.exports, &stats_, error);
  if (!im.pipelines) return false;
  if (!StartSpanPath(error)) return false;
  StartMetrics();
  if (!StartGateway(error)) return false;
  impl_->metrics->Start();
  return StartAdmin(error);
}

// Engine spans: receiver → assembler (join, normalize, derive) → trace pipeline.
bool Agent::StartSpanPath(std::string* error) {
  Impl& im = *impl_;
  engines::AssemblerOptions aopts = options_.assembler;
  aopts.agent_resource = im.resource;  // engine spans joined by trace id join the application
  // What an engine span that matches no exchange can be told: the upstream's, when only one
  // upstream's engine sends request spans.
  const gateway::UpstreamConfig* single = nullptr;
  std::size_t request_span_upstreams = 0;
  for (const auto& u : options_.upstreams) {
    if (engines::Profile(u.engine).span_join() != engines::SpanJoin::kRequestId) continue;
    if (++request_span_upstreams == 1) single = &u;
  }
  if (single != nullptr) aopts.default_pd_role = single->pd_role;
  if (request_span_upstreams == 1 && single->data_parallel_size == 1)
    aopts.default_engine_index = 0;
  if (request_span_upstreams == 1) single_span_upstream_ = single->name;
  if (const char* limit = std::getenv(otel_env::kSpanEventCountLimit.data())) {
    try {
      aopts.max_span_events = std::stoul(limit);
    } catch (const std::exception&) {
      spdlog::warn("{}='{}' is not a number; using {}", otel_env::kSpanEventCountLimit, limit,
                   aopts.max_span_events);
    }
  }
  im.assembler = std::make_unique<engines::Assembler>(aopts, im.pipelines->traces.get(), config_);
  im.assembler->stats().Register(&stats_);
  receiver::ReceiverSinks sinks;
  sinks.traces = im.assembler.get();
  sinks.logs = im.pipelines->logs.get();
  sinks.metrics = im.pipelines->metrics.get();
  if (!options_.receiver.grpc_address.empty() || !options_.receiver.http_address.empty()) {
    receiver::OtlpReceiverOptions ropts = options_.receiver;
    std::vector<std::string> warnings;
    // The SDK's limits come from its variables; the value limits, which it has none for,
    // from the agent's flags.
    const receiver::SpanLimits flagged = ropts.span_limits;
    ropts.span_limits = receiver::SpanLimitsFromEnv(std::getenv, &warnings);
    ropts.span_limits.value_element_count = flagged.value_element_count;
    ropts.span_limits.value_depth = flagged.value_depth;
    for (const auto& w : warnings) spdlog::warn("{}", w);
    im.receiver = std::make_unique<receiver::OtlpReceiver>(std::move(ropts), sinks);
    if (!im.receiver->Start(error)) return false;
    im.receiver->RegisterStats(&stats_);
  }

  return true;
}

// Metrics: the gateway's measurements and a scrape of every upstream's /metrics.
void Agent::StartMetrics() {
  Impl& im = *impl_;
  std::vector<metrics::ScrapeTarget> targets;
  for (const auto& u : options_.upstreams) {
    metrics::ScrapeTarget t;
    t.upstream = u.name;
    t.engine = u.engine;
    if (u.metrics_url.empty()) {
      http::Url url = u.url;
      url.path = "/metrics";
      t.url = url.ToString();
    } else if (u.metrics_url != "off") {
      t.url = u.metrics_url;
    }
    if (u.engine_version == "v0" || u.engine_version == "v1") t.generation_hint = u.engine_version;
    targets.push_back(std::move(t));
  }
  im.metrics = std::make_unique<metrics::MetricsService>(options_.metrics, std::move(targets),
                                                         config_, im.pipelines->metrics.get(),
                                                         im.resource, INFERTEL_VERSION_STRING);
  im.metrics->RegisterStats(&stats_);
  if (im.assembler) im.assembler->SetSpanListener(im.metrics->span_listener());
  for (const auto& u : options_.upstreams) {
    // The models the engine serves keep their own series whatever clients name.
    im.probes.push_back(std::make_unique<EngineProbe>(
        "models-probe", u.name, "the served models (GET /v1/models)", ProbeSchedule{},
        [metrics = im.metrics.get(), assembler = im.assembler.get(),
         single = u.name == single_span_upstream_, u](std::string* err) {
          auto models = metrics::FetchServedModels(u.url, err);
          if (models) metrics->SetServedModels(u.name, *models);
          // An engine span that matches no exchange is of this upstream's one model.
          if (models && single)
            assembler->SetDefaultModel(models->size() == 1 ? models->front() : "");
          return models.has_value();
        }));
  }
}

// The gateway and the listeners of its exchanges; the engines' facts followed for them.
bool Agent::StartGateway(std::string* error) {
  Impl& im = *impl_;
  im.entry_spans =
      std::make_unique<gateway::EntrySpanEmitter>(im.pipelines->traces.get(), im.resource);
  StartFactProbes(im, options_.upstreams);
  gateway::GatewayOptions gopts;
  gopts.upstreams = options_.upstreams;
  gopts.threads = options_.threads;
  gopts.max_request_body = options_.max_request_body;
  gopts.max_connections = options_.gateway_max_connections;
  im.gateway = std::make_unique<gateway::Gateway>(std::move(gopts), config_);
  // A signal with no exporter (no OTLP endpoint and no store) gets no records built: they
  // would only be dropped at the sink.
  if (im.pipelines->traces->LaneCount() > 0) im.gateway->AddListener(im.entry_spans.get());
  im.content_events =
      std::make_unique<gateway::ContentEventEmitter>(im.pipelines->logs.get(), im.resource);
  if (im.pipelines->logs->LaneCount() > 0) im.gateway->AddListener(im.content_events.get());
  im.request_log = std::make_unique<gateway::RequestLog>();
  im.gateway->AddListener(im.request_log.get());
  // Join records and SGLang trace levels serve engine spans, which only the receiver lets in.
  if (im.receiver) im.gateway->AddListener(im.assembler.get());
  im.gateway->AddListener(im.metrics->listener());
  for (auto* l : extra_listeners_) im.gateway->AddListener(l);
  im.gateway->stats().Register(&stats_, "");
  im.gateway->analytics().Register(&stats_);
  return im.gateway->Start(error);
}

// The admin address: /healthz, /metrics and the routes added before Start (console API).
bool Agent::StartAdmin(std::string* error) {
  Impl& im = *impl_;
  im.admin = http::SimpleServer::Start(
      options_.admin,
      [this](const http::StringRequest& req) {
        std::string_view target = req.target();
        for (const auto& [prefix, handler] : admin_routes_)
          if (target.substr(0, prefix.size()) == prefix) return handler(req);
        // 200 while the agent serves; a failing exporter or a fault of the store's file system
        // makes it "degraded" (still 200: the gateway and the other destinations work, and
        // restarting the agent would bring back neither a backend nor a disk).
        // docs/operations.md, "Exporter queues and a failing backend".
        if (target == "/healthz") {
          const std::string failing =
              impl_->pipelines ? impl_->pipelines->FailingExporters() : std::string();
          return http::MakeResponse(200, failing.empty() ? "ok\n" : "degraded\n" + failing);
        }
        if (target == "/metrics") {
          // OpenMetrics (with exemplars) to scrapers that ask for it, text to the others.
          const bool om = metrics::WantsOpenMetrics(req[boost::beast::http::field::accept]);
          std::string body = impl_->metrics ? impl_->metrics->RenderPrometheus(om) : std::string();
          body += stats_.Render();
          if (om) body = metrics::ToOpenMetrics(body);
          return http::MakeResponse(
              200, std::move(body),
              std::string(om ? metrics::kOpenMetricsContentType : metrics::kTextContentType));
        }
        return http::MakeResponse(404,
                                  http::JsonErrorBody(404, "NotFound", "no such admin endpoint"),
                                  "application/json");
      },
      error, 1,
      http::ServerLimits{.body_bytes = 64u << 10,  // a PUT sets one value
                         .connections = options_.admin_connections,
                         .refuse_content_encoding = true});
  if (im.admin) im.admin->stats().Register(&stats_, "infertel_admin");
  return im.admin != nullptr;
}

void Agent::StopAccepting() {
  if (drain_deadline_) return;
  const auto timeout =
      std::chrono::milliseconds(config_->Current()->GetInt(config::Key::kDrainTimeoutMs));
  drain_deadline_ = std::chrono::steady_clock::now() + timeout;
  if (!impl_->gateway) return;
  spdlog::info("stopping: no new connections; requests in flight have {} ms to finish",
               timeout.count());
  impl_->gateway->StopAccepting();
}

void Agent::Stop() {
  Impl& im = *impl_;
  if (im.gateway) {
    StopAccepting();
    if (std::size_t cut = im.gateway->Drain(*drain_deadline_); cut > 0) {
      spdlog::warn("stopping: {} request(s) still in flight at the drain timeout were cut", cut);
    }
    im.gateway->Stop();
  }
  if (im.receiver) im.receiver->Stop();
  if (im.metrics) im.metrics->Stop();
  im.probes.clear();  // each stops and joins its thread
  if (im.assembler) im.assembler->FlushWaiting();
  if (im.admin) im.admin->Stop();
  if (im.pipelines) im.pipelines->Shutdown(std::chrono::seconds(5));
}

void Agent::Flush(std::chrono::milliseconds timeout) {
  if (impl_->pipelines) impl_->pipelines->Flush(timeout);
}

std::vector<std::uint16_t> Agent::GatewayPorts() const {
  return impl_->gateway ? impl_->gateway->Ports() : std::vector<std::uint16_t>{};
}

const Resource& Agent::resource() const { return impl_->resource; }

void Agent::SetUpstreamReady(std::size_t index, bool ready) {
  if (impl_->gateway) impl_->gateway->SetUpstreamReady(index, ready);
}

std::string Agent::ExportSummary() const { return exporting::Describe(options_.exports); }

std::uint16_t Agent::ReceiverGrpcPort() const {
  return impl_->receiver ? impl_->receiver->grpc_port() : 0;
}
std::uint16_t Agent::ReceiverHttpPort() const {
  return impl_->receiver ? impl_->receiver->http_port() : 0;
}

metrics::MetricsService* Agent::metrics() { return impl_->metrics.get(); }

std::uint16_t Agent::AdminPort() const { return impl_->admin ? impl_->admin->port() : 0; }

}  // namespace infertel
