#include "scrape/prometheus_text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace infertel::scrape {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

std::string ReadFixture(std::string_view name) {
  const std::string path = std::string(INFERTEL_FIXTURES_DIR) + "/" + std::string(name);
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const Family& MustFind(const ParseResult& r, std::string_view name) {
  const Family* f = r.Find(name);
  if (f == nullptr) {
    ADD_FAILURE() << "no family " << name;
    static const Family kEmpty;
    return kEmpty;
  }
  return *f;
}

std::vector<const Sample*> Named(const Family& f, std::string_view name) {
  std::vector<const Sample*> out;
  for (const auto& s : f.samples)
    if (s.name == name) out.push_back(&s);
  return out;
}

const Sample* One(const Family& f, std::string_view name) {
  auto v = Named(f, name);
  EXPECT_EQ(v.size(), 1u) << name;
  return v.empty() ? nullptr : v.front();
}

std::size_t TotalSamples(const ParseResult& r) {
  std::size_t n = 0;
  for (const auto& f : r.families) n += f.samples.size();
  return n;
}

std::size_t CountType(const ParseResult& r, MetricType t) {
  std::size_t n = 0;
  for (const auto& f : r.families) n += f.type == t;
  return n;
}

std::string ToCrlf(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\n') out += '\r';
    out += c;
  }
  return out;
}

constexpr std::string_view kQwen = "Qwen/Qwen3-4B-Instruct-2507-FP8";

// ---------------------------------------------------------------------------------------
// Real scrapes

TEST(PrometheusTextFixtures, VllmV1Ngc2509) {
  const std::string text = ReadFixture("vllm-metrics-v1-ngc25.09.txt");
  ASSERT_FALSE(text.empty());
  ASSERT_NE(text.back(), '\n');  // the last line has no newline: it must still be read
  const ParseResult r = ParsePrometheusText(text);

  EXPECT_EQ(r.malformed_lines, 0u);
  EXPECT_TRUE(r.errors.empty());
  EXPECT_EQ(r.families.size(), 67u);
  EXPECT_EQ(TotalSamples(r), 360u);
  EXPECT_EQ(CountType(r, MetricType::kCounter), 13u);
  EXPECT_EQ(CountType(r, MetricType::kGauge), 37u);
  EXPECT_EQ(CountType(r, MetricType::kHistogram), 15u);
  EXPECT_EQ(CountType(r, MetricType::kSummary), 2u);
  EXPECT_EQ(CountType(r, MetricType::kUntyped), 0u);
  EXPECT_EQ(r.families.front().name, "python_gc_objects_collected_total");
  EXPECT_EQ(r.families.back().name, "http_request_duration_seconds_created");

  const Family& running = MustFind(r, "vllm:num_requests_running");
  EXPECT_EQ(running.type, MetricType::kGauge);
  EXPECT_EQ(running.help, "Number of requests in model execution batches.");
  ASSERT_EQ(running.samples.size(), 1u);
  EXPECT_THAT(running.samples[0].labels,
              ElementsAre(Pair("engine", "0"), Pair("model_name", std::string(kQwen))));
  EXPECT_EQ(running.samples[0].value, 0.0);
  EXPECT_FALSE(running.samples[0].timestamp_ms.has_value());

  // 0.0.4 exposition of prometheus_client: the counter's TYPE carries _total and its
  // _created is a gauge family of its own.
  const Family& prompt = MustFind(r, "vllm:prompt_tokens_total");
  EXPECT_EQ(prompt.type, MetricType::kCounter);
  EXPECT_EQ(prompt.help, "Number of prefill tokens processed.");
  ASSERT_EQ(prompt.samples.size(), 1u);
  EXPECT_EQ(prompt.samples[0].name, "vllm:prompt_tokens_total");
  EXPECT_EQ(prompt.samples[0].value, 246.0);
  EXPECT_EQ(*prompt.samples[0].Label("model_name"), kQwen);
  const Family& prompt_created = MustFind(r, "vllm:prompt_tokens_created");
  EXPECT_EQ(prompt_created.type, MetricType::kGauge);
  const Sample* created = One(prompt_created, "vllm:prompt_tokens_created");
  ASSERT_NE(created, nullptr);
  EXPECT_DOUBLE_EQ(created->value, 1.7710424574209218e+09);

  const Family& success = MustFind(r, "vllm:request_success_total");
  ASSERT_EQ(success.samples.size(), 3u);
  EXPECT_EQ(*success.samples[0].Label("finished_reason"), "stop");
  EXPECT_EQ(success.samples[0].value, 6.0);
  EXPECT_EQ(*success.samples[2].Label("finished_reason"), "abort");

  const Family& ttft = MustFind(r, "vllm:time_to_first_token_seconds");
  EXPECT_EQ(ttft.type, MetricType::kHistogram);
  const auto buckets = Named(ttft, "vllm:time_to_first_token_seconds_bucket");
  ASSERT_EQ(buckets.size(), 23u);
  EXPECT_EQ(*buckets.front()->Label("le"), "0.001");
  EXPECT_EQ(buckets.front()->value, 0.0);
  EXPECT_EQ(*buckets[4]->Label("le"), "0.04");
  EXPECT_EQ(buckets[4]->value, 4.0);
  EXPECT_EQ(*buckets.back()->Label("le"), "+Inf");
  EXPECT_EQ(buckets.back()->value, 6.0);
  const Sample* count = One(ttft, "vllm:time_to_first_token_seconds_count");
  const Sample* sum = One(ttft, "vllm:time_to_first_token_seconds_sum");
  ASSERT_TRUE(count && sum);
  EXPECT_EQ(count->value, 6.0);
  EXPECT_DOUBLE_EQ(sum->value, 0.24629998207092285);
  EXPECT_EQ(ttft.samples.size(), 25u);

  // A histogram whose name itself ends in _total keeps its _bucket/_sum/_count.
  const Family& iter = MustFind(r, "vllm:iteration_tokens_total");
  EXPECT_EQ(iter.type, MetricType::kHistogram);
  EXPECT_EQ(Named(iter, "vllm:iteration_tokens_total_bucket").size(), 14u);
  EXPECT_EQ(One(iter, "vllm:iteration_tokens_total_sum")->value, 1985.0);

  EXPECT_DOUBLE_EQ(MustFind(r, "process_virtual_memory_bytes").samples.at(0).value,
                   1.372014592e+10);
  EXPECT_DOUBLE_EQ(MustFind(r, "process_cpu_seconds_total").samples.at(0).value,
                   14.040000000000001);
  EXPECT_EQ(MustFind(r, "python_info").samples.at(0).labels.size(), 5u);

  const Family& req_size = MustFind(r, "http_request_size_bytes");
  EXPECT_EQ(req_size.type, MetricType::kSummary);
  EXPECT_EQ(Named(req_size, "http_request_size_bytes_count").size(), 2u);
  EXPECT_EQ(Named(req_size, "http_request_size_bytes_sum").size(), 2u);

  // HELP is kept as written, trailing space included.
  EXPECT_EQ(MustFind(r, "http_request_duration_seconds").help,
            "Latency with only few buckets by handler. Made to be only used if aggregation by "
            "handler is important. ");

  // The last line, without its newline.
  const Family& last = r.families.back();
  ASSERT_EQ(last.samples.size(), 2u);
  EXPECT_EQ(*last.samples[1].Label("handler"), "/v1/chat/completions");
  EXPECT_DOUBLE_EQ(last.samples[1].value, 1.7710425720693095e+09);
}

