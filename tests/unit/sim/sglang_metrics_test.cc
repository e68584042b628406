// The simulator's SGLang /metrics (facts/sglang.md §2) by release, compared with the published
// scrapes (0.3.5, 0.4.0, 0.4.3 docs; the DP8 fragment), and following the engine's state.

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "sglang_test_util.h"

namespace infertel::sim {
namespace {

using testing::SimGet;
using testing::SimPost;
using testing::WaitFor;

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};
struct Family {
  std::string type, help;
  std::vector<Sample> samples;
};

// A small exposition parser: families by name (HELP/TYPE), samples attached to the family
// whose name prefixes them (histogram _sum/_bucket/_count).
std::map<std::string, Family> Parse(const std::string& text) {
  std::map<std::string, Family> out;
  std::istringstream in(text);
  std::string line, current;
  static const std::regex sample_re(R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)$)");
  static const std::regex label_re(R"re(([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)")re");
  while (std::getline(in, line)) {
    if (line.rfind("# HELP ", 0) == 0) {
      auto sp = line.find(' ', 7);
      current = line.substr(7, sp - 7);
      out[current].help = sp == std::string::npos ? "" : line.substr(sp + 1);
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      auto sp = line.find(' ', 7);
      current = line.substr(7, sp - 7);
      out[current].type = line.substr(sp + 1);
      continue;
    }
    std::smatch m;
    if (!std::regex_match(line, m, sample_re)) continue;
    Sample s;
    s.name = m[1];
    std::string labels = m[3];
    for (auto it = std::sregex_iterator(labels.begin(), labels.end(), label_re);
         it != std::sregex_iterator(); ++it)
      s.labels[(*it)[1]] = (*it)[2];
    s.value = std::stod(m[4]);
    std::string fam = s.name;
    if (!out.count(fam)) {
      for (const char* suffix : {"_bucket", "_count", "_sum"}) {
        std::string sfx = suffix;
        if (fam.size() > sfx.size() && fam.substr(fam.size() - sfx.size()) == sfx &&
            out.count(fam.substr(0, fam.size() - sfx.size()))) {
          fam = fam.substr(0, fam.size() - sfx.size());
          break;
        }
      }
    }
    out[fam].samples.push_back(std::move(s));
  }
  return out;
}

std::string Fixture(const std::string& name) {
  std::ifstream f(std::string(INFERTEL_FIXTURES_DIR) + "/" + name);
  EXPECT_TRUE(f) << name;
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::set<std::string> LabelKeys(const Family& f, bool with_le = false) {
  std::set<std::string> k;
  for (const auto& s : f.samples)
    for (const auto& [key, v] : s.labels)
      if (with_le || key != "le") k.insert(key);
  return k;
}
std::vector<std::string> Les(const Family& f) {
  std::vector<std::string> les;
  std::string first;
  for (const auto& s : f.samples) {
    if (s.labels.count("le") == 0) continue;
    les.push_back(s.labels.at("le"));
  }
  // One label set's buckets (the first +Inf ends them).
  auto inf = std::find(les.begin(), les.end(), "+Inf");
  if (inf != les.end()) les.erase(inf + 1, les.end());
  return les;
}
double Value(const Family& f, const std::string& sample_name,
             const std::map<std::string, std::string>& match = {}) {
  double sum = 0;
  for (const auto& s : f.samples) {
    if (s.name != sample_name) continue;
    bool ok = true;
    for (const auto& [k, v] : match) ok = ok && s.labels.count(k) && s.labels.at(k) == v;
    if (ok) sum += s.value;
  }
  return sum;
}

class SglangMetricsTest : public ::testing::Test {
 protected:
  std::unique_ptr<SimServer> Start(const std::string& version, SimOptions o = {}) {
    o.sglang.version = version;
    o.sglang.enable_metrics = true;
    o.sglang.decode_log_interval = 1;
    o.model = "meta-llama/Llama-3.1-8B-Instruct";
    return testing::StartSglang(std::move(o));
  }
  // Traffic: non-streaming and streaming requests; returns the usage totals seen.
  void Traffic(std::uint16_t port, int* prompt, int* completion, int* stream_itl) {
    *prompt = *completion = *stream_itl = 0;
    for (int i = 0; i < 3; ++i) {
      auto r = SimPost(port, "/v1/chat/completions",
                       R"({"model":"m","messages":[{"role":"user","content":"request number )" +
                           std::to_string(i) + R"("}],"max_tokens":7,"ignore_eos":true})");
      ASSERT_EQ(r.status, 200) << r.body;
      simdjson::dom::parser p;
      auto doc = p.parse(r.body);
      *prompt += static_cast<int>(int64_t(doc["usage"]["prompt_tokens"]));
      *completion += static_cast<int>(int64_t(doc["usage"]["completion_tokens"]));
    }
    auto r = SimPost(
        port, "/v1/completions",
        R"({"model":"m","prompt":"stream me","max_tokens":5,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}})");
    ASSERT_EQ(r.status, 200);
    auto pos = r.body.rfind("\"usage\":");
    ASSERT_NE(pos, std::string::npos) << r.body;
    simdjson::dom::parser p;
    auto line_end = r.body.find("\n", pos);
    std::string usage_chunk = r.body.substr(r.body.rfind("data: ", pos) + 6);
    usage_chunk = usage_chunk.substr(0, usage_chunk.find("\n"));
    (void)line_end;
    auto doc = p.parse(usage_chunk);
    *prompt += static_cast<int>(int64_t(doc["usage"]["prompt_tokens"]));
    const int c = static_cast<int>(int64_t(doc["usage"]["completion_tokens"]));
    *completion += c;
    *stream_itl = c - 1;
  }
};

