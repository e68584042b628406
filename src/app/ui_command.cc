// `infertel ui`: the web UI's pages (ui/static_assets.h) and the store's JSON API (ui/api_v1.h)
// over a store with no agent running (after the demo, or a copy from another machine), until SIGINT
// or SIGTERM.

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "app/commands.h"
#include "app/signals.h"
#include "core/printable.h"
#include "export/sqlite/data_dir.h"
#include "export/sqlite/sqlite_store.h"
#include "http/simple_server.h"
#include "http/url.h"
#include "ui/api_v1.h"
#include "ui/static_assets.h"

namespace infertel {
namespace {

struct UiFlags {
  std::string store;     // default: store in the data directory
  std::string data_dir;  // --data-dir
  std::string listen = "127.0.0.1:9465";
  std::string token;  // --token, else INFERTEL_ADMIN_TOKEN
};

[[noreturn]] void FailUi(int code, const std::string& message) {
  std::fprintf(stderr, "infertel ui: %s\n", Printable(message).c_str());
  throw CLI::RuntimeError(code);
}

void Run(const UiFlags& f) {
  std::string where, error;
  const auto path = exporting::StoreToRead(f.store, f.data_dir, &where, &error);
  if (!path) FailUi(1, error);
  if (!std::filesystem::exists(*path))
    FailUi(1, fmt::format("no store at {} ({}; give --store DIR or --data-dir DIR)", *path, where));
  exporting::SqliteStore check;  // refuses a store of the old format with what to do
  if (!check.Open(*path, &error)) FailUi(1, error);
  const auto address = http::ParseHostPort(f.listen);
  if (!address) FailUi(2, fmt::format("--listen: expected HOST:PORT, got '{}'", f.listen));
  std::string token = f.token;
  if (const char* env = std::getenv("INFERTEL_ADMIN_TOKEN"); token.empty() && env) token = env;
  if (!http::IsLoopbackHost(address->host) && token.empty())
    FailUi(2, fmt::format("{} is not loopback: give --token or INFERTEL_ADMIN_TOKEN (the store "
                          "holds prompts and completions)",
                          f.listen));
  BlockHandledSignals();
  auto api = std::make_shared<ui::ApiV1>(*path, token);
  auto server = http::SimpleServer::Start(
      *address,
      [api](const http::StringRequest& req) {
        if (req.target().starts_with(ui::kApiV1Prefix)) return api->Handle(req);
        if (req.target().starts_with(ui::kUiPrefix)) return ui::ServeUi(req);
        return http::MakeResponse(404, http::JsonErrorBody(404, "not_found", "no such page"),
                                  "application/json");
      },
      &error, 2, http::ServerLimits{.body_bytes = 64u << 10, .refuse_content_encoding = true});
  if (!server) FailUi(1, error);
  std::printf("infertel ui: serving %s on http://%s:%u/ui/\n", path->c_str(),
              server->host().c_str(), server->port());
  std::fflush(stdout);
  while (true) {
    const int sig = WaitForHandledSignal(std::chrono::seconds(1));
    if (sig != 0 && ActionOf(sig) == SignalAction::kStop) break;
  }
  server->Stop();
}

}  // namespace

void AddUiCommand(CLI::App& app) {
  auto flags = std::make_shared<UiFlags>();
  CLI::App* sub = app.add_subcommand(
      "ui",
      "Serve the web UI (/ui/) and the embedded store's JSON API (/api/v1) with no agent running");
  sub->add_option("--store", flags->store,
                  "Embedded store directory (default: store in the data directory)");
  sub->add_option("--data-dir", flags->data_dir,
                  "The agent's data directory (default: as the agent chooses it, docs/store.md)");
  sub->add_option("--listen", flags->listen, "Address to serve on, HOST:PORT")
      ->capture_default_str();
  sub->add_option("--token", flags->token,
                  "Bearer token required of every request (default: INFERTEL_ADMIN_TOKEN; "
                  "required off loopback)");
  sub->callback([flags] { Run(*flags); });
}

}  // namespace infertel
