#include "console/console_service.h"

#include <fmt/format.h>

#include "engines/registry.h"

namespace infertel::console {

ConsoleService::ConsoleService(ConsoleOptions options, const config::EnvLookup& env,
                               std::vector<std::string>* env_errors)
    : options_(std::move(options)), config_(env, env_errors) {}

ConsoleService::~ConsoleService() { Stop(); }

std::unique_ptr<ConsoleService> ConsoleService::Create(ConsoleOptions options,
                                                       const config::EnvLookup& env,
                                                       const std::vector<KnobUpstream>& upstreams,
                                                       std::string* error) {
  std::vector<std::string> env_errors;
  std::unique_ptr<ConsoleService> s(new ConsoleService(std::move(options), env, &env_errors));
  if (!env_errors.empty()) {
    *error = env_errors.front();
    for (std::size_t i = 1; i < env_errors.size(); ++i) *error += "; " + env_errors[i];
    return nullptr;
  }
  const ConsoleOptions& o = s->options_;
  if (!o.file.empty()) {
    s->file_ = std::make_unique<FileSource>(o.file, &s->config_, 4, &s->stats_);
    if (!s->file_->PollOnce()) {
      *error = fmt::format("--console-file {}: {}", o.file, s->config_.Status(Layer::kFile).error);
      return nullptr;
    }
  }
  if (!o.url.empty()) {
    auto url = http::ParseUrl(o.url);
    if (!url || url->scheme != "http") {
      *error = fmt::format("--console-url: expected http://HOST:PORT/PATH, got '{}'", o.url);
      return nullptr;
    }
    s->url_ = std::make_unique<UrlSource>(*url, &s->config_, std::chrono::seconds(2), &s->stats_);
    s->url_->PollOnce();  // a console that is down must not keep the agent from starting
  }

  const config::Settings start = s->config_.Desired();
  std::vector<KnobTarget> targets;
  for (const auto& u : upstreams) {
    KnobTarget t;
    t.upstream = u.name;
    t.url = u.url.ToString();
    const engines::EngineProfile& engine = engines::Profile(u.engine);
    if (auto on = engine.switches().enabled; on && !start.GetBool(*on)) continue;
    t.knobs = engine.MakeKnobs(u.url);
    targets.push_back(std::move(t));
  }
  s->knobs_ = std::make_unique<KnobController>(std::move(targets), o.knob_retry);
  s->api_ = std::make_unique<ConfigApi>(&s->config_, s->knobs_.get(), o.admin_token);
  return s;
}

http::Handler ConsoleService::AdminHandler() {
  return [api = api_.get()](const http::StringRequest& req) { return api->Handle(req); };
}

void ConsoleService::RegisterStats(StatsRegistry* registry) const {
  stats_.Register(registry);
  api_->stats().Register(registry);
}

void ConsoleService::Start(std::shared_ptr<config::ConfigStore> store) {
  KnobController* knobs = knobs_.get();
  store->Subscribe([knobs](const config::Settings&, const config::Settings& next) {
    knobs->Update(next);  // only hands the settings over: listeners must not block
  });
  config_.Attach(store);
  knobs->Update(*store->Current());
  knobs->Start();
  if (file_) file_->Start(options_.file_interval);
  if (url_) url_->Start(options_.url_interval);
}

void ConsoleService::Reload() {
  if (file_) file_->ReadNow();
  if (url_) url_->PollNow();
}

void ConsoleService::Stop() {
  if (file_) file_->Stop();
  if (url_) url_->Stop();
  if (knobs_) knobs_->Stop();
}

}  // namespace infertel::console