// Every family of the documented scrape, with its type, HELP text, label keys and buckets.
void ExpectSameShape(const std::map<std::string, Family>& fixture,
                     const std::map<std::string, Family>& sim) {
  for (const auto& [name, f] : fixture) {
    if (f.samples.empty()) continue;
    auto it = sim.find(name);
    ASSERT_NE(it, sim.end()) << "missing family " << name;
    EXPECT_EQ(it->second.type, f.type) << name;
    EXPECT_EQ(it->second.help, f.help) << name;
    EXPECT_EQ(LabelKeys(it->second), LabelKeys(f)) << name;
    if (f.type == "histogram") EXPECT_EQ(Les(it->second), Les(f)) << name;
  }
  for (const auto& [name, f] : sim) {
    if (name.rfind("sglang:", 0) == 0) EXPECT_TRUE(fixture.count(name)) << "extra family " << name;
  }
}

TEST_F(SglangMetricsTest, Release035MatchesItsDocumentedScrape) {
  auto server = Start("0.3.5");
  ASSERT_TRUE(server);
  int prompt, completion, itl;
  Traffic(server->port(), &prompt, &completion, &itl);
  auto res = SimGet(server->port(), "/metrics");
  ASSERT_EQ(res.status, 200);
  EXPECT_EQ(res.content_type, "text/plain; version=0.0.4; charset=utf-8");
  auto sim = Parse(res.body);
  ExpectSameShape(Parse(Fixture("sglang-metrics-0.3.5-docs.txt")), sim);
  EXPECT_EQ(Value(sim["sglang:prompt_tokens_total"], "sglang:prompt_tokens_total"), prompt);
  EXPECT_EQ(Value(sim["sglang:generation_tokens_total"], "sglang:generation_tokens_total"),
            completion);
  EXPECT_EQ(
      Value(sim["sglang:e2e_request_latency_seconds"], "sglang:e2e_request_latency_seconds_count"),
      4);
  EXPECT_EQ(sim["sglang:num_requests_running"].samples[0].labels.at("name"),
            "meta-llama/Llama-3.1-8B-Instruct");
  // Histogram samples in the multiprocess collector's order: _sum, buckets, _count.
  const auto& ttft = sim["sglang:time_to_first_token_seconds"].samples;
  EXPECT_EQ(ttft.front().name, "sglang:time_to_first_token_seconds_sum");
  EXPECT_EQ(ttft.back().name, "sglang:time_to_first_token_seconds_count");
  EXPECT_EQ(res.body.find("_created"), std::string::npos);
}