TEST(PrometheusTextFixtures, VllmV1SameWithCrlfAndTrailingNewline) {
  const std::string text = ReadFixture("vllm-metrics-v1-ngc25.09.txt");
  const ParseResult lf = ParsePrometheusText(text);
  for (const std::string& variant : {ToCrlf(text), ToCrlf(text) + "\r\n", text + "\n\n\n"}) {
    const ParseResult r = ParsePrometheusText(variant);
    EXPECT_EQ(r.malformed_lines, 0u);
    ASSERT_EQ(r.families.size(), lf.families.size());
    for (std::size_t i = 0; i < lf.families.size(); ++i) {
      const Family& a = lf.families[i];
      const Family& b = r.families[i];
      EXPECT_EQ(a.name, b.name);
      EXPECT_EQ(a.type, b.type);
      EXPECT_EQ(a.help, b.help);
      ASSERT_EQ(a.samples.size(), b.samples.size());
      for (std::size_t j = 0; j < a.samples.size(); ++j) {
        EXPECT_EQ(a.samples[j].name, b.samples[j].name);
        EXPECT_EQ(a.samples[j].labels, b.samples[j].labels);
        EXPECT_EQ(a.samples[j].value, b.samples[j].value);
      }
    }
  }
}

TEST(PrometheusTextFixtures, VllmV0PartialStartsWithoutHelpEndsMidHistogram) {
  const ParseResult r =
      ParsePrometheusText(ReadFixture("vllm-metrics-v0-0.7.x-aibrix-docs-partial.txt"));
  EXPECT_EQ(r.malformed_lines, 0u);
  EXPECT_EQ(r.families.size(), 14u);
  EXPECT_EQ(TotalSamples(r), 29u);

  const Family& cfg = r.families.front();
  EXPECT_EQ(cfg.name, "vllm:cache_config_info");
  EXPECT_EQ(cfg.type, MetricType::kGauge);
  EXPECT_EQ(cfg.help, "");
  ASSERT_EQ(cfg.samples.size(), 1u);
  EXPECT_EQ(cfg.samples[0].labels.size(), 12u);
  EXPECT_EQ(*cfg.samples[0].Label("num_gpu_blocks"), "81767");
  EXPECT_EQ(*cfg.samples[0].Label("swap_space_bytes"), "4294967296");
  EXPECT_EQ(cfg.samples[0].value, 1.0);

  EXPECT_EQ(MustFind(r, "vllm:gpu_prefix_cache_hit_rate").samples.at(0).value, -1.0);
  EXPECT_EQ(MustFind(r, "vllm:gpu_cache_usage_perc").type, MetricType::kGauge);
  EXPECT_EQ(MustFind(r, "vllm:generation_tokens_total").samples.at(0).value, 955.0);
  const Family& lora = MustFind(r, "vllm:lora_requests_info");
  EXPECT_THAT(lora.samples.at(0).labels,
              ElementsAre(Pair("max_lora", "0"), Pair("running_lora_adapters", ""),
                          Pair("waiting_lora_adapters", "")));
  EXPECT_DOUBLE_EQ(lora.samples.at(0).value, 1.7382173358407154e+09);

  const Family& iter = r.families.back();
  EXPECT_EQ(iter.name, "vllm:iteration_tokens_total");
  EXPECT_EQ(iter.type, MetricType::kHistogram);
  ASSERT_EQ(iter.samples.size(), 16u);
  EXPECT_EQ(iter.samples.front().name, "vllm:iteration_tokens_total_sum");
  EXPECT_EQ(iter.samples.front().value, 1103.0);
  const auto buckets = Named(iter, "vllm:iteration_tokens_total_bucket");
  ASSERT_EQ(buckets.size(), 15u);
  EXPECT_EQ(*buckets.back()->Label("le"), "96.0");
  EXPECT_EQ(buckets.back()->value, 998.0);
  EXPECT_TRUE(Named(iter, "vllm:iteration_tokens_total_count").empty());
}

