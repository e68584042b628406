#include "app/agent.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include "core/resource.h"
#include "gateway/entry_span.h"
#include "http/simple_server.h"

namespace infertel {

namespace {

std::optional<gateway::EngineKind> ParseEngine(std::string_view s) {
  if (s == "vllm") return gateway::EngineKind::kVllm;
  if (s == "sglang") return gateway::EngineKind::kSglang;
  return std::nullopt;
}

}  // namespace

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
        auto engine = ParseEngine(u["engine"] ? u["engine"].as<std::string>() : "vllm");
        if (!engine) {
          *error = fmt::format("{}: upstreams[{}].engine: expected vllm or sglang", path, i);
          return false;
        }
        uc.engine = *engine;
        auto url = u["url"] ? http::ParseUrl(u["url"].as<std::string>()) : std::nullopt;
        if (!url) {
          *error = fmt::format("{}: upstreams[{}].url: expected http://HOST:PORT", path, i);
          return false;
        }
        uc.url = *url;
        auto listen = u["listen"] ? http::ParseHostPort(u["listen"].as<std::string>()) : std::nullopt;
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
  std::unique_ptr<gateway::EntrySpanEmitter> entry_spans;
  std::unique_ptr<gateway::Gateway> gateway;
  std::unique_ptr<http::SimpleServer> admin;
};

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

  im.entry_spans = std::make_unique<gateway::EntrySpanEmitter>(im.pipelines->traces.get(), im.resource);
  gateway::GatewayOptions gopts;
  gopts.upstreams = options_.upstreams;
  gopts.threads = options_.threads;
  gopts.max_request_body = options_.max_request_body;
  im.gateway = std::make_unique<gateway::Gateway>(std::move(gopts), config_);
  im.gateway->AddListener(im.entry_spans.get());
  for (auto* l : extra_listeners_) im.gateway->AddListener(l);
  im.gateway->stats().Register(&stats_, "");
  if (!im.gateway->Start(error)) return false;

  im.admin = http::SimpleServer::Start(
      options_.admin,
      [this](const http::StringRequest& req) {
        std::string_view target = req.target();
        if (target == "/healthz") return http::MakeResponse(200, "ok\n");
        if (target == "/metrics") {
          return http::MakeResponse(200, stats_.Render(), "text/plain; version=0.0.4; charset=utf-8");
        }
        return http::MakeResponse(404, http::JsonErrorBody(404, "NotFound", "no such admin endpoint"),
                                  "application/json");
      },
      error);
  return im.admin != nullptr;
}

void Agent::Stop() {
  Impl& im = *impl_;
  if (im.gateway) im.gateway->Stop();
  if (im.admin) im.admin->Stop();
  if (im.pipelines) im.pipelines->Shutdown(std::chrono::seconds(5));
}

void Agent::Flush(std::chrono::milliseconds timeout) {
  if (impl_->pipelines) impl_->pipelines->Flush(timeout);
}

std::vector<std::uint16_t> Agent::GatewayPorts() const {
  return impl_->gateway ? impl_->gateway->Ports() : std::vector<std::uint16_t>{};
}

std::string Agent::ExportSummary() const { return exporting::Describe(options_.exports); }

std::uint16_t Agent::AdminPort() const { return impl_->admin ? impl_->admin->port() : 0; }

}  // namespace infertel
