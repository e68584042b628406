// `infertel demo`: the simulator as vLLM, the agent in front of it, a mixed workload from
// several client threads, then a summary and one trace tree from the embedded store.

#include <fmt/format.h>
#include <unistd.h>
#include <CLI/CLI.hpp>
#include <boost/asio.hpp>
#include <boost/beast.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <random>
#include <thread>

#include "app/agent.h"
#include "app/commands.h"
#include "app/signals.h"
#include "app/slo_from_store.h"
#include "app/ui_routes.h"
#include "console/admin_api.h"
#include "console/console_service.h"
#include "core/otel_env.h"
#include "engines/registry.h"
#include "export/sqlite/sqlite_store.h"
#include "sim/sim_server.h"

#include <sqlite3.h>

namespace infertel {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;

struct DemoFlags {
  double duration_s = 20;
  int clients = 4;
  std::string store = "infertel-demo.db";
  std::string model = "demo-llama-8b";
  std::uint64_t seed = 7;
  std::string admin = "127.0.0.1:0";  // the admin address, where the web UI is
  bool stay = false;                  // keep the agent and its web UI up after the summary
};

// Collects what the gateway measured, for the summary.
class TtftCollector : public openai::ExchangeListener {
 public:
  void OnExchangeFinished(const openai::Exchange& ex) noexcept override {
    std::lock_guard lock(mu_);
    ++exchanges_;
    if (ex.outcome != openai::Outcome::kOk) ++errors_;
    if (ex.first_token_mono_ns != 0)
      ttft_ms_.push_back((ex.first_token_mono_ns - ex.start.mono_start_ns) / 1e6);
  }
  struct Summary {
    std::size_t exchanges = 0, errors = 0, streams = 0;
    double p50 = 0, p99 = 0;
  };
  Summary Get() {
    std::lock_guard lock(mu_);
    Summary s;
    s.exchanges = exchanges_;
    s.errors = errors_;
    s.streams = ttft_ms_.size();
    if (!ttft_ms_.empty()) {
      std::vector<double> v = ttft_ms_;
      std::sort(v.begin(), v.end());
      auto at = [&](double q) {
        return v[std::min(v.size() - 1, static_cast<std::size_t>(q * v.size()))];
      };
      s.p50 = at(0.50);
      s.p99 = at(0.99);
    }
    return s;
  }