TEST(PrometheusTextFixtures, Sglang035NameLabel) {
  const ParseResult r = ParsePrometheusText(ReadFixture("sglang-metrics-0.3.5-docs.txt"));
  EXPECT_EQ(r.malformed_lines, 0u);
  EXPECT_EQ(r.families.size(), 21u);
  EXPECT_EQ(TotalSamples(r), 135u);
  EXPECT_EQ(CountType(r, MetricType::kHistogram), 6u);

  const Family& max_tokens = r.families.front();
  EXPECT_EQ(max_tokens.name, "sglang:max_total_num_tokens");
  EXPECT_EQ(max_tokens.help, "Maximum total number of tokens");
  EXPECT_THAT(max_tokens.samples.at(0).labels, ElementsAre(Pair("name", "google/gemma-2-9b-it")));
  EXPECT_EQ(max_tokens.samples.at(0).value, 161721.0);
  EXPECT_EQ(MustFind(r, "sglang:cache_hit_rate").samples.at(0).value, 10.61);
  EXPECT_EQ(MustFind(r, "sglang:token_usage").samples.at(0).value, 0.01);
  EXPECT_EQ(MustFind(r, "sglang:prompt_tokens_total").samples.at(0).value, 506780.0);
  EXPECT_EQ(MustFind(r, "sglang:gen_throughput").help, "Gen token throughput (token/s)");

  const Family& ttft = MustFind(r, "sglang:time_to_first_token_seconds");
  ASSERT_EQ(ttft.samples.size(), 23u);
  EXPECT_EQ(ttft.samples.front().name, "sglang:time_to_first_token_seconds_sum");
  EXPECT_DOUBLE_EQ(ttft.samples.front().value, 656.0780844688416);
  EXPECT_EQ(ttft.samples.back().name, "sglang:time_to_first_token_seconds_count");
  EXPECT_EQ(ttft.samples.back().value, 2124.0);
  const auto buckets = Named(ttft, "sglang:time_to_first_token_seconds_bucket");
  ASSERT_EQ(buckets.size(), 21u);
  EXPECT_EQ(*buckets.back()->Label("le"), "+Inf");
  EXPECT_EQ(*buckets.back()->Label("name"), "google/gemma-2-9b-it");
}

TEST(PrometheusTextFixtures, Sglang040) {
  const ParseResult r = ParsePrometheusText(ReadFixture("sglang-metrics-0.4.0-docs.txt"));
  EXPECT_EQ(r.malformed_lines, 0u);
  EXPECT_EQ(r.families.size(), 12u);
  EXPECT_EQ(TotalSamples(r), 91u);
  const Family& prompt = r.families.front();
  EXPECT_EQ(prompt.name, "sglang:prompt_tokens_total");
  EXPECT_EQ(prompt.type, MetricType::kCounter);
  EXPECT_EQ(prompt.samples.at(0).value, 7.0);
  EXPECT_EQ(*prompt.samples.at(0).Label("model_name"), "meta-llama/Llama-3.1-8B-Instruct");

  const Family& func = MustFind(r, "sglang:func_latency_seconds");
  EXPECT_EQ(func.type, MetricType::kHistogram);
  EXPECT_DOUBLE_EQ(One(func, "sglang:func_latency_seconds_sum")->value, 0.3061351010110229);
  const auto buckets = Named(func, "sglang:func_latency_seconds_bucket");
  ASSERT_FALSE(buckets.empty());
  for (const Sample* b : buckets) EXPECT_EQ(*b->Label("name"), "generate_request");
  EXPECT_EQ(*buckets[buckets.size() - 2]->Label("le"), "49.26306266784668");
  EXPECT_EQ(r.families.back().name, "sglang:cache_hit_rate");
}