TEST_F(SglangMetricsTest, Release040And043MatchTheirDocumentedScrapes) {
  for (const char* v : {"0.4.0", "0.4.3"}) {
    SCOPED_TRACE(v);
    auto server = Start(v);
    ASSERT_TRUE(server);
    int prompt, completion, itl;
    Traffic(server->port(), &prompt, &completion, &itl);
    auto sim = Parse(SimGet(server->port(), "/metrics").body);
    ExpectSameShape(Parse(Fixture(std::string("sglang-metrics-") + v + "-docs.txt")), sim);
    EXPECT_EQ(Value(sim["sglang:prompt_tokens_total"], "sglang:prompt_tokens_total"), prompt);
    // Per-token inter-token latency: the streamed request's tokens after the first.
    EXPECT_EQ(Value(sim["sglang:time_per_output_token_seconds"],
                    "sglang:time_per_output_token_seconds_count"),
              itl);
    EXPECT_EQ(Value(sim["sglang:func_latency_seconds"], "sglang:func_latency_seconds_count"), 4);
  }
}

TEST_F(SglangMetricsTest, MiddleReleaseLabelsMatchTheDp8Fragment) {
  // The fragment's label set, without dp_rank (no data parallelism here).
  auto frag = Parse("# HELP sglang:num_retracted_reqs x\n# TYPE sglang:num_retracted_reqs gauge\n" +
                    Fixture("sglang-metrics-dp8-aibrix-issue1614-FRAGMENT.txt"));
  std::set<std::string> keys = LabelKeys(frag["sglang:num_retracted_reqs"]);
  keys.erase("dp_rank");
  auto server = Start("0.5.5");
  ASSERT_TRUE(server);
  auto sim = Parse(SimGet(server->port(), "/metrics").body);
  for (const char* n : {"sglang:num_retracted_reqs", "sglang:num_paused_reqs",
                        "sglang:num_running_reqs", "sglang:token_usage"}) {
    ASSERT_TRUE(sim.count(n)) << n;
    EXPECT_EQ(LabelKeys(sim[n]), keys) << n;
    EXPECT_EQ(sim[n].type, "gauge");
  }
  EXPECT_EQ(sim["sglang:num_paused_reqs"].help, frag["sglang:num_paused_reqs"].help);
  EXPECT_EQ(sim["sglang:num_running_reqs"].samples[0].labels.at("engine_type"), "unified");
}

