// The simulator's vLLM /metrics (facts/vllm.md §2): exposition format, names and labels per
// engine generation and vLLM version, values following the engine, and side-by-side
// comparison with real scrapes in tests/fixtures.

#include "sim/vllm/vllm_metrics.h"

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "sim/engine/prometheus_text.h"
#include "sim/sim_server.h"
#include "sim_test_client.h"

namespace infertel::sim {
namespace {

using namespace std::chrono_literals;
using testing::SimGet;
using testing::SimPost;
using testing::WaitFor;

// A parsed exposition: HELP and TYPE per family, samples as (name, labels) -> value.
struct Exposition {
  std::map<std::string, std::string> help, type;
  std::vector<std::pair<std::string, std::map<std::string, std::string>>> samples;
  std::vector<double> values;
  std::vector<std::string> order;  // label keys of each sample, in written order

  // Value of the first sample `name` whose labels include `want`; NaN when absent.
  double Value(const std::string& name, const std::map<std::string, std::string>& want = {}) const {
    for (std::size_t i = 0; i < samples.size(); ++i) {
      if (samples[i].first != name) continue;
      bool ok = true;
      for (const auto& [k, v] : want) {
        auto it = samples[i].second.find(k);
        ok = ok && it != samples[i].second.end() && it->second == v;
      }
      if (ok) return values[i];
    }
    return std::nan("");
  }
  bool Has(const std::string& family) const { return type.count(family) != 0; }
  std::set<std::string> Families(const std::string& prefix) const {
    std::set<std::string> out;
    for (const auto& [k, v] : type)
      if (k.rfind(prefix, 0) == 0) out.insert(k);
    return out;
  }
};

Exposition ParseExposition(const std::string& text) {
  Exposition e;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line.rfind("# HELP ", 0) == 0) {
      auto sp = line.find(' ', 7);
      e.help[line.substr(7, sp - 7)] = sp == std::string::npos ? "" : line.substr(sp + 1);
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      auto sp = line.find(' ', 7);
      e.type[line.substr(7, sp - 7)] = line.substr(sp + 1);
      continue;
    }
    std::string name;
    std::map<std::string, std::string> labels;
    std::string keys;
    std::size_t i = line.find_first_of("{ ");
    name = line.substr(0, i);
    if (line[i] == '{') {
      ++i;
      while (line[i] != '}') {
        auto eq = line.find('=', i);
        std::string k = line.substr(i, eq - i);
        std::string v;
        std::size_t j = eq + 2;
        for (; line[j] != '"'; ++j) {
          if (line[j] == '\\') ++j;
          v += line[j];
        }
        labels[k] = v;
        keys += k + ",";
        i = j + 1;
        if (line[i] == ',') ++i;
      }
      ++i;
    }
    e.samples.emplace_back(name, labels);
    e.values.push_back(std::stod(line.substr(i + 1)));
    e.order.push_back(keys);
  }
  return e;
}