TEST(PrometheusTextFixtures, Sglang043) {
  const ParseResult r = ParsePrometheusText(ReadFixture("sglang-metrics-0.4.3-docs.txt"));
  EXPECT_EQ(r.malformed_lines, 0u);
  EXPECT_EQ(r.families.size(), 12u);
  EXPECT_EQ(TotalSamples(r), 91u);
  EXPECT_EQ(MustFind(r, "sglang:prompt_tokens_total").samples.at(0).value, 8.128902e+06);
  EXPECT_EQ(MustFind(r, "sglang:num_running_reqs").samples.at(0).value, 162.0);
  EXPECT_EQ(MustFind(r, "sglang:num_queue_reqs").samples.at(0).value, 2826.0);
  EXPECT_DOUBLE_EQ(MustFind(r, "sglang:gen_throughput").samples.at(0).value, 86.50814177726902);
  const Family& ttft = MustFind(r, "sglang:time_to_first_token_seconds");
  const auto buckets = Named(ttft, "sglang:time_to_first_token_seconds_bucket");
  ASSERT_EQ(buckets.size(), 21u);
  EXPECT_EQ(*buckets.back()->Label("le"), "+Inf");
  EXPECT_EQ(buckets.back()->value, 11008.0);
  EXPECT_EQ(One(MustFind(r, "sglang:time_per_output_token_seconds"),
                "sglang:time_per_output_token_seconds_count")
                ->value,
            7.400757e+06);
}

TEST(PrometheusTextFixtures, SglangDp8FragmentCutLineCountedRestKept) {
  const std::string text = ReadFixture("sglang-metrics-dp8-aibrix-issue1614-FRAGMENT.txt");
  const ParseResult r = ParsePrometheusText(text);
  EXPECT_EQ(r.malformed_lines, 1u);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_THAT(r.errors[0], HasSubstr("line 12: "));
  EXPECT_THAT(r.errors[0], HasSubstr("unterminated label value"));

  ASSERT_EQ(r.families.size(), 2u);
  // It starts mid-family, without HELP/TYPE: an untyped family of its own.
  const Family& retracted = r.families[0];
  EXPECT_EQ(retracted.name, "sglang:num_retracted_reqs");
  EXPECT_EQ(retracted.type, MetricType::kUntyped);
  ASSERT_EQ(retracted.samples.size(), 4u);
  EXPECT_THAT(retracted.samples[0].labels,
              ElementsAre(Pair("dp_rank", "5"), Pair("engine_type", "unified"),
                          Pair("model_name", "deepseek-r1"), Pair("pid", "915"),
                          Pair("pp_rank", "0"), Pair("tp_rank", "5")));

  const Family& paused = r.families[1];
  EXPECT_EQ(paused.name, "sglang:num_paused_reqs");
  EXPECT_EQ(paused.type, MetricType::kGauge);
  EXPECT_EQ(paused.help, "The number of paused requests by async weight sync.");
  ASSERT_EQ(paused.samples.size(), 5u);
  EXPECT_EQ(*paused.samples.back().Label("dp_rank"), "5");
  EXPECT_EQ(*paused.samples.back().Label("pid"), "915");

  // Completing the cut line makes it a sixth sample: the cut alone was the problem.
  const ParseResult whole =
      ParsePrometheusText(text + "epseek-r1\",pid=\"914\",pp_rank=\"0\",tp_rank=\"4\"} 0.0\n");
  EXPECT_EQ(whole.malformed_lines, 0u);
  EXPECT_EQ(MustFind(whole, "sglang:num_paused_reqs").samples.size(), 6u);
}

// ---------------------------------------------------------------------------------------
// The syntax, piece by piece

TEST(PrometheusText, LabelValueEscapesCommasTrailingCommaEmptySet) {
  const ParseResult r = ParsePrometheusText(
      "# TYPE m gauge\n"
      "m{a=\"q\\\"uote\",b=\"back\\\\slash\",c=\"new\\nline\",d=\"x,y,z\",e=\"}{#\"} 1\n"
      "m{a=\"trailing\",} 2\n"
      "m{} 3\n"
      "m 4\n"
      "m { a = \"spaced\" , b=\"2\" , } 5\n"
      "m{a=\"odd\\t\"} 6\n"
      "m{a=\"\"} 7\n");
  EXPECT_EQ(r.malformed_lines, 0u) << (r.errors.empty() ? "" : r.errors[0]);
  const Family& m = MustFind(r, "m");
  ASSERT_EQ(m.samples.size(), 7u);
  EXPECT_THAT(m.samples[0].labels,
              ElementsAre(Pair("a", "q\"uote"), Pair("b", "back\\slash"), Pair("c", "new\nline"),
                          Pair("d", "x,y,z"), Pair("e", "}{#")));
  EXPECT_THAT(m.samples[1].labels, ElementsAre(Pair("a", "trailing")));
  EXPECT_TRUE(m.samples[2].labels.empty());
  EXPECT_EQ(m.samples[2].value, 3.0);
  EXPECT_TRUE(m.samples[3].labels.empty());
  EXPECT_THAT(m.samples[4].labels, ElementsAre(Pair("a", "spaced"), Pair("b", "2")));
  EXPECT_THAT(m.samples[5].labels, ElementsAre(Pair("a", "odd\\t")));  // unknown escape kept
  EXPECT_THAT(m.samples[6].labels, ElementsAre(Pair("a", "")));
  EXPECT_EQ(m.samples[6].value, 7.0);
}