 private:
  std::mutex mu_;  // guards everything below
  std::size_t exchanges_ = 0, errors_ = 0;
  std::vector<double> ttft_ms_;
};

struct Counters {
  std::atomic<std::uint64_t> requests{0}, failures{0}, aborted{0};
};

// One request from a demo client; `abort_after_events` > 0 closes the connection mid-stream.
bool SendOne(asio::io_context& io, std::uint16_t port, const std::string& target,
             const std::string& body, bool stream, int abort_after_events,
             const std::string& tenant) {
  beast::tcp_stream s(io);
  beast::error_code ec;
  s.expires_after(std::chrono::seconds(30));
  s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
  if (ec) return false;
  bhttp::request<bhttp::string_body> req{bhttp::verb::post, target, 11};
  req.set(bhttp::field::host, "127.0.0.1");
  req.set(bhttp::field::content_type, "application/json");
  req.set("x-tenant-id", tenant);
  req.body() = body;
  req.prepare_payload();
  bhttp::write(s, req, ec);
  if (ec) return false;
  beast::flat_buffer buf;
  bhttp::response_parser<bhttp::buffer_body> p;
  p.body_limit((std::numeric_limits<std::uint64_t>::max)());
  bhttp::read_header(s, buf, p, ec);
  if (ec) return false;
  char chunk[8192];
  int events = 0;
  while (!p.is_done()) {
    p.get().body().data = chunk;
    p.get().body().size = sizeof chunk;
    bhttp::read_some(s, buf, p, ec);
    if (ec == bhttp::error::need_buffer) ec = {};
    if (ec) return false;
    std::string_view got(chunk, sizeof chunk - p.get().body().size);
    if (stream) events += static_cast<int>(std::count(got.begin(), got.end(), '\n')) / 2;
    if (abort_after_events > 0 && events >= abort_after_events) {
      s.socket().close(ec);  // the client walks away; the gateway must abort the engine request
      return true;
    }
  }
  return p.get().result_int() < 400;
}

void ClientLoop(int id, const DemoFlags& f, std::uint16_t port,
                std::chrono::steady_clock::time_point end, Counters& c) {
  asio::io_context io;
  std::mt19937_64 rng(f.seed * 7919 + static_cast<std::uint64_t>(id));
  std::uniform_int_distribution<int> pct(0, 99);
  const char* topics[] = {"the KV cache",         "continuous batching", "prefix caching",
                          "speculative decoding", "tensor parallelism",  "chunked prefill"};
  while (std::chrono::steady_clock::now() < end) {
    int r = pct(rng);
    std::string topic = topics[rng() % std::size(topics)];
    std::string target, body;
    bool stream = false;
    int abort_after = 0;
    int max_tokens = 16 + static_cast<int>(rng() % 48);
    // A shared system prompt makes prefix-cache hits happen.
    std::string sys =
        R"({"role":"system","content":"You are a concise assistant for inference engineers."})";
    if (r < 35) {
      stream = true;
      target = "/v1/chat/completions";
      bool usage = r % 2 == 0;
      body = fmt::format(
          R"({{"model":"{}","messages":[{},{{"role":"user","content":"Explain {} briefly."}}],"stream":true,{}"max_tokens":{},"temperature":0.7,"user":"demo-{}"}})",
          f.model, sys, topic, usage ? R"("stream_options":{"include_usage":true},)" : "",
          max_tokens, id);
    } else if (r < 55) {
      target = "/v1/chat/completions";
      body = fmt::format(
          R"({{"model":"{}","messages":[{},{{"role":"user","content":"What is {}?"}}],"max_tokens":{},"top_p":0.9}})",
          f.model, sys, topic, max_tokens);
    } else if (r < 70) {
      stream = r % 2 == 0;
      target = "/v1/completions";
      body = fmt::format(
          R"({{"model":"{}","prompt":"A short note on {}:","max_tokens":{},"stream":{}}})", f.model,
          topic, max_tokens, stream ? "true" : "false");
    } else if (r < 80) {
      target = "/v1/embeddings";
      body = fmt::format(R"({{"model":"{}","input":["{}","inference observability"]}})", f.model,
                         topic);
    } else if (r < 88) {
      target = r % 2 == 0 ? "/v1/rerank" : "/v1/score";
      body =
          r % 2 == 0
              ? fmt::format(
                    R"({{"model":"{}","query":"{}","documents":["GPU memory","batching","tokens"]}})",
                    f.model, topic)
              : fmt::format(R"({{"model":"{}","text_1":"{}","text_2":["GPU memory","batching"]}})",
                            f.model, topic);
    } else if (r < 95) {
      stream = r % 2 == 0;
      target = "/v1/chat/completions";
      body = fmt::format(
          R"({{"model":"{}","messages":[{{"role":"user","content":"Weather in Paris?"}}],"stream":{},"tools":[{{"type":"function","function":{{"name":"get_weather","parameters":{{"type":"object","properties":{{"city":{{"type":"string"}}}}}}}}}}],"max_tokens":{}}})",
          f.model, stream ? "true" : "false", max_tokens);
    } else {
      stream = true;
      abort_after = 3;
      target = "/v1/chat/completions";
      body = fmt::format(
          R"({{"model":"{}","messages":[{{"role":"user","content":"Write a long essay on {}."}}],"stream":true,"max_tokens":400}})",
          f.model, topic);
    }
    // Three teams share the engine: the tenants of the summary's SLO report.
    static constexpr const char* kTeams[] = {"team-search", "team-chat", "team-batch"};
    bool ok = SendOne(io, port, target, body, stream, abort_after, kTeams[id % 3]);
    c.requests.fetch_add(1);
    if (abort_after > 0) c.aborted.fetch_add(1);
    if (!ok) c.failures.fetch_add(1);
  }
}

// A free loopback port, for the simulator to take right after (the agent needs its URL
// before it exists, and it needs the agent's receiver address).
std::uint16_t FreePort() {
  asio::io_context io;
  tcp::acceptor a(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  return a.local_endpoint().port();
}

// The demo's clients, each in a loop until the duration is over, with a progress line.
void RunTraffic(const DemoFlags& f, std::uint16_t port, Counters& counters) {
  auto start = std::chrono::steady_clock::now();
  auto end = start + std::chrono::milliseconds(static_cast<long>(f.duration_s * 1000));
  std::vector<std::thread> clients;
  for (int i = 0; i < f.clients; ++i)
    clients.emplace_back([&, i] { ClientLoop(i, f, port, end, counters); });
  const bool tty = isatty(fileno(stderr));
  while (std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(tty ? 250 : 5000));
    double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "%s[demo] %5.1fs  requests %llu  failed %llu  aborted by client %llu%s",
                 tty ? "\r" : "", std::min(t, f.duration_s),
                 static_cast<unsigned long long>(counters.requests.load()),
                 static_cast<unsigned long long>(counters.failures.load()),
                 static_cast<unsigned long long>(counters.aborted.load()), tty ? "" : "\n");
  }
  for (auto& t : clients) t.join();
  if (tty) std::fprintf(stderr, "\n");
}