TEST_F(SglangMetricsTest, NewestLabelsBucketsAndValues) {
  SimOptions o;
  o.engine_config.block_size = 4;
  auto server = Start("0.5.20", o);
  ASSERT_TRUE(server);
  EXPECT_EQ(SimGet(server->port(), "/metrics/").status, 200);
  int prompt, completion, itl;
  Traffic(server->port(), &prompt, &completion, &itl);
  // The last response can reach the client just before the scheduler releases its request
  // and counts its last decode batch: read until the gauges and counters settle, not once.
  std::map<std::string, Family> sim;
  WaitFor([&] {
    sim = Parse(SimGet(server->port(), "/metrics").body);
    return Value(sim["sglang:num_running_reqs"], "sglang:num_running_reqs") == 0 &&
           Value(sim["sglang:realtime_tokens_total"], "sglang:realtime_tokens_total",
                 {{"mode", "decode"}}) == completion - 4;
  });
  const std::set<std::string> sched = {"engine_type", "model_name", "moe_ep_rank", "pp_rank",
                                       "tp_rank"};
  for (const char* n :
       {"sglang:num_running_reqs", "sglang:num_queue_reqs", "sglang:num_used_tokens",
        "sglang:token_usage", "sglang:gen_throughput", "sglang:cache_hit_rate",
        "sglang:num_retracted_reqs", "sglang:max_total_num_tokens"}) {
    ASSERT_TRUE(sim.count(n)) << n;
    EXPECT_EQ(sim[n].type, "gauge") << n;
    EXPECT_EQ(LabelKeys(sim[n]), sched) << n;
  }
  EXPECT_EQ(Value(sim["sglang:num_running_reqs"], "sglang:num_running_reqs"), 0);
  EXPECT_GT(Value(sim["sglang:gen_throughput"], "sglang:gen_throughput"), 0);
  const std::set<std::string> tok_stream = {"engine_type", "is_streaming", "model_name"};
  for (const char* n :
       {"sglang:prompt_tokens_total", "sglang:generation_tokens_total", "sglang:num_requests_total",
        "sglang:time_to_first_token_seconds", "sglang:e2e_request_latency_seconds"})
    EXPECT_EQ(LabelKeys(sim[n]), tok_stream) << n;
  EXPECT_EQ(LabelKeys(sim["sglang:inter_token_latency_seconds"]),
            (std::set<std::string>{"engine_type", "model_name"}));
  EXPECT_EQ(LabelKeys(sim["sglang:cached_tokens_total"]),
            (std::set<std::string>{"cache_source", "engine_type", "model_name"}));
  EXPECT_EQ(sim["sglang:prompt_tokens_total"].type, "counter");
  EXPECT_EQ(Value(sim["sglang:num_requests_total"], "sglang:num_requests_total"), 4);
  EXPECT_EQ(Value(sim["sglang:num_requests_total"], "sglang:num_requests_total",
                  {{"is_streaming", "true"}}),
            1);
  EXPECT_EQ(Value(sim["sglang:prompt_tokens_total"], "sglang:prompt_tokens_total"), prompt);
  EXPECT_EQ(Value(sim["sglang:generation_tokens_total"], "sglang:generation_tokens_total"),
            completion);
  // ITL: only the streamed request hands out tokens one by one (non-streaming requests get
  // one output batch at the end, so TTFT ≈ e2e for them).
  EXPECT_EQ(
      Value(sim["sglang:inter_token_latency_seconds"], "sglang:inter_token_latency_seconds_count"),
      itl);
  EXPECT_EQ(Les(sim["sglang:time_to_first_token_seconds"]),
            (std::vector<std::string>{"0.1", "0.2", "0.4", "0.6", "0.8", "1.0", "2.0", "4.0", "6.0",
                                      "8.0", "10.0", "20.0", "40.0", "60.0", "80.0", "100.0",
                                      "200.0", "400.0", "+Inf"}));
  EXPECT_EQ(Les(sim["sglang:inter_token_latency_seconds"]).size(), 24u);
  EXPECT_EQ(Les(sim["sglang:e2e_request_latency_seconds"]).back(), "+Inf");
  EXPECT_EQ(Les(sim["sglang:e2e_request_latency_seconds"]).size(), 23u);
  EXPECT_EQ(Les(sim["sglang:queue_time_seconds"]).size(), 41u);
  EXPECT_EQ(Les(sim["sglang:per_stage_req_latency_seconds"]).size(), 31u);
  EXPECT_EQ(Les(sim["sglang:per_stage_req_latency_seconds"])[0], "0.001");
  std::set<std::string> stages;
  for (const auto& s : sim["sglang:per_stage_req_latency_seconds"].samples)
    stages.insert(s.labels.at("stage"));
  EXPECT_EQ(stages, (std::set<std::string>{"prefill_forward", "request_process"}));
  EXPECT_EQ(Value(sim["sglang:realtime_tokens_total"], "sglang:realtime_tokens_total",
                  {{"mode", "decode"}}),
            completion - 4);  // every token but each request's first comes from a decode batch

  // The same long prompt twice: the second prefill batch hits the prefix cache.
  std::string words;
  for (int i = 0; i < 80; ++i) words += "w" + std::to_string(i) + " ";
  const std::string body = R"({"model":"m","prompt":")" + words + R"(","max_tokens":2})";
  ASSERT_EQ(SimPost(server->port(), "/v1/completions", body).status, 200);
  ASSERT_EQ(SimPost(server->port(), "/v1/completions", body).status, 200);
  auto after = Parse(SimGet(server->port(), "/metrics").body);
  EXPECT_GT(Value(after["sglang:cache_hit_rate"], "sglang:cache_hit_rate"), 0.5);
  EXPECT_GT(Value(after["sglang:cached_tokens_total"], "sglang:cached_tokens_total"), 0);
}