TEST(PrometheusText, Values) {
  const ParseResult r = ParsePrometheusText(
      "v{k=\"nan\"} NaN\n"
      "v{k=\"pinf\"} +Inf\n"
      "v{k=\"ninf\"} -Inf\n"
      "v{k=\"small\"} 1e-05\n"
      "v{k=\"big\"} 9007199254740993\n"
      "v{k=\"huge\"} 18446744073709551616\n"
      "v{k=\"neg\"} -3.5\n"
      "v{k=\"plus\"} +2\n"
      "v{k=\"exp\"} 1.372014592e+010\n"
      "v{k=\"inf_lower\"} inf\n");
  EXPECT_EQ(r.malformed_lines, 0u) << (r.errors.empty() ? "" : r.errors[0]);
  const Family& v = MustFind(r, "v");
  ASSERT_EQ(v.samples.size(), 10u);
  EXPECT_TRUE(std::isnan(v.samples[0].value));
  EXPECT_EQ(v.samples[1].value, std::numeric_limits<double>::infinity());
  EXPECT_EQ(v.samples[2].value, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(v.samples[3].value, 1e-05);
  EXPECT_EQ(v.samples[4].value, 9007199254740992.0);  // 2^53 + 1 rounds to nearest double
  EXPECT_EQ(v.samples[5].value, 18446744073709551616.0);
  EXPECT_EQ(v.samples[6].value, -3.5);
  EXPECT_EQ(v.samples[7].value, 2.0);
  EXPECT_EQ(v.samples[8].value, 1.372014592e+10);
  EXPECT_EQ(v.samples[9].value, std::numeric_limits<double>::infinity());
}

TEST(PrometheusText, Timestamps) {
  const ParseResult r = ParsePrometheusText(
      "t 1 1700000000123\n"
      "t{a=\"b\"} 2 -5\n"
      "t 3\t 1700000000124  \n"
      "t 4 1520879607.789\n");
  EXPECT_EQ(r.malformed_lines, 0u) << (r.errors.empty() ? "" : r.errors[0]);
  const Family& t = MustFind(r, "t");
  ASSERT_EQ(t.samples.size(), 4u);
  EXPECT_EQ(t.samples[0].timestamp_ms, 1700000000123);
  EXPECT_EQ(t.samples[1].timestamp_ms, -5);
  EXPECT_EQ(t.samples[2].timestamp_ms, 1700000000124);
  EXPECT_EQ(t.samples[2].value, 3.0);
  EXPECT_EQ(t.samples[3].timestamp_ms, 1520879607789);  // OpenMetrics seconds

  ParseOptions om;
  om.openmetrics = true;
  const ParseResult o = ParsePrometheusText("t 1 1520879607\n", om);
  ASSERT_EQ(o.families.size(), 1u);
  EXPECT_EQ(o.families[0].samples.at(0).timestamp_ms, 1520879607000);
  EXPECT_EQ(ParsePrometheusText("t 1 1520879607\n").families[0].samples.at(0).timestamp_ms,
            1520879607);
}

TEST(PrometheusText, HelpTypeCommentsBlankLinesCrlfNoFinalNewline) {
  const ParseResult r = ParsePrometheusText(
      "\r\n"
      "# a plain comment\r\n"
      "   \r\n"
      "# HELP sglang:x Back\\\\slash and\\nnew line and \\t kept.\r\n"
      "# TYPE sglang:x counter\r\n"
      "\r\n"
      "sglang:x_total{model_name=\"m\"} 5\r\n"
      "#\r\n"
      "  # HELP indented Help text\r\n"
      "indented 1\r\n"
      "vllm:last{engine=\"0\"} 42");
  EXPECT_EQ(r.malformed_lines, 0u) << (r.errors.empty() ? "" : r.errors[0]);
  ASSERT_EQ(r.families.size(), 3u);
  const Family& x = r.families[0];
  EXPECT_EQ(x.name, "sglang:x");
  EXPECT_EQ(x.type, MetricType::kCounter);
  EXPECT_EQ(x.help, "Back\\slash and\nnew line and \\t kept.");
  ASSERT_EQ(x.samples.size(), 1u);
  EXPECT_EQ(*x.samples[0].Label("model_name"), "m");  // no \r left in values
  EXPECT_EQ(r.families[1].help, "Help text");
  EXPECT_EQ(r.families[1].samples.at(0).value, 1.0);
  EXPECT_EQ(r.families[2].name, "vllm:last");
  EXPECT_EQ(r.families[2].type, MetricType::kUntyped);
  EXPECT_EQ(r.families[2].samples.at(0).value, 42.0);
}

TEST(PrometheusText, EmptyInput) {
  EXPECT_TRUE(ParsePrometheusText("").families.empty());
  const ParseResult r = ParsePrometheusText("\n\n\r\n# just a comment");
  EXPECT_TRUE(r.families.empty());
  EXPECT_EQ(r.malformed_lines, 0u);
}

// ---------------------------------------------------------------------------------------
// Grouping

TEST(PrometheusTextGrouping, HelpThenTypeIsOneFamilyAndRepeatedBlocksMerge) {
  const ParseResult r = ParsePrometheusText(
      "# HELP a The a.\n# TYPE a gauge\na 1\n"
      "# TYPE b gauge\nb 2\n"
      "# HELP a The a.\n# TYPE a gauge\na{x=\"2\"} 3\n");
  ASSERT_EQ(r.families.size(), 2u);
  EXPECT_EQ(r.families[0].name, "a");
  EXPECT_EQ(r.families[0].samples.size(), 2u);
  EXPECT_EQ(r.families[1].name, "b");
}

TEST(PrometheusTextGrouping, BaseNameFamilyWhenNotCurrent) {
  const ParseResult r = ParsePrometheusText(
      "# TYPE h histogram\nh_sum 1\n"
      "# TYPE g gauge\ng 2\n"
      "h_count 3\n"
      "h_bucket{le=\"+Inf\"} 3\n");
  ASSERT_EQ(r.families.size(), 2u);
  const Family& h = r.families[0];
  ASSERT_EQ(h.samples.size(), 3u);
  EXPECT_EQ(h.samples[1].name, "h_count");
  EXPECT_EQ(h.samples[2].name, "h_bucket");
}

TEST(PrometheusTextGrouping, CreatedOfA004CounterJoinsItsTotalFamily) {
  const ParseResult r = ParsePrometheusText(
      "# TYPE c_total counter\nc_total 1\nc_created 1.7e9\n"
      "# TYPE g gauge\ng 2\nc_created 1.8e9\n");
  ASSERT_EQ(r.families.size(), 2u);
  const Family& c = r.families[0];
  EXPECT_EQ(c.name, "c_total");
  ASSERT_EQ(c.samples.size(), 3u);
  EXPECT_EQ(c.samples[1].name, "c_created");
  EXPECT_EQ(c.samples[2].value, 1.8e9);
}

TEST(PrometheusTextGrouping, UntypedSamplesFormTheirOwnFamilies) {
  const ParseResult r = ParsePrometheusText(
      "# TYPE g gauge\ng 1\n"
      "x 1\nx{a=\"b\"} 2\n"
      "y_bucket{le=\"1\"} 1\n"
      "g_other 5\n"
      "g{a=\"c\"} 3\n");
  EXPECT_EQ(r.malformed_lines, 0u);
  ASSERT_EQ(r.families.size(), 4u);
  EXPECT_EQ(r.families[0].name, "g");
  EXPECT_EQ(r.families[0].samples.size(), 2u);  // the untyped lines between do not end it
  EXPECT_EQ(r.families[1].name, "x");
  EXPECT_EQ(r.families[1].type, MetricType::kUntyped);
  EXPECT_EQ(r.families[1].samples.size(), 2u);
  EXPECT_EQ(r.families[2].name, "y_bucket");
  EXPECT_EQ(r.families[3].name, "g_other");  // not a known suffix: not part of g
}

TEST(PrometheusTextGrouping, SuffixNeedsTheExactFamilyPrefix) {
  // foo_bar_total is not foo + a suffix, even with foo current.
  const ParseResult r = ParsePrometheusText("# TYPE foo counter\nfoo_bar_total 1\nfoo_total 2\n");
  ASSERT_EQ(r.families.size(), 2u);
  EXPECT_EQ(r.families[0].name, "foo");
  ASSERT_EQ(r.families[0].samples.size(), 1u);
  EXPECT_EQ(r.families[0].samples[0].name, "foo_total");
  EXPECT_EQ(r.families[1].name, "foo_bar_total");
}

// ---------------------------------------------------------------------------------------
// OpenMetrics 1.0

TEST(PrometheusTextOpenMetrics, FamiliesUnitsExemplarsEof) {
  const ParseResult r = ParsePrometheusText(
      "# TYPE acme_http_router_request_seconds summary\n"
      "# UNIT acme_http_router_request_seconds seconds\n"
      "# HELP acme_http_router_request_seconds Latency though all of ACME's HTTP request "
      "router.\n"
      "acme_http_router_request_seconds_sum{path=\"/api/v1\",method=\"GET\"} 9036.32\n"
      "acme_http_router_request_seconds_count{path=\"/api/v1\",method=\"GET\"} 807283.0\n"
      "acme_http_router_request_seconds_created{path=\"/api/v1\",method=\"GET\"} 1605281325.0\n"
      "# TYPE foo counter\n"
      "# HELP foo A counter named without _total.\n"
      "foo_total 17.0 1520879607.789 # {id=\"counter-test\"} 5\n"
      "foo_created 1520872607.123\n"
      "# TYPE hist histogram\n"
      "hist_bucket{le=\"0.01\"} 0 # {trace_id=\"KOO5S4vxi0o\"} 0.67\n"
      "hist_bucket{le=\"+Inf\"} 17 # {trace_id=\"oHg5SJYRHA0\"} 9.8 1520879607.789\n"
      "hist_count 17\n"
      "hist_sum 324789.3\n"
      "hist_created 1520430000.123\n"
      "# TYPE build info\n"
      "build_info{version=\"1.2\"} 1\n"
      "# TYPE state stateset\n"
      "state{state=\"a\"} 1\n"
      "state{state=\"b\"} 0\n"
      "# TYPE queue gaugehistogram\n"
      "queue_bucket{le=\"+Inf\"} 3\n"
      "queue_gcount 3\n"
      "queue_gsum 2\n"
      "# TYPE other unknown\n"
      "other 1\n"
      "# EOF\n"
      "after_eof{ 1\n"
      "after 2\n");
  EXPECT_EQ(r.malformed_lines, 0u) << (r.errors.empty() ? "" : r.errors[0]);
  ASSERT_EQ(r.families.size(), 7u);

  const Family& acme = r.families[0];
  EXPECT_EQ(acme.type, MetricType::kSummary);
  EXPECT_EQ(acme.unit, "seconds");
  EXPECT_EQ(acme.help, "Latency though all of ACME's HTTP request router.");
  ASSERT_EQ(acme.samples.size(), 3u);
  EXPECT_EQ(acme.samples[2].name, "acme_http_router_request_seconds_created");
  EXPECT_EQ(acme.samples[2].value, 1605281325.0);
  EXPECT_THAT(acme.samples[0].labels, ElementsAre(Pair("path", "/api/v1"), Pair("method", "GET")));

  const Family& foo = r.families[1];
  EXPECT_EQ(foo.name, "foo");
  EXPECT_EQ(foo.type, MetricType::kCounter);
  ASSERT_EQ(foo.samples.size(), 2u);
  EXPECT_EQ(foo.samples[0].name, "foo_total");
  EXPECT_EQ(foo.samples[0].value, 17.0);
  EXPECT_EQ(foo.samples[0].timestamp_ms, 1520879607789);
  EXPECT_TRUE(foo.samples[0].labels.empty());  // the exemplar's labels are not the sample's
  EXPECT_EQ(foo.samples[1].name, "foo_created");
  EXPECT_EQ(foo.samples[1].value, 1520872607.123);

  const Family& hist = r.families[2];
  EXPECT_EQ(hist.type, MetricType::kHistogram);
  ASSERT_EQ(hist.samples.size(), 5u);
  EXPECT_EQ(hist.samples[0].value, 0.0);
  EXPECT_FALSE(hist.samples[1].timestamp_ms.has_value());
  EXPECT_EQ(hist.samples[1].value, 17.0);

  EXPECT_EQ(r.families[3].name, "build");
  EXPECT_EQ(r.families[3].type, MetricType::kInfo);
  EXPECT_EQ(r.families[3].samples.at(0).name, "build_info");
  EXPECT_EQ(r.families[4].type, MetricType::kStateSet);
  EXPECT_EQ(r.families[4].samples.size(), 2u);
  EXPECT_EQ(r.families[5].type, MetricType::kGaugeHistogram);
  EXPECT_EQ(r.families[5].samples.size(), 3u);
  EXPECT_EQ(r.families[6].type, MetricType::kUntyped);
  EXPECT_EQ(r.Find("after"), nullptr);
}

// ---------------------------------------------------------------------------------------
// Malformed input: each bad line is skipped and counted, its neighbours kept

struct BadLine {
  std::string line;
  std::string reason;
};

class PrometheusTextMalformed : public ::testing::TestWithParam<BadLine> {};

TEST_P(PrometheusTextMalformed, SkippedCountedNeighboursKept) {
  const BadLine& bad = GetParam();
  const ParseResult r =
      ParsePrometheusText("# TYPE ok gauge\nok{i=\"1\"} 1\n" + bad.line + "\nok{i=\"2\"} 2\n");
  EXPECT_EQ(r.malformed_lines, 1u);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0], "line 3: " + bad.reason);
  ASSERT_EQ(r.families.size(), 1u) << r.families.back().name;
  const Family& ok = r.families[0];
  EXPECT_EQ(ok.type, MetricType::kGauge);
  ASSERT_EQ(ok.samples.size(), 2u);
  EXPECT_EQ(ok.samples[0].value, 1.0);
  EXPECT_EQ(ok.samples[1].value, 2.0);
}

