#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdio>
#include <fstream>

#include "app/agent.h"
#include "common/engine_ids.h"

namespace infertel {
namespace {

std::string WriteTemp(const std::string& text) {
  char path[] = "/tmp/infertel-agent-file-XXXXXX";
  int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << text;
  return path;
}

TEST(AgentFileTest, SeveralUpstreamsEachWithItsListenAddressAndEngine) {
  std::string path = WriteTemp(R"(
admin: 127.0.0.1:9500
upstreams:
  - name: llama
    engine: vllm
    url: http://127.0.0.1:8000
    listen: 0.0.0.0:9000
  - name: qwen
    engine: sglang
    url: http://10.1.2.3:30000
    listen: 127.0.0.1:9001
    pd_role: none
  - name: prefill
    url: http://127.0.0.1:8100
    listen: 127.0.0.1:9002
    pd_role: producer
    engine_version: v1
    data_parallel_size: 2
)");
  AgentOptions o;
  std::string error;
  ASSERT_TRUE(LoadAgentFile(path, &o, &error)) << error;
  ASSERT_EQ(o.upstreams.size(), 3u);
  EXPECT_EQ(o.upstreams[0].name, "llama");
  EXPECT_EQ(o.upstreams[0].listen.port, 9000);
  EXPECT_EQ(o.upstreams[1].engine, SglangEngineId());
  EXPECT_EQ(o.upstreams[1].url.host, "10.1.2.3");
  EXPECT_EQ(o.upstreams[2].engine, VllmEngineId());  // the default engine
  EXPECT_EQ(o.upstreams[2].pd_role, "producer");
  EXPECT_EQ(o.upstreams[2].engine_version, "v1");
  EXPECT_EQ(o.upstreams[2].data_parallel_size, 2);
  EXPECT_EQ(o.admin.port, 9500);
  std::remove(path.c_str());
}

TEST(AgentFileTest, BadValuesNameTheirKey) {
  struct Case {
    const char* yaml;
    const char* key;
  } cases[] = {
      {"upstreams:\n  - engine: tgi\n    url: http://h:1\n    listen: 127.0.0.1:1\n",
       "upstreams[0].engine"},
      {"upstreams:\n  - url: nope://h\n    listen: 127.0.0.1:1\n", "upstreams[0].url"},
      {"upstreams:\n  - url: http://h:1\n    listen: 127.0.0.1\n", "upstreams[0].listen"},
      {"upstreams:\n  - url: http://h:1\n    listen: 127.0.0.1:1\n    pd_role: both\n",
       "upstreams[0].pd_role"},
      {"admin: nowhere\n", "admin"},
      {"upstreams: {a: 1}\n", "upstreams"},
      {"upstreams: [\n", ""},  // not YAML at all
  };
  for (const auto& c : cases) {
    std::string path = WriteTemp(c.yaml);
    AgentOptions o;
    std::string error;
    EXPECT_FALSE(LoadAgentFile(path, &o, &error)) << c.yaml;
    EXPECT_NE(error.find(c.key), std::string::npos) << error;
    std::remove(path.c_str());
  }
  AgentOptions o;
  std::string error;
  EXPECT_FALSE(LoadAgentFile("/nonexistent/agent.yaml", &o, &error));
}

}  // namespace
}  // namespace infertel