// What the store holds after the run: every span, the engine's request spans, and the tree of
// a recent trace an engine finished (its entry span, the engine's span and its phases).
struct Stored {
  std::int64_t spans = -1;
  std::int64_t engine_spans = 0;
  std::string tree;
  std::string slo;  // the SLO report over the run (infertel slo)
};

Stored ReadStored(const std::string& path) {
  Stored out;
  exporting::SqliteStore store;
  std::string serr;
  if (!store.Open(path, &serr)) return out;
  out.spans = store.CountSpans();
  exporting::SpanFilter llm;
  llm.name = "llm_request";
  const auto requests = store.Spans(llm);
  out.engine_spans = static_cast<std::int64_t>(requests.size());
  std::string trace_id;
  for (auto it = requests.rbegin(); it != requests.rend() && trace_id.empty(); ++it)
    if (!it->parent_span_id.empty()) trace_id = it->trace_id;
  exporting::TraceQuery q;
  q.limit = 1;
  q.trace_id = trace_id;
  out.tree = exporting::RenderTraceTrees(store, q);
  SloQuery slo;
  slo.slowest = 3;
  out.slo = SloReportFromStore(store, slo);
  return out;
}

// The demo's objectives and tenant rule, where the environment sets none: what an operator
// would set (docs/telemetry-reference.md, "Tenants, SLOs and latency causes"), tight enough for
// the simulated engine under the demo's load to miss some.
// A fresh store each run: the summary counts this run's spans. Only a directory that is a
// store (or an old demo's single file) is removed.
void RemoveOldDemoStore(const std::string& store) {
  std::error_code ec;
  if (std::filesystem::is_directory(store, ec)) {
    if (std::filesystem::exists(store + "/lock", ec)) std::filesystem::remove_all(store, ec);
  } else if (std::filesystem::is_regular_file(store, ec)) {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(store + suffix, ec);
  }
}

config::EnvLookup DemoEnv() {
  using config::Key;
  struct Default {
    Key key;
    const char* value;
  };
  static constexpr Default kDefaults[] = {{Key::kTenantFrom, "header:x-tenant-id,user"},
                                          {Key::kSloTtftMs, "10"},
                                          {Key::kSloTpotMs, "4"},
                                          {Key::kSloE2eMs, "200"}};
  return [env = config::ProcessEnv()](std::string_view name) -> std::optional<std::string> {
    if (auto v = env(name)) return v;
    for (const Default& d : kDefaults)
      if (config::Spec(d.key).env_var == name) return std::string(d.value);
    return std::nullopt;
  };
}

// The agent of the demo, with its console (the /ui/config page edits its switches) and the web
// UI's routes, serving the simulator at `sim_port`.
struct DemoAgent {
  std::unique_ptr<console::ConsoleService> console;
  std::unique_ptr<Agent> agent;
};