INSTANTIATE_TEST_SUITE_P(
    Corpus, PrometheusTextMalformed,
    ::testing::Values(
        BadLine{"ok{i=\"3\" 3", "expected ',' or '}' after label value"},
        BadLine{"ok{i=\"3} 3", "unterminated label value"},
        BadLine{"ok{i=\"3\\", "unterminated label value"},
        BadLine{"ok{i=3} 3", "expected '\"' to open label value"},
        BadLine{"ok{3i=\"3\"} 3", "bad label name"}, BadLine{"ok{,} 3", "bad label name"},
        BadLine{"ok{i=\"3\",,} 3", "bad label name"},
        BadLine{"ok{i:j=\"3\"} 3", "expected '=' after label name"},
        BadLine{"ok{i=\"3\"", "unterminated label set"},
        BadLine{"ok{i=\"3\",", "unterminated label set"},
        BadLine{"ok{i=\"3\",i=\"4\"} 3", "duplicate label name"},
        BadLine{"ok{i=\"3\"}", "missing value"}, BadLine{"ok", "missing value"},
        BadLine{"ok{i=\"3\"}3", "no space before value"}, BadLine{"ok 1.2.3", "bad value"},
        BadLine{"ok abc", "bad value"}, BadLine{"ok 1e999", "bad value"},
        BadLine{"ok ++1", "bad value"}, BadLine{"ok 0x1p3", "bad value"},
        BadLine{"ok 3 abc", "bad timestamp"}, BadLine{"ok 3 1.5e400", "bad timestamp"},
        BadLine{"ok 3 99999999999999999999", "bad timestamp"},
        BadLine{"ok 3 4 5", "unexpected text after sample"}, BadLine{"1ok 3", "bad metric name"},
        BadLine{"ok-dash 3", "bad metric name"}, BadLine{"{i=\"3\"} 3", "bad metric name"},
        BadLine{"# TYPE ok2 blah", "unknown metric type in # TYPE"},
        BadLine{"# TYPE ok2", "unknown metric type in # TYPE"},
        BadLine{"# TYPE", "bad metric name in # TYPE"},
        BadLine{"# HELP 9x help", "bad metric name in # HELP"},
        BadLine{"# UNIT x{ s", "bad metric name in # UNIT"}));

