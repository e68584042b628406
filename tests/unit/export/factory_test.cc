#include "export/factory.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "common/telemetry_builders.h"
#include "export/debug/debug_exporter.h"

namespace infertel::exporting {
namespace {

config::EnvLookup Env(std::map<std::string, std::string> vars) {
  return [vars](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(ExportOptionsTest, ReadsOtelEnvironment) {
  std::vector<std::string> errors;
  ExportOptions o = FromEnv(Env({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"},
                                 {"OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"},
                                 {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:1/x"},
                                 {"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc"},
                                 {"OTEL_EXPORTER_OTLP_HEADERS", "api-key=a%20b, x=1=2 ,"},
                                 {"OTEL_EXPORTER_OTLP_TIMEOUT", "2500"},
                                 {"OTEL_EXPORTER_OTLP_COMPRESSION", "gzip"},
                                 {"OTEL_BSP_SCHEDULE_DELAY", "100"},
                                 {"OTEL_BSP_MAX_QUEUE_SIZE", "77"},
                                 {"OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "9"}}),
                            &errors);
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(o.otlp_endpoint, "http://c:4318");
  EXPECT_EQ(o.otlp_protocol, "http/json");
  EXPECT_EQ(o.traces.endpoint, "http://t:1/x");
  EXPECT_EQ(o.traces.protocol, "grpc");
  EXPECT_EQ(o.headers.at("api-key"), "a b");
  EXPECT_EQ(o.headers.at("x"), "1=2");
  EXPECT_EQ(o.timeout, std::chrono::milliseconds(2500));
  EXPECT_TRUE(o.gzip);
  EXPECT_EQ(o.batch.max_delay, std::chrono::milliseconds(100));
  EXPECT_EQ(o.batch.max_queue_items, 77u);
  EXPECT_EQ(o.batch.max_batch_items, 9u);
  EXPECT_TRUE(OtlpEnabled(o, "logs"));
  o.store_path = "infertel.db";
  const std::string d = Describe(o);
  EXPECT_NE(d.find("traces -> otlp grpc http://t:1/x + store infertel.db"), std::string::npos) << d;
  EXPECT_NE(d.find("logs -> otlp http/json http://c:4318/v1/logs"), std::string::npos) << d;
}

TEST(ExportOptionsTest, ReportsBadValuesByName) {
  std::vector<std::string> errors;
  ExportOptions o = FromEnv(Env({{"OTEL_EXPORTER_OTLP_PROTOCOL", "carrier-pigeon"},
                                 {"OTEL_EXPORTER_OTLP_TIMEOUT", "soon"},
                                 {"OTEL_BSP_MAX_QUEUE_SIZE", "-1"}}),
                            &errors);
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_NE(errors[0].find("OTEL_EXPORTER_OTLP_PROTOCOL"), std::string::npos);
  EXPECT_EQ(o.otlp_protocol, "http/protobuf");
  EXPECT_FALSE(OtlpEnabled(o, "traces"));
}

TEST(ExportOptionsTest, ParsesDurationsAndHeaders) {
  EXPECT_EQ(ParseDuration("24h"), std::chrono::milliseconds(24 * 3600 * 1000));
  EXPECT_EQ(ParseDuration("30m"), std::chrono::milliseconds(30 * 60 * 1000));
  EXPECT_EQ(ParseDuration("500ms"), std::chrono::milliseconds(500));
  EXPECT_EQ(ParseDuration("7d"), std::chrono::milliseconds(7ll * 86400 * 1000));
  EXPECT_EQ(ParseDuration("90"), std::chrono::milliseconds(90000));
  EXPECT_FALSE(ParseDuration("1w"));
  EXPECT_FALSE(ParseDuration("h"));
  std::map<std::string, std::string> h;
  EXPECT_FALSE(ParseOtlpHeaders("novalue", &h));
}

TEST(FactoryTest, StoreIsTheSinkWithoutAnEndpointAndJoinsOtlpWithOne) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("infertel-factory-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  ExportOptions o;
  o.store_path = (dir / "f.db").string();
  std::string error;
  auto only_store = BuildTraceExporters(o, &error);
  ASSERT_TRUE(only_store) << error;
  ASSERT_EQ(only_store->size(), 1u);
  EXPECT_EQ((*only_store)[0]->Name(), "store");

  o.otlp_endpoint = "http://127.0.0.1:4318";
  o.debug = true;
  auto both = BuildTraceExporters(o, &error);
  ASSERT_TRUE(both) << error;
  ASSERT_EQ(both->size(), 3u);
  EXPECT_EQ((*both)[0]->Name(), "otlp_http");
  EXPECT_EQ((*both)[1]->Name(), "store");
  EXPECT_EQ((*both)[2]->Name(), "debug");

  o.store_enabled = false;
  o.debug = false;
  o.otlp_protocol = "grpc";
  auto otlp_only = BuildMetricExporters(o, &error);
  ASSERT_TRUE(otlp_only) << error;
  ASSERT_EQ(otlp_only->size(), 1u);
  EXPECT_EQ((*otlp_only)[0]->Name(), "otlp_grpc");

  o.otlp_protocol = "smoke";
  EXPECT_FALSE(BuildLogExporters(o, &error));
  EXPECT_NE(error.find("smoke"), std::string::npos);

  o = ExportOptions{};
  o.store_path = (dir / "p.db").string();
  StatsRegistry stats;
  auto p = BuildPipelines(o, &stats, &error);
  ASSERT_NE(p, nullptr) << error;
  TracesRequest req;
  testing::AddSpan(&req, "0000000000000001", "", "x", 1, 2);
  p->traces->Submit(std::move(req));
  EXPECT_TRUE(p->Flush(std::chrono::seconds(2)));
  p->Shutdown(std::chrono::seconds(2));
  EXPECT_NE(stats.Render().find(
                "infertel_exporter_sent_items_total{exporter=\"store\",signal=\"traces\"} 1"),
            std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(FactoryTest, PutsTheStoreUnderTheDataDirectoryAndSaysWhy) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("infertel-factory-datadir-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const std::string data = (dir / "data").string();
  std::string error;
  ExportOptions o;
  EXPECT_FALSE(BuildTraceExporters(o, &error));  // no path until resolved
  EXPECT_NE(error.find("ResolveStorePath"), std::string::npos) << error;
  auto line = ResolveStorePath(&o, Env({{"INFERTEL_DATA_DIR", data}}), true, &error);
  ASSERT_TRUE(line) << error;
  EXPECT_EQ(o.store_path, data + "/store");
  EXPECT_EQ(*line, "store " + data + "/store (data directory " + data +
                       ": from INFERTEL_DATA_DIR; --data-dir DIR or INFERTEL_DATA_DIR to move "
                       "it, --store DIR for another directory, --no-store for none)");
  EXPECT_TRUE(std::filesystem::is_directory(data));

  o = ExportOptions{};
  o.store_path = "x.db";
  line = ResolveStorePath(&o, Env({}), false, &error);
  ASSERT_TRUE(line);
  EXPECT_EQ(line->rfind("store x.db (from --store; ", 0), 0u) << *line;
  EXPECT_EQ(o.store_path, "x.db");

  o = ExportOptions{};
  o.store_enabled = false;
  EXPECT_EQ(ResolveStorePath(&o, Env({}), false, &error), std::string());
  EXPECT_FALSE(ResolveStorePath(&(o = ExportOptions{}), Env({}), false, &error));
  EXPECT_NE(error.find("no data directory"), std::string::npos) << error;
  std::filesystem::remove_all(dir);
}

TEST(DebugExporterTest, PrintsOneLinePerSpan) {
  TracesRequest req;
  Span* s = testing::AddSpan(&req, "00000000000000a1", "", "chat m", 1000, 2501000);
  AddAttr(s->mutable_attributes(), semconv::kGenAiRequestModel, "m");
  testing::AddSpan(&req, "00000000000000b2", "00000000000000a1", "child", 1000, 2000);
  EXPECT_EQ(FormatDebug(req),
            "span trace=0af7651916cd43dd8448eb211c80319c span=00000000000000a1 parent=- "
            "name=\"chat m\" kind=1 dur_ms=2.500 status=0 service=infertel-test "
            "attrs={\"gen_ai.request.model\":\"m\"}\n"
            "span trace=0af7651916cd43dd8448eb211c80319c span=00000000000000b2 "
            "parent=00000000000000a1 name=\"child\" kind=1 dur_ms=0.001 status=0 "
            "service=infertel-test attrs={}\n");
  std::FILE* f = std::tmpfile();
  auto e = MakeDebugTraceExporter(DebugOptions{f, false});
  EXPECT_TRUE(e->Export(req).ok());
  std::rewind(f);
  char buf[1024] = {};
  const std::size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  EXPECT_EQ(std::string(buf, n), FormatDebug(req));
}

}  // namespace
}  // namespace infertel::exporting