TEST_F(SglangMetricsTest, GaugesFollowARunningRequest) {
  auto server = Start("0.5.20");
  ASSERT_TRUE(server);
  std::thread t([&] {
    testing::SimPost(
        server->port(), "/generate",
        R"({"text":"long","sampling_params":{"max_new_tokens":3000,"ignore_eos":true}})");
  });
  EXPECT_TRUE(WaitFor([&] {
    auto m = Parse(SimGet(server->port(), "/metrics").body);
    return Value(m["sglang:num_running_reqs"], "sglang:num_running_reqs") == 1 &&
           Value(m["sglang:num_used_tokens"], "sglang:num_used_tokens") > 0 &&
           Value(m["sglang:token_usage"], "sglang:token_usage") > 0;
  }));
  t.join();
  // The response can reach the client just before the scheduler releases the request's
  // slot and tokens: the gauges are read until they settle, not once.
  std::map<std::string, Family> m;
  WaitFor([&] {
    m = Parse(SimGet(server->port(), "/metrics").body);
    return Value(m["sglang:num_running_reqs"], "sglang:num_running_reqs") == 0 &&
           Value(m["sglang:num_used_tokens"], "sglang:num_used_tokens") == 0;
  });
  EXPECT_EQ(Value(m["sglang:num_running_reqs"], "sglang:num_running_reqs"), 0);
  EXPECT_EQ(Value(m["sglang:num_used_tokens"], "sglang:num_used_tokens"), 0);
}

TEST_F(SglangMetricsTest, OnlyWithEnableMetricsAndPerRank) {
  SimOptions o;
  o.engine = "sglang";
  o.log_sink = [](const std::string&) {};
  auto plain = testing::StartSglang(o);
  ASSERT_TRUE(plain);
  EXPECT_EQ(SimGet(plain->port(), "/metrics").status, 404);

  SimOptions tp;
  tp.sglang.tp_size = 2;
  auto rank0 = Start("0.5.20", tp);
  auto m0 = Parse(SimGet(rank0->port(), "/metrics").body);
  EXPECT_EQ(m0["sglang:num_running_reqs"].samples.size(), 1u);  // attention-TP rank 0 only
  tp.sglang.enable_metrics_for_all_schedulers = true;
  auto ranks = Start("0.5.20", tp);
  auto m1 = Parse(SimGet(ranks->port(), "/metrics").body);
  ASSERT_EQ(m1["sglang:num_running_reqs"].samples.size(), 2u);
  EXPECT_EQ(m1["sglang:num_running_reqs"].samples[1].labels.at("tp_rank"), "1");

  SimOptions pd;
  pd.sglang.disaggregation_mode = "decode";
  auto dec = Start("0.5.20", pd);
  auto md = Parse(SimGet(dec->port(), "/metrics").body);
  EXPECT_EQ(md["sglang:num_running_reqs"].samples[0].labels.at("engine_type"), "decode");
  EXPECT_TRUE(md.count("sglang:num_decode_prealloc_queue_reqs"));
  EXPECT_TRUE(md.count("sglang:num_decode_transfer_queue_reqs"));
}

TEST_F(SglangMetricsTest, AbortsAreCounted) {
  SimOptions o;
  o.sglang.stream_abort_delay_ms = 20;
  auto server = Start("0.5.20", o);
  ASSERT_TRUE(server);
  testing::SimStreamThenDisconnect(
      server->port(),
      R"({"model":"m","messages":[{"role":"user","content":"go"}],"stream":true,"max_tokens":5000,"ignore_eos":true})");
  ASSERT_TRUE(WaitFor([&] { return server->engine().Stats().aborted == 1; }));
  auto m = Parse(SimGet(server->port(), "/metrics").body);
  EXPECT_EQ(Value(m["sglang:num_aborted_requests_total"], "sglang:num_aborted_requests_total"), 1);
  EXPECT_EQ(Value(m["sglang:num_requests_total"], "sglang:num_requests_total"), 0);
}

}  // namespace
}  // namespace infertel::sim