TEST(PrometheusTextMalformedMore, TooLongLineIsCountedAndSkipped) {
  std::string huge = "big{a=\"" + std::string(kMaxLineBytes, 'x') + "\"} 1";
  const ParseResult r = ParsePrometheusText("a 1\n" + huge + "\nb 2\n");
  EXPECT_EQ(r.malformed_lines, 1u);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0], "line 2: line longer than 1 MiB");
  ASSERT_EQ(r.families.size(), 2u);
  EXPECT_EQ(r.families[1].name, "b");

  // Just under the limit it is a sample like any other.
  std::string fits = "big{a=\"" + std::string(kMaxLineBytes - 11, 'x') + "\"} 1";
  ASSERT_EQ(fits.size(), kMaxLineBytes);
  const ParseResult ok = ParsePrometheusText(fits + "\r\n");
  EXPECT_EQ(ok.malformed_lines, 0u);
  ASSERT_EQ(ok.families.size(), 1u);
  EXPECT_EQ(ok.families[0].samples.at(0).labels.at(0).second.size(), kMaxLineBytes - 11);
}

TEST(PrometheusTextMalformedMore, ErrorsAreCappedButAllCounted) {
  std::string text;
  for (int i = 0; i < 30; ++i) text += "bad{\n";
  text += "good 1\n";
  const ParseResult r = ParsePrometheusText(text);
  EXPECT_EQ(r.malformed_lines, 30u);
  ASSERT_EQ(r.errors.size(), kMaxParseErrors);
  EXPECT_EQ(r.errors.front(), "line 1: unterminated label set");
  EXPECT_EQ(r.errors.back(), "line 20: unterminated label set");
  ASSERT_EQ(r.families.size(), 1u);
  EXPECT_EQ(r.families[0].name, "good");
}