std::string ReadFixture(const std::string& name) {
  std::ifstream f(std::string(INFERTEL_FIXTURES_DIR) + "/" + name);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::unique_ptr<SimServer> StartSim(SimOptions o) {
  if (o.engine_config.speed == 1.0) o.engine_config.speed = 50.0;
  o.engine_config.seed = 11;
  std::string error;
  auto s = SimServer::Start(o, &error);
  EXPECT_TRUE(s) << error;
  return s;
}

Exposition Scrape(SimServer& s, std::string* content_type = nullptr) {
  auto r = SimGet(s.port(), "/metrics");
  EXPECT_EQ(r.status, 200);
  if (content_type) *content_type = r.content_type;
  return ParseExposition(r.body);
}

const std::map<std::string, std::string> kV1 = {{"engine", "0"}, {"model_name", "demo-model"}};

TEST(PromFloatTest, MatchesPrometheusClientRendering) {
  EXPECT_EQ(PromFloat(0), "0.0");
  EXPECT_EQ(PromFloat(246), "246.0");
  EXPECT_EQ(PromFloat(1.0), "1.0");
  EXPECT_EQ(PromFloat(0.001), "0.001");
  EXPECT_EQ(PromFloat(2560), "2560.0");
  EXPECT_EQ(PromFloat(-1), "-1.0");
  EXPECT_EQ(PromFloat(14.040000000000001), "14.040000000000001");
  EXPECT_EQ(PromFloat(0.0011764705882353343), "0.0011764705882353343");
  EXPECT_EQ(PromFloat(5.4589007049798965e-05), "5.4589007049798965e-05");
  EXPECT_EQ(PromFloat(1771042457.4207425), "1.7710424574207425e+09");
  EXPECT_EQ(PromFloat(13720145920.0), "1.372014592e+010");
  EXPECT_EQ(PromFloat(1109622784.0), "1.109622784e+09");
  EXPECT_EQ(PromFloat(1e16), "1e+16");
  EXPECT_EQ(PromFloat(1.0 / 0.0), "+Inf");
}

TEST(VllmMetricsTest, V1ExpositionShapeAtDefaultVersion) {
  auto s = StartSim(SimOptions{});
  ASSERT_TRUE(s);
  std::string ct;
  Exposition e = Scrape(*s, &ct);
  EXPECT_EQ(ct, "text/plain; version=0.0.4; charset=utf-8");
  const std::map<std::string, std::string> types = {
      {"vllm:num_requests_running", "gauge"},
      {"vllm:num_requests_waiting", "gauge"},
      {"vllm:kv_cache_usage_perc", "gauge"},
      {"vllm:prefix_cache_queries_total", "counter"},
      {"vllm:prefix_cache_queries_created", "gauge"},
      {"vllm:prefix_cache_hits_total", "counter"},
      {"vllm:num_preemptions_total", "counter"},
      {"vllm:prompt_tokens_total", "counter"},
      {"vllm:generation_tokens_total", "counter"},
      {"vllm:request_success_total", "counter"},
      {"vllm:request_success_created", "gauge"},
      {"vllm:request_prompt_tokens", "histogram"},
      {"vllm:request_generation_tokens", "histogram"},
      {"vllm:iteration_tokens_total", "histogram"},
      {"vllm:request_max_num_generation_tokens", "histogram"},
      {"vllm:request_params_n", "histogram"},
      {"vllm:request_params_max_tokens", "histogram"},
      {"vllm:time_to_first_token_seconds", "histogram"},
      {"vllm:inter_token_latency_seconds", "histogram"},
      {"vllm:request_time_per_output_token_seconds", "histogram"},
      {"vllm:e2e_request_latency_seconds", "histogram"},
      {"vllm:request_queue_time_seconds", "histogram"},
      {"vllm:request_prefill_time_seconds", "histogram"},
      {"vllm:request_decode_time_seconds", "histogram"},
      {"vllm:request_inference_time_seconds", "histogram"},
      {"vllm:cache_config_info", "gauge"},
      {"python_info", "gauge"},
      {"process_resident_memory_bytes", "gauge"},
  };
  for (const auto& [name, type] : types) {
    EXPECT_EQ(e.type[name], type) << name;
    EXPECT_FALSE(e.help[name].empty()) << name;
  }
  // 0.11: the 0.9.2-deprecated names are hidden.
  EXPECT_FALSE(e.Has("vllm:gpu_cache_usage_perc"));
  EXPECT_FALSE(e.Has("vllm:gpu_prefix_cache_queries_total"));
  // Every vllm: sample carries engine="0" and model_name, except cache_config_info.
  for (std::size_t i = 0; i < e.samples.size(); ++i) {
    const auto& [name, labels] = e.samples[i];
    if (name.rfind("vllm:", 0) != 0) continue;
    EXPECT_EQ(labels.count("engine") ? labels.at("engine") : "", "0") << name;
    if (name != "vllm:cache_config_info") {
      EXPECT_EQ(labels.count("model_name") ? labels.at("model_name") : "", "demo-model") << name;
    }
  }
  for (const char* reason : {"stop", "length", "abort"}) {
    EXPECT_EQ(e.Value("vllm:request_success_total", {{"finished_reason", reason}}), 0) << reason;
    EXPECT_GT(e.Value("vllm:request_success_created", {{"finished_reason", reason}}), 1.7e9);
  }
  // Exact bucket lists.
  std::vector<std::string> les;
  for (const auto& [name, labels] : e.samples)
    if (name == "vllm:request_params_n_bucket") les.push_back(labels.at("le"));
  EXPECT_EQ(les, (std::vector<std::string>{"1.0", "2.0", "5.0", "10.0", "20.0", "+Inf"}));
  les.clear();
  for (const auto& [name, labels] : e.samples)
    if (name == "vllm:request_prompt_tokens_bucket") les.push_back(labels.at("le"));
  // max_model_len 8192 -> 1-2-5 up to 5000.
  ASSERT_FALSE(les.empty());
  EXPECT_EQ(les[les.size() - 2], "5000.0");
  EXPECT_EQ(les.size(), 13u);
  EXPECT_EQ(e.Value("vllm:cache_config_info", {{"block_size", "16"}, {"num_gpu_blocks", "4096"}}),
            1);
}

TEST(VllmMetricsTest, ValuesFollowTrafficAndAbortsAreNotCounted) {
  auto s = StartSim(SimOptions{});
  ASSERT_TRUE(s);
  int prompt = 0, completion = 0, last_prompt = 0;
  for (const char* body : {R"({"prompt":"one two three","max_tokens":4,"ignore_eos":true})",
                           R"({"prompt":"four five","max_tokens":200})",
                           R"({"prompt":"six","max_tokens":3,"n":2,"ignore_eos":true})"}) {
    auto r = SimPost(s->port(), "/v1/completions", body);
    ASSERT_EQ(r.status, 200) << r.body;
    simdjson::dom::parser p;
    auto doc = p.parse(r.body);
    last_prompt = static_cast<int>(int64_t(doc["usage"]["prompt_tokens"]));
    prompt += last_prompt;
    completion += static_cast<int>(int64_t(doc["usage"]["completion_tokens"]));
  }
  // The n=2 request is two engine requests, each counting the prompt.
  const int prompt_engine = prompt + last_prompt;
  testing::SimStreamThenDisconnect(
      s->port(),
      R"({"messages":[{"role":"user","content":"go"}],"max_tokens":4000,"ignore_eos":true,"stream":true})");
  ASSERT_TRUE(WaitFor([&] { return s->engine().Stats().aborted == 1; }));
  Exposition e = Scrape(*s);
  EXPECT_EQ(e.Value("vllm:request_success_total", {{"finished_reason", "length"}}),
            3);  // 4 + 3 + 3
  EXPECT_EQ(e.Value("vllm:request_success_total", {{"finished_reason", "stop"}}), 1);
  EXPECT_EQ(e.Value("vllm:request_success_total", {{"finished_reason", "abort"}}), 0);
  EXPECT_EQ(e.Value("vllm:e2e_request_latency_seconds_count", kV1), 4);
  EXPECT_EQ(e.Value("vllm:request_params_n_count", kV1), 3);
  EXPECT_EQ(e.Value("vllm:request_params_n_sum", kV1), 4);
  EXPECT_EQ(e.Value("vllm:request_generation_tokens_sum", kV1), completion);
  EXPECT_EQ(e.Value("vllm:request_prompt_tokens_sum", kV1), prompt_engine);
  // Token counters include the aborted stream's prompt and tokens, as vLLM's do.
  EXPECT_GE(e.Value("vllm:generation_tokens_total", kV1), completion);
  EXPECT_GE(e.Value("vllm:prompt_tokens_total", kV1), prompt_engine);
  // 4 finished, plus the aborted one if it got its first token.
  EXPECT_GE(e.Value("vllm:time_to_first_token_seconds_count", kV1), 4);
  EXPECT_LE(e.Value("vllm:time_to_first_token_seconds_count", kV1), 5);
  EXPECT_EQ(e.Value("vllm:request_max_num_generation_tokens_count", kV1), 3);
  EXPECT_EQ(e.Value("vllm:num_requests_running", kV1), 0);
  EXPECT_EQ(e.Value("vllm:kv_cache_usage_perc", kV1), 0);
  // Buckets are cumulative and end at the count.
  double prev = 0;
  for (std::size_t i = 0; i < e.samples.size(); ++i) {
    if (e.samples[i].first != "vllm:e2e_request_latency_seconds_bucket") continue;
    EXPECT_GE(e.values[i], prev);
    prev = e.values[i];
  }
  EXPECT_EQ(prev, 4);
  EXPECT_GT(e.Value("vllm:iteration_tokens_total_count", kV1), 0);
  EXPECT_GT(e.Value("vllm:inter_token_latency_seconds_count", kV1), 0);
}

TEST(VllmMetricsTest, RunningAndWaitingDuringLoadAndKvUsage) {
  SimOptions o;
  o.engine_config.max_num_seqs = 2;
  // Slow enough that the state looked for (2 running, 3 waiting) lasts the first pair's
  // whole run, about half a second: at speed 5 it lasted some 20 ms, which a scrape on a
  // loaded machine (or a client thread started late) missed.
  o.engine_config.speed = 0.25;
  auto s = StartSim(o);
  ASSERT_TRUE(s);
  std::vector<std::thread> clients;
  for (int i = 0; i < 5; ++i) {
    clients.emplace_back([&, i] {
      SimPost(
          s->port(), "/v1/completions",
          R"({"prompt":"load )" + std::to_string(i) + R"(","max_tokens":40,"ignore_eos":true})");
    });
  }
  bool seen = false;
  double kv = 0;
  WaitFor([&] {
    Exposition e = Scrape(*s);
    if (e.Value("vllm:num_requests_running", kV1) == 2 &&
        e.Value("vllm:num_requests_waiting", kV1) == 3) {
      seen = true;
      kv = e.Value("vllm:kv_cache_usage_perc", kV1);
    }
    return seen;
  });
  for (auto& t : clients) t.join();
  EXPECT_TRUE(seen);
  EXPECT_GT(kv, 0);
  EXPECT_LT(kv, 1);
  Exposition e = Scrape(*s);
  EXPECT_EQ(e.Value("vllm:num_requests_running", kV1), 0);
  EXPECT_EQ(e.Value("vllm:num_requests_waiting", kV1), 0);
  EXPECT_EQ(e.Value("vllm:request_success_total", {{"finished_reason", "length"}}), 5);
  EXPECT_GT(e.Value("vllm:request_queue_time_seconds_sum", kV1), 0);
}

TEST(VllmMetricsTest, PrefixHitsOnRepeatedPromptAndPreemptionsUnderKvPressure) {
  {
    auto s = StartSim(SimOptions{});
    ASSERT_TRUE(s);
    std::string prompt;
    for (int i = 0; i < 80; ++i) prompt += "word" + std::to_string(i) + " ";
    const std::string body = R"({"prompt":")" + prompt + R"(","max_tokens":2})";
    ASSERT_EQ(SimPost(s->port(), "/v1/completions", body).status, 200);
    Exposition first = Scrape(*s);
    EXPECT_EQ(first.Value("vllm:prefix_cache_hits_total", kV1), 0);
    ASSERT_EQ(SimPost(s->port(), "/v1/completions", body).status, 200);
    Exposition second = Scrape(*s);
    EXPECT_GT(second.Value("vllm:prefix_cache_hits_total", kV1), 0);
    EXPECT_EQ(second.Value("vllm:prefix_cache_queries_total", kV1),
              2 * first.Value("vllm:prefix_cache_queries_total", kV1));
  }
  {
    SimOptions o;
    o.engine_config.num_kv_blocks = 12;
    o.engine_config.block_size = 16;
    // Slow enough that the three requests run together, whenever their client threads start:
    // at full speed the first could finish before the last arrived on a loaded machine, and
    // with no pressure on the KV cache nothing was preempted.
    o.engine_config.speed = 0.25;
    auto s = StartSim(o);
    ASSERT_TRUE(s);
    std::vector<std::thread> clients;
    for (int i = 0; i < 3; ++i) {
      clients.emplace_back([&, i] {
        std::string prompt;
        for (int k = 0; k < 30; ++k) prompt += "p" + std::to_string(i * 100 + k) + " ";
        SimPost(s->port(), "/v1/completions",
                R"({"prompt":")" + prompt + R"(","max_tokens":60,"ignore_eos":true})");
      });
    }
    for (auto& t : clients) t.join();
    Exposition e = Scrape(*s);
    EXPECT_GT(e.Value("vllm:num_preemptions_total", kV1), 0);
    EXPECT_EQ(e.Value("vllm:num_preemptions_total", kV1),
              static_cast<double>(s->engine().Stats().preemptions));
    EXPECT_EQ(e.Value("vllm:request_success_total", {{"finished_reason", "length"}}), 3);
  }
}

TEST(VllmMetricsTest, DeprecatedNamesFollowVllmVersion) {
  auto families = [](const std::string& version, const std::string& show_hidden = "") {
    SimOptions o;
    o.vllm_version = version;
    o.show_hidden_metrics_for_version = show_hidden;
    auto s = StartSim(o);
    EXPECT_TRUE(s);
    return Scrape(*s);
  };
  Exposition v10 = families("0.10.1");
  for (const char* f : {"vllm:gpu_cache_usage_perc", "vllm:kv_cache_usage_perc",
                        "vllm:gpu_prefix_cache_queries_total", "vllm:gpu_prefix_cache_hits_total",
                        "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total",
                        "vllm:time_per_output_token_seconds"})
    EXPECT_TRUE(v10.Has(f)) << f;
  EXPECT_FALSE(v10.Has("vllm:inter_token_latency_seconds"));
  EXPECT_EQ(v10.Value("vllm:gpu_prefix_cache_queries_total", kV1),
            v10.Value("vllm:prefix_cache_queries_total", kV1));

  Exposition v11 = families("0.11.0");
  EXPECT_FALSE(v11.Has("vllm:gpu_cache_usage_perc"));
  EXPECT_TRUE(v11.Has("vllm:time_per_output_token_seconds"));
  EXPECT_TRUE(v11.Has("vllm:inter_token_latency_seconds"));
  Exposition v11h = families("0.11.0", "0.10");
  EXPECT_TRUE(v11h.Has("vllm:gpu_cache_usage_perc"));
  EXPECT_TRUE(v11h.Has("vllm:gpu_prefix_cache_hits_total"));

  Exposition v12 = families("0.12.0", "0.10");
  EXPECT_FALSE(v12.Has("vllm:gpu_cache_usage_perc"));
  EXPECT_FALSE(v12.Has("vllm:gpu_prefix_cache_queries_total"));
  EXPECT_FALSE(v12.Has("vllm:time_per_output_token_seconds"));
  EXPECT_TRUE(v12.Has("vllm:kv_cache_usage_perc"));
  EXPECT_TRUE(v12.Has("vllm:engine_sleep_state"));

  SimOptions bad;
  bad.vllm_version = "latest";
  std::string error;
  EXPECT_FALSE(SimServer::Start(bad, &error));
}

TEST(VllmMetricsTest, V0NamesAndLabels) {
  SimOptions o;
  o.engine_version = "v0";
  auto s = StartSim(o);
  ASSERT_TRUE(s);
  ASSERT_EQ(SimPost(s->port(), "/v1/completions", R"({"prompt":"a","max_tokens":2})").status, 200);
  Exposition e = Scrape(*s);
  for (const char* f :
       {"vllm:gpu_cache_usage_perc", "vllm:cpu_cache_usage_perc", "vllm:num_requests_swapped",
        "vllm:gpu_prefix_cache_hit_rate", "vllm:cpu_prefix_cache_hit_rate",
        "vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:request_success_total",
        "vllm:time_per_output_token_seconds", "vllm:lora_requests_info"})
    EXPECT_TRUE(e.Has(f)) << f;
  for (const char* f : {"vllm:kv_cache_usage_perc", "vllm:prefix_cache_queries_total",
                        "vllm:inter_token_latency_seconds"})
    EXPECT_FALSE(e.Has(f)) << f;
  for (const auto& [name, labels] : e.samples) {
    if (name.rfind("vllm:", 0) != 0) continue;
    EXPECT_EQ(labels.count("engine"), 0u) << name;
  }
  const std::map<std::string, std::string> v0 = {{"model_name", "demo-model"}};
  EXPECT_EQ(e.Value("vllm:request_success_total", {{"finished_reason", "length"}}), 1);
  // V0 creates reason children on first use only.
  EXPECT_TRUE(std::isnan(e.Value("vllm:request_success_total", {{"finished_reason", "abort"}})));
  EXPECT_EQ(e.Value("vllm:e2e_request_latency_seconds_count", v0), 1);
  EXPECT_EQ(SimGet(s->port(), "/version").body, R"({"version":"0.7.3"})");
}

// Same vLLM families, types, HELP texts and label keys as a real 0.10.1 scrape.
TEST(VllmMetricsTest, MatchesRealV1ScrapeSideBySide) {
  const Exposition real = ParseExposition(ReadFixture("vllm-metrics-v1-ngc25.09.txt"));
  ASSERT_FALSE(real.type.empty());
  SimOptions o;
  o.vllm_version = "0.10.1";
  auto s = StartSim(o);
  ASSERT_TRUE(s);
  ASSERT_EQ(SimPost(s->port(), "/v1/completions", R"({"prompt":"a b","max_tokens":3})").status,
            200);
  const Exposition mine = Scrape(*s);
  EXPECT_EQ(mine.Families("vllm:"), real.Families("vllm:"));
  for (const auto& f : real.Families("vllm:")) {
    EXPECT_EQ(mine.type.at(f), real.type.at(f)) << f;
    EXPECT_EQ(mine.help.at(f), real.help.at(f)) << f;
  }
  for (const auto& f : real.Families("python_")) EXPECT_TRUE(mine.Has(f)) << f;
  for (const auto& f : real.Families("process_")) EXPECT_TRUE(mine.Has(f)) << f;
  // Label keys, in written order, per sample name.
  std::map<std::string, std::set<std::string>> real_keys, my_keys;
  for (std::size_t i = 0; i < real.samples.size(); ++i)
    if (real.samples[i].first.rfind("vllm:", 0) == 0)
      real_keys[real.samples[i].first].insert(real.order[i]);
  for (std::size_t i = 0; i < mine.samples.size(); ++i)
    if (mine.samples[i].first.rfind("vllm:", 0) == 0)
      my_keys[mine.samples[i].first].insert(mine.order[i]);
  EXPECT_EQ(my_keys, real_keys);
  // Bucket bounds of the fixed-bucket histograms.
  auto bounds = [](const Exposition& e, const std::string& name) {
    std::vector<std::string> out;
    for (const auto& [n, l] : e.samples)
      if (n == name) out.push_back(l.at("le"));
    return out;
  };
  for (const char* h :
       {"vllm:time_to_first_token_seconds_bucket", "vllm:time_per_output_token_seconds_bucket",
        "vllm:e2e_request_latency_seconds_bucket", "vllm:iteration_tokens_total_bucket",
        "vllm:request_params_n_bucket", "vllm:request_prompt_tokens_bucket"})
    EXPECT_EQ(bounds(mine, h), bounds(real, h)) << h;
}

TEST(VllmMetricsTest, V0MatchesRealPartialScrape) {
  const Exposition real =
      ParseExposition(ReadFixture("vllm-metrics-v0-0.7.x-aibrix-docs-partial.txt"));
  ASSERT_FALSE(real.type.empty());
  SimOptions o;
  o.engine_version = "v0";
  auto s = StartSim(o);
  ASSERT_TRUE(s);
  ASSERT_EQ(SimPost(s->port(), "/v1/completions", R"({"prompt":"a b","max_tokens":3})").status,
            200);
  const Exposition mine = Scrape(*s);
  for (const auto& [f, t] : real.type) {
    ASSERT_TRUE(mine.Has(f)) << f;
    EXPECT_EQ(mine.type.at(f), t) << f;
    if (real.help.count(f)) {
      EXPECT_EQ(mine.help.at(f), real.help.at(f)) << f;
    }
  }
  std::vector<std::string> real_le, my_le;
  for (const auto& [n, l] : real.samples)
    if (n == "vllm:iteration_tokens_total_bucket") real_le.push_back(l.at("le"));
  for (const auto& [n, l] : mine.samples)
    if (n == "vllm:iteration_tokens_total_bucket") my_le.push_back(l.at("le"));
  ASSERT_GE(my_le.size(), real_le.size());
  EXPECT_EQ(std::vector<std::string>(my_le.begin(), my_le.begin() + real_le.size()), real_le);
}

}  // namespace
}  // namespace infertel::sim
