// `infertel config`: the effective configuration and where each value comes from, from a
// running agent (--agent, its GET /api/config) or worked out here from the environment and a
// console file.

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <string>

#include "app/agent_options.h"
#include "app/commands.h"
#include "config/doc.h"
#include "console/admin_api.h"
#include "console/report.h"
#include "console/sources.h"
#include "core/printable.h"
#include "http/sync_client.h"

namespace infertel {

namespace {

struct ConfigFlags {
  bool markdown = false;
  bool markdown_options = false;
  bool json = false;
  std::string agent;         // http://HOST:PORT of a running agent's admin address
  std::string admin_token;   // default: INFERTEL_ADMIN_TOKEN
  std::string console_file;  // offline: the console file to layer over the environment
};

// Messages quote URLs, answers and console documents: printed escaped (core/printable.h).
[[noreturn]] void FailConfig(int code, const std::string& message) {
  std::fprintf(stderr, "infertel config: %s\n", Printable(message).c_str());
  throw CLI::RuntimeError(code);
}

void FromAgent(const ConfigFlags& f) {
  auto url = http::ParseUrl(f.agent);
  if (!url) FailConfig(2, fmt::format("--agent: expected http://HOST:PORT, got '{}'", f.agent));
  url->path = std::string(console::kApiPrefix);
  std::string token = f.admin_token;
  if (token.empty()) token = config::ProcessEnv()("INFERTEL_ADMIN_TOKEN").value_or("");
  std::vector<std::pair<std::string, std::string>> headers;
  if (!token.empty()) headers.emplace_back("Authorization", "Bearer " + token);
  http::SyncClient client(http::SyncTimeouts{std::chrono::seconds(5), std::chrono::seconds(5),
                                             std::chrono::seconds(10)});
  http::SyncResponse res;
  std::string error;
  if (!client.Send("GET", *url, headers, "", "", &res, &error)) {
    FailConfig(1, fmt::format("{}: {}", url->ToString(), error));
  }
  if (res.status != 200) {
    FailConfig(1, fmt::format("GET {} answered {}: {}", url->ToString(), res.status,
                              Excerpt(res.body, 512)));
  }
  if (f.json) {
    // Valid JSON has no raw control characters, so an agent's answer passes unchanged.
    std::fputs(Printable(res.body).c_str(), stdout);
    std::fputc('\n', stdout);
    return;
  }
  std::vector<console::TextRow> rows;
  std::vector<std::string> footer;
  if (!console::RowsFromConfigJson(res.body, &rows, &footer, &error)) {
    FailConfig(1, fmt::format("{}: {}", url->ToString(), error));
  }
  std::fputs(console::DescribeRows(rows, footer).c_str(), stdout);
}

void Offline(const ConfigFlags& f) {
  std::vector<std::string> errors;
  console::LayeredConfig layers(config::ProcessEnv(), &errors);
  if (!f.console_file.empty()) {
    console::FileSource file(f.console_file, &layers);
    if (!file.PollOnce()) {
      errors.push_back(fmt::format("--console-file {}: {}", f.console_file,
                                   layers.Status(console::Layer::kFile).error));
    }
  }
  auto reports = console::BuildReports(layers, nullptr);
  console::LayerStatuses statuses;
  for (std::size_t i = 0; i < console::kLayerCount; ++i)
    statuses[i] = layers.Status(static_cast<console::Layer>(i));
  if (f.json) {
    std::fputs(console::ConfigJson(reports, statuses).c_str(), stdout);
    std::fputc('\n', stdout);
  } else {
    std::fputs(
        console::DescribeRows(console::RowsFromReports(reports), console::StatusLines(statuses))
            .c_str(),
        stdout);
  }
  for (const auto& e : errors) std::fprintf(stderr, "infertel config: %s\n", Printable(e).c_str());
  if (!errors.empty()) throw CLI::RuntimeError(2);
}

}  // namespace

void AddConfigCommand(CLI::App& app) {
  auto flags = std::make_shared<ConfigFlags>();
  CLI::App* sub = app.add_subcommand(
      "config",
      "Print the effective configuration (console > env > default) and each value's source");
  sub->add_flag("--markdown", flags->markdown,
                "Print the key table of docs/configuration.md instead");
  sub->add_flag("--markdown-options", flags->markdown_options,
                "Print the agent option table of docs/configuration.md instead");
  sub->add_option("--agent", flags->agent,
                  "Ask a running agent (its admin address, http://HOST:PORT) instead of "
                  "working it out here");
  sub->add_option("--admin-token", flags->admin_token,
                  "Bearer token for --agent (default: INFERTEL_ADMIN_TOKEN)");
  sub->add_option("--console-file", flags->console_file,
                  "Without --agent: a console file (YAML or JSON) layered over the environment");
  sub->add_flag("--json", flags->json, "Print the JSON of GET /api/config");
  sub->callback([flags] {
    if (flags->markdown) {
      std::fputs(config::KeysMarkdownTable().c_str(), stdout);
      return;
    }
    if (flags->markdown_options) {
      std::fputs(AgentOptionsMarkdown().c_str(), stdout);
      return;
    }
    if (!flags->agent.empty()) {
      FromAgent(*flags);
    } else {
      Offline(*flags);
    }
  });
}

}  // namespace infertel