TEST(PrometheusTextMalformedMore, EveryPrefixOfARealScrapeParsesWithoutCrashing) {
  // A body cut anywhere (a timeout mid-transfer): never more than the one cut line is lost.
  const std::string text = ReadFixture("vllm-metrics-v0-0.7.x-aibrix-docs-partial.txt");
  const std::size_t all = TotalSamples(ParsePrometheusText(text));
  for (std::size_t n = 0; n <= text.size(); n += 7) {
    const ParseResult r = ParsePrometheusText(std::string_view(text).substr(0, n));
    EXPECT_LE(r.malformed_lines, 1u) << n;
    EXPECT_LE(TotalSamples(r), all);
  }
}

// A target may serve any number of samples: the parse keeps at most max_samples of them and
// counts the rest, and keeps nothing of the families the caller does not read.
TEST(PrometheusTextLimits, SamplesPastTheLimitAreCountedNotKept) {
  std::string text = "# TYPE a gauge\n";
  for (int i = 0; i < 1000; ++i) text += "a{i=\"" + std::to_string(i) + "\"} 1\n";
  ParseOptions opts;
  opts.max_samples = 10;
  const ParseResult r = ParsePrometheusText(text, opts);
  ASSERT_EQ(r.families.size(), 1u);
  EXPECT_EQ(r.families[0].samples.size(), 10u);
  EXPECT_EQ(r.samples_over_limit, 990u);
  EXPECT_EQ(r.malformed_lines, 0u);
}

TEST(PrometheusTextLimits, FamiliesTheCallerDoesNotReadAreNotKept) {
  ParseOptions opts;
  opts.keep_family = [](std::string_view f) { return f == "kept"; };
  opts.max_samples = 2;
  const ParseResult r = ParsePrometheusText(
      "# HELP other_hist h\n# TYPE other_hist histogram\n"
      "other_hist_bucket{le=\"1\"} 1\nother_hist_sum 1\nuntyped_other{x=\"1\"} 2\n"
      "# TYPE kept counter\nkept_total 3\nkept_created 1\n"
      "# TYPE skipped gauge\nskipped 4\nkept_total{a=\"b\"} 5\n",
      opts);
  ASSERT_EQ(r.families.size(), 1u);
  EXPECT_EQ(r.families[0].name, "kept");
  EXPECT_EQ(r.families[0].samples.size(), 2u);  // only kept samples count toward the limit
  EXPECT_EQ(r.samples_over_limit, 1u);
  EXPECT_EQ(r.families[0].samples[0].value, 3);
}

}  // namespace
}  // namespace infertel::scrape