DemoAgent StartDemoAgent(const DemoFlags& f, std::uint16_t sim_port, TtftCollector* ttft) {
  std::string error;
  AgentOptions ao;
  gateway::UpstreamConfig uc;
  // The registry's first engine, simulated: the default engine of the agent.
  uc.engine = EngineId{};
  uc.url = *http::ParseUrl(fmt::format("http://127.0.0.1:{}", sim_port));
  uc.listen = {"127.0.0.1", 0};
  ao.upstreams.push_back(uc);
  auto admin = http::ParseHostPort(f.admin);
  if (!admin || !http::IsLoopbackHost(admin->host)) {
    std::fprintf(stderr, "infertel demo: --admin: expected a loopback HOST:PORT, got '%s'\n",
                 f.admin.c_str());
    throw CLI::RuntimeError(2);
  }
  ao.admin = *admin;
  ao.receiver.grpc_address = "127.0.0.1:0";
  ao.receiver.http_address = "";
  ao.exports = exporting::ExportOptionsFromEnv(config::ProcessEnv());
  ao.exports.store_path = f.store;
  ao.exports.store_enabled = true;
  RemoveOldDemoStore(f.store);
  console::ConsoleOptions copts;  // no console file or URL: the environment and the API
  copts.admin_token = config::ProcessEnv()("INFERTEL_ADMIN_TOKEN").value_or("");
  DemoAgent d;
  d.console =
      console::ConsoleService::Create(copts, DemoEnv(), {{uc.name, uc.engine, uc.url}}, &error);
  if (!d.console) {
    std::fprintf(stderr, "infertel demo: console: %s\n", error.c_str());
    throw CLI::RuntimeError(1);
  }
  d.agent = std::make_unique<Agent>(std::move(ao), d.console->InitialSettings());
  Agent& agent = *d.agent;
  agent.AddExchangeListener(ttft);
  auto config_api = d.console->AdminHandler();
  agent.AddAdminRoute(std::string(console::kApiPrefix), config_api);
  AddUiRoutes(agent, f.store, copts.admin_token, config_api);
  if (!agent.Start(&error)) {
    std::fprintf(stderr, "infertel demo: agent: %s\n", error.c_str());
    throw CLI::RuntimeError(1);
  }
  d.console->RegisterStats(&agent.stats());
  d.console->Start(agent.config());
  return d;
}

std::unique_ptr<sim::SimServer> StartDemoEngine(const DemoFlags& f, std::uint16_t sim_port,
                                                const Agent& agent) {
  // The simulated vLLM sends its native llm_request spans to the agent's receiver, as a real
  // vLLM started with --otlp-traces-endpoint does; a short batch delay keeps the demo brisk.
  const engines::EngineProfile& engine = engines::Profile(EngineId{});
  sim::SimOptions so;
  so.engine = std::string(engine.name());
  so.model = f.model;
  so.port = sim_port;
  so.engine_config.seed = f.seed;
  so.enable_prompt_tokens_details = true;
  so.otlp_traces_endpoint = fmt::format("grpc://127.0.0.1:{}", agent.ReceiverGrpcPort());
  so.env = [service = fmt::format("{}-demo", engine.name())](
               std::string_view name) -> std::optional<std::string> {
    if (name == otel_env::kBspScheduleDelay) return std::string("200");
    if (name == otel_env::kServiceName) return service;
    return std::nullopt;
  };
  std::string error;
  auto sim = sim::SimServer::Start(so, &error);
  if (!sim) {
    std::fprintf(stderr, "infertel demo: simulator: %s\n", error.c_str());
    throw CLI::RuntimeError(1);
  }
  return sim;
}

void PrintSummary(const DemoFlags& f, const Counters& counters, const TtftCollector::Summary& s) {
  const Stored stored = ReadStored(f.store);
  const std::int64_t spans = stored.spans, engine_spans = stored.engine_spans;
  std::printf("\n== infertel demo summary\n");
  std::printf("requests sent        %llu (%llu failed, %llu aborted by the client on purpose)\n",
              static_cast<unsigned long long>(counters.requests.load()),
              static_cast<unsigned long long>(counters.failures.load()),
              static_cast<unsigned long long>(counters.aborted.load()));
  std::printf("exchanges observed   %zu (%zu with status ERROR)\n", s.exchanges, s.errors);
  std::printf(
      "spans stored         %lld (%lld from the engine: llm_request, joined to entry spans)\n",
      static_cast<long long>(spans), static_cast<long long>(engine_spans));
  std::printf("TTFT at the gateway  p50 %.2f ms, p99 %.2f ms over %zu streams\n", s.p50, s.p99,
              s.streams);
  std::printf("store                %s (browse: infertel traces --store %s)\n",
              std::filesystem::absolute(f.store).c_str(), f.store.c_str());
  std::printf("\n== latency objectives (infertel slo --store %s)\n%s", f.store.c_str(),
              stored.slo.c_str());
  std::printf("\n== a recent trace (entry span, the engine's span, its phases)\n%s",
              stored.tree.c_str());
  if (counters.requests.load() == 0 || spans <= 0 || engine_spans <= 0) {
    std::fprintf(stderr, "infertel demo: no traffic, no spans or no engine spans stored\n");
    throw CLI::RuntimeError(1);
  }
}

void Run(const DemoFlags& f) {
  const std::uint16_t sim_port = FreePort();
  if (f.stay) BlockHandledSignals();  // before any thread starts: they inherit the mask
  TtftCollector ttft;
  DemoAgent d = StartDemoAgent(f, sim_port, &ttft);
  Agent& agent = *d.agent;
  auto sim = StartDemoEngine(f, sim_port, agent);
  const std::uint16_t port = agent.GatewayPorts().at(0);
  const std::string ui = fmt::format("http://127.0.0.1:{}/ui/", agent.AdminPort());
  std::printf(
      "infertel demo: simulated %s on 127.0.0.1:%u (native spans to the agent's receiver), "
      "agent gateway on 127.0.0.1:%u, web UI on %s\n",
      std::string(engines::Profile(EngineId{}).display_name()).c_str(), sim->port(), port,
      ui.c_str());
  std::printf(
      "infertel demo: %d clients for %.0f s (chat, completions, streaming, embeddings, rerank, "
      "tools, aborts)\n",
      f.clients, f.duration_s);
  std::fflush(stdout);

  Counters counters;
  RunTraffic(f, port, counters);
  sim->Stop();  // flushes the simulator's last native spans to the agent
  if (!f.stay) {
    agent.Stop();  // joins what is still waiting and flushes every exporter
    d.console->Stop();
    PrintSummary(f, counters, ttft.Get());
    std::printf("\nweb UI: infertel ui --store %s (or infertel demo --stay)\n", f.store.c_str());
    return;
  }
  agent.Flush(std::chrono::seconds(10));
  PrintSummary(f, counters, ttft.Get());
  std::printf("\nweb UI: %s (the agent stays up; Ctrl-C to stop)\n", ui.c_str());
  std::fflush(stdout);
  while (true) {
    const int sig = WaitForHandledSignal(std::chrono::seconds(1));
    if (sig != 0 && ActionOf(sig) == SignalAction::kStop) break;
  }
  agent.Stop();
  d.console->Stop();
}

}  // namespace

void AddDemoCommand(CLI::App& app) {
  auto flags = std::make_shared<DemoFlags>();
  CLI::App* sub = app.add_subcommand(
      "demo", "A simulated engine + agent + traffic, then a summary and a trace");
  sub->add_option("--duration", flags->duration_s, "Seconds of traffic")->capture_default_str();
  sub->add_option("--clients", flags->clients, "Concurrent clients")->capture_default_str();
  sub->add_option("--store", flags->store, "Embedded store path")->capture_default_str();
  sub->add_option("--model", flags->model, "Model name the simulator serves")
      ->capture_default_str();
  sub->add_option("--seed", flags->seed, "Seed for the simulator and the workload")
      ->capture_default_str();
  sub->add_option("--admin", flags->admin,
                  "Admin address of the agent, where the web UI is (loopback; port 0: any free)")
      ->capture_default_str();
  sub->add_flag("--stay", flags->stay,
                "After the summary, keep the agent and its web UI up until Ctrl-C");
  sub->callback([flags] { Run(*flags); });
}

}  // namespace infertel
