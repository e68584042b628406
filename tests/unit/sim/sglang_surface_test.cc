// The simulator's SGLang HTTP surface (facts/sglang.md §3, §4): response and chunk shapes as
// the published SGLang captures show them, usage rules, stream_interval, the native /generate,
// info endpoints, the logging and tracing knobs, errors and client-disconnect aborts.

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

// The JSON payloads of an SSE body ("data: {…}" lines, [DONE] excluded).
std::vector<std::string> Events(const std::string& body, bool* done = nullptr) {
  std::vector<std::string> out;
  std::istringstream in(body);
  std::string line;
  if (done) *done = false;
  while (std::getline(in, line)) {
    if (line.rfind("data: ", 0) != 0) continue;
    std::string d = line.substr(6);
    if (d == "[DONE]") {
      if (done) *done = true;
      continue;
    }
    out.push_back(d);
  }
  return out;
}

// Keys of a JSON object in order, at a path of object keys/array indexes.
std::vector<std::string> Keys(simdjson::dom::element e) {
  std::vector<std::string> k;
  simdjson::dom::object o;
  if (e.get_object().get(o) != simdjson::SUCCESS) return k;
  for (auto [key, v] : o) k.emplace_back(key);
  return k;
}

std::string FixtureText(const std::string& name) {
  std::ifstream f(std::string(INFERTEL_FIXTURES_DIR) + "/" + name);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The key layout of every frame kind of a chat stream: choice keys, delta keys, top keys.
std::string Layout(const std::string& json) {
  simdjson::dom::parser p;
  simdjson::dom::element doc = p.parse(json);
  std::string s;
  for (const auto& k : Keys(doc)) s += k + ",";
  simdjson::dom::array choices = doc["choices"];
  s += "|";
  if (choices.size() > 0) {
    for (const auto& k : Keys(choices.at(0))) s += k + ",";
    s += "|";
    for (const auto& k : Keys(choices.at(0)["delta"])) s += k + ",";
  }
  return s;
}

std::set<std::string> Layouts(const std::vector<std::string>& events) {
  std::set<std::string> out;
  for (const auto& e : events) out.insert(Layout(e));
  return out;
}

const char* kChat = R"({"model":"qwen","messages":[{"role":"user","content":"Reply with OK"}])";

TEST(SglangSurface, NonStreamingChatAndCompletionShapes) {
  auto server = testing::StartSglang(SimOptions{});
  ASSERT_TRUE(server);
  auto r =
      SimPost(server->port(), "/v1/chat/completions", std::string(kChat) + R"(,"max_tokens":5})");
  ASSERT_EQ(r.status, 200) << r.body;
  simdjson::dom::parser p;
  simdjson::dom::element doc = p.parse(r.body);
  EXPECT_EQ(Keys(doc), (std::vector<std::string>{"id", "object", "created", "model", "choices",
                                                 "usage", "metadata"}));
  std::string id{std::string_view(doc["id"])};
  EXPECT_TRUE(std::regex_match(id, std::regex("[0-9a-f]{32}"))) << id;  // no prefix
  EXPECT_EQ(std::string_view(doc["object"]), "chat.completion");
  EXPECT_EQ(std::string_view(doc["model"]), "qwen");  // the request's model, echoed
  simdjson::dom::element c = doc["choices"].at(0);
  EXPECT_EQ(Keys(c), (std::vector<std::string>{"index", "message", "logprobs", "finish_reason",
                                               "matched_stop"}));
  EXPECT_EQ(Keys(c["message"]),
            (std::vector<std::string>{"role", "content", "reasoning_content", "tool_calls"}));
  EXPECT_EQ(std::string_view(c["finish_reason"]), "length");
  EXPECT_TRUE(c["matched_stop"].is_null());
  EXPECT_EQ(Keys(doc["usage"]),
            (std::vector<std::string>{"prompt_tokens", "total_tokens", "completion_tokens",
                                      "prompt_tokens_details", "reasoning_tokens"}));
  EXPECT_EQ(int64_t(doc["usage"]["completion_tokens"]), 5);
  EXPECT_TRUE(doc["usage"]["prompt_tokens_details"].is_null());
  EXPECT_EQ(std::string_view(doc["metadata"]["weight_version"]), "default");

  // A natural stop reports the end-of-sequence token in matched_stop.
  auto r2 = SimPost(server->port(), "/v1/completions",
                    R"({"model":"m","prompt":"hello","max_tokens":500})");
  simdjson::dom::parser p2;
  simdjson::dom::element d2 = p2.parse(r2.body);
  EXPECT_EQ(std::string_view(d2["object"]), "text_completion");
  EXPECT_EQ(Keys(d2["choices"].at(0)), (std::vector<std::string>{"index", "text", "logprobs",
                                                                 "finish_reason", "matched_stop"}));
  EXPECT_EQ(std::string_view(d2["choices"].at(0)["finish_reason"]), "stop");
  EXPECT_EQ(int64_t(d2["choices"].at(0)["matched_stop"]), 151645);

  // A stop string is reported as itself.
  auto r3 =
      SimPost(server->port(), "/v1/completions",
              R"({"model":"m","prompt":"hello","max_tokens":60,"ignore_eos":true,"stop":[" "]})");
  simdjson::dom::parser p3;
  simdjson::dom::element d3 = p3.parse(r3.body);
  EXPECT_EQ(std::string_view(d3["choices"].at(0)["matched_stop"]), " ");

  // n=2: two choices, each its own sequence; prompt tokens counted once.
  auto r4 = SimPost(server->port(), "/v1/chat/completions",
                    std::string(kChat) + R"(,"max_tokens":3,"n":2,"ignore_eos":true})");
  simdjson::dom::parser p4;
  simdjson::dom::element d4 = p4.parse(r4.body);
  EXPECT_EQ(simdjson::dom::array(d4["choices"]).size(), 2u);
  EXPECT_EQ(int64_t(d4["usage"]["completion_tokens"]), 6);
  EXPECT_EQ(int64_t(d4["usage"]["prompt_tokens"]), int64_t(doc["usage"]["prompt_tokens"]));

  // The client's rid becomes the response id.
  auto r5 = SimPost(server->port(), "/v1/chat/completions",
                    std::string(kChat) + R"(,"max_tokens":2,"rid":"my-request-1"})");
  EXPECT_EQ(testing::JsonId(r5.body), "my-request-1");
}

TEST(SglangSurface, CacheReportOnlyWithTheFlag) {
  std::string words;
  for (int i = 0; i < 100; ++i) words += "x" + std::to_string(i) + " ";
  const std::string body = R"({"model":"m","prompt":")" + words + R"(","max_tokens":2})";
  for (bool flag : {false, true}) {
    SimOptions o;
    o.sglang.enable_cache_report = flag;
    auto server = testing::StartSglang(o);
    ASSERT_TRUE(server);
    SimPost(server->port(), "/v1/completions", body);
    auto r = SimPost(server->port(), "/v1/completions", body);
    simdjson::dom::parser p;
    simdjson::dom::element doc = p.parse(r.body);
    if (flag) {
      EXPECT_GT(int64_t(doc["usage"]["prompt_tokens_details"]["cached_tokens"]), 50) << r.body;
    } else {
      EXPECT_TRUE(doc["usage"]["prompt_tokens_details"].is_null()) << r.body;
    }
  }
}

TEST(SglangSurface, StreamedChatHasTheCapturedFrameLayout) {
  SimOptions o;
  o.sglang.reasoning_parser = "qwen3";
  auto server = testing::StartSglang(o);
  ASSERT_TRUE(server);
  auto r = SimPost(
      server->port(), "/v1/chat/completions",
      std::string(kChat) +
          R"(,"max_tokens":12,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}})");
  ASSERT_EQ(r.status, 200);
  bool done = false;
  auto ev = Events(r.body, &done);
  EXPECT_TRUE(done);
  auto fixture = Events(FixtureText("sglang-sse-chat-reasoning-usage.txt"));
  ASSERT_EQ(fixture.size(), 11u);
  // Same set of frame layouts: first, reasoning, content, finish and usage frames.
  EXPECT_EQ(Layouts(ev), Layouts(fixture));
  simdjson::dom::parser p;
  std::string id;
  int reasoning_frames = 0;
  for (std::size_t i = 0; i < ev.size(); ++i) {
    simdjson::dom::element d = p.parse(ev[i]);
    if (id.empty()) id = std::string(std::string_view(d["id"]));
    EXPECT_EQ(std::string_view(d["id"]), id);  // one request, one rid
    if (i == 0) {
      EXPECT_EQ(std::string_view(d["choices"].at(0)["delta"]["role"]), "assistant");
    }
    if (d["choices"].at(0)["delta"]["reasoning_content"].is_string()) ++reasoning_frames;
  }
  EXPECT_GE(reasoning_frames, 2);
  simdjson::dom::element last = p.parse(ev.back());
  EXPECT_EQ(int64_t(last["usage"]["completion_tokens"]), 12);
  EXPECT_EQ(int64_t(last["usage"]["reasoning_tokens"]), reasoning_frames);
  simdjson::dom::element fin = p.parse(ev[ev.size() - 2]);
  EXPECT_EQ(std::string_view(fin["choices"].at(0)["finish_reason"]), "length");
}

TEST(SglangSurface, ParallelToolCallsStreamLikeTheCapture) {
  SimOptions o;
  o.sglang.tool_call_parser = "deepseekv4";
  o.sglang.reasoning_parser = "deepseek-r1";
  auto server = testing::StartSglang(o);
  ASSERT_TRUE(server);
  const std::string tools =
      R"(,"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}])";
  auto r = SimPost(server->port(), "/v1/chat/completions",
                   std::string(kChat) + tools + R"(,"max_tokens":200,"stream":true})");
  ASSERT_EQ(r.status, 200);
  auto ev = Events(r.body);
  auto fixture = Events(FixtureText("sglang-sse-chat-toolcall-parallel.txt"));
  // Every layout we send appears in the capture (the capture also has a content preamble).
  for (const auto& l : Layouts(ev)) EXPECT_TRUE(Layouts(fixture).count(l)) << l;
  std::map<int, std::string> args;
  std::map<int, std::string> ids;
  std::string finish;
  simdjson::dom::parser p;
  for (const auto& e : ev) {
    simdjson::dom::element d = p.parse(e);
    simdjson::dom::element c = d["choices"].at(0);
    if (c["finish_reason"].is_string()) finish = std::string(std::string_view(c["finish_reason"]));
    simdjson::dom::array calls;
    if (c["delta"]["tool_calls"].get_array().get(calls) != simdjson::SUCCESS) continue;
    for (simdjson::dom::element t : calls) {
      int idx = static_cast<int>(int64_t(t["index"]));
      if (t["id"].is_string()) ids[idx] = std::string(std::string_view(t["id"]));
      args[idx] += std::string(std::string_view(t["function"]["arguments"]));
    }
  }
  EXPECT_EQ(finish, "tool_calls");
  ASSERT_EQ(args.size(), 2u);
  for (int k = 0; k < 2; ++k) {
    EXPECT_TRUE(std::regex_match(ids[k], std::regex("call_[0-9a-f]{24}"))) << ids[k];
    simdjson::dom::parser ap;
    simdjson::dom::element a;
    ASSERT_EQ(ap.parse(args[k]).get(a), simdjson::SUCCESS) << args[k];
    EXPECT_TRUE(a["city"].is_string()) << args[k];
  }

  // Non-streaming: the same calls in message.tool_calls, content null.
  auto n = SimPost(server->port(), "/v1/chat/completions",
                   std::string(kChat) + tools + R"(,"max_tokens":200})");
  simdjson::dom::parser np;
  simdjson::dom::element d = np.parse(n.body);
  simdjson::dom::element m = d["choices"].at(0)["message"];
  EXPECT_TRUE(m["content"].is_null());
  EXPECT_TRUE(m["reasoning_content"].is_string());
  EXPECT_EQ(simdjson::dom::array(m["tool_calls"]).size(), 2u);
  EXPECT_EQ(Keys(m["tool_calls"].at(0)),
            (std::vector<std::string>{"id", "index", "type", "function"}));
  EXPECT_EQ(std::string_view(d["choices"].at(0)["finish_reason"]), "tool_calls");

  // Without a parser the tools are not parsed: plain content.
  auto plain = testing::StartSglang(SimOptions{});
  auto pr = SimPost(plain->port(), "/v1/chat/completions",
                    std::string(kChat) + tools + R"(,"max_tokens":4,"ignore_eos":true})");
  simdjson::dom::parser pp;
  EXPECT_TRUE(pp.parse(pr.body)["choices"].at(0)["message"]["tool_calls"].is_null());
}

TEST(SglangSurface, StreamIntervalGroupsTokens) {
  SimOptions o;
  o.sglang.stream_interval = 4;
  auto server = testing::StartSglang(o);
  ASSERT_TRUE(server);
  auto r =
      SimPost(server->port(), "/v1/completions",
              R"({"model":"m","prompt":"count","max_tokens":9,"ignore_eos":true,"stream":true})");
  auto ev = Events(r.body);
  // Outputs at tokens 1, 5, 9 (len % 4 == 1), the last one finishing.
  ASSERT_EQ(ev.size(), 3u) << r.body;
  simdjson::dom::parser p;
  EXPECT_TRUE(p.parse(ev[0])["choices"].at(0)["finish_reason"].is_null());
  EXPECT_EQ(std::string_view(p.parse(ev[2])["choices"].at(0)["finish_reason"]), "length");

  // /generate takes a per-request sampling_params.stream_interval.
  auto g = SimPost(
      server->port(), "/generate",
      R"({"text":"count","sampling_params":{"max_new_tokens":6,"ignore_eos":true,"stream_interval":1},"stream":true})");
  bool done = false;
  auto gev = Events(g.body, &done);
  EXPECT_TRUE(done);
  EXPECT_EQ(gev.size(), 6u);
}

TEST(SglangSurface, NativeGenerateMetaInfo) {
  SimOptions o;
  o.sglang.enable_metrics = true;
  auto server = testing::StartSglang(o);
  ASSERT_TRUE(server);
  auto r = SimPost(
      server->port(), "/generate",
      R"({"text":"The capital of France is","sampling_params":{"max_new_tokens":4,"ignore_eos":true},"rid":"gen-1"})");
  ASSERT_EQ(r.status, 200) << r.body;
  simdjson::dom::parser p;
  simdjson::dom::element d = p.parse(r.body);
  EXPECT_EQ(Keys(d), (std::vector<std::string>{"text", "output_ids", "meta_info"}));
  simdjson::dom::element m = d["meta_info"];
  EXPECT_EQ(std::string_view(m["id"]), "gen-1");
  EXPECT_EQ(std::string_view(m["finish_reason"]["type"]), "length");
  EXPECT_EQ(int64_t(m["finish_reason"]["length"]), 4);
  EXPECT_EQ(int64_t(m["completion_tokens"]), 4);
  EXPECT_EQ(simdjson::dom::array(d["output_ids"]).size(), 4u);
  for (const char* k :
       {"prompt_tokens", "weight_version", "num_retractions", "reasoning_tokens", "cached_tokens",
        "e2e_latency", "request_received_ts", "request_finished_ts", "forward_entry_time",
        "queue_time", "response_sent_to_client_ts"}) {
    simdjson::dom::element e;
    EXPECT_EQ(m[k].get(e), simdjson::SUCCESS) << k;
  }
  std::vector<std::string> keys = Keys(m);
  EXPECT_EQ(keys[0], "id");
  EXPECT_EQ(keys[1], "finish_reason");

  // Streaming: cumulative text, finish_reason null until the end, then [DONE].
  auto s = SimPost(
      server->port(), "/generate",
      R"({"text":"hi","sampling_params":{"max_new_tokens":3,"ignore_eos":true},"stream":true})");
  bool done = false;
  auto ev = Events(s.body, &done);
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_TRUE(done);
  simdjson::dom::parser p2;
  std::string prev;
  for (std::size_t i = 0; i < ev.size(); ++i) {
    simdjson::dom::element e = p2.parse(ev[i]);
    std::string text{std::string_view(e["text"])};
    EXPECT_EQ(text.rfind(prev, 0), 0u);
    prev = text;
    EXPECT_EQ(e["meta_info"]["finish_reason"].is_null(), i + 1 < ev.size());
  }

  // Errors of the native API.
  auto bad = SimPost(server->port(), "/generate", R"({"sampling_params":{}})");
  EXPECT_EQ(bad.status, 400);
  simdjson::dom::parser p3;
  EXPECT_TRUE(p3.parse(bad.body)["error"]["message"].is_string()) << bad.body;
}

TEST(SglangSurface, InfoEndpointsAndErrors) {
  SimOptions o;
  o.model = "org/model-path";
  o.sglang.served_model_name = "served";
  o.sglang.stream_interval = 3;
  o.sglang.log_requests = true;
  o.sglang.version = "0.5.20";
  auto server = testing::StartSglang(o);
  ASSERT_TRUE(server);
  for (const char* path : {"/server_info", "/get_server_info"}) {
    auto r = SimGet(server->port(), path);
    ASSERT_EQ(r.status, 200) << path;
    simdjson::dom::parser p;
    simdjson::dom::element d = p.parse(r.body);
    EXPECT_EQ(std::string_view(d["version"]), "0.5.20");
    EXPECT_EQ(int64_t(d["stream_interval"]), 3);
    EXPECT_TRUE(bool(d["log_requests"]));
    EXPECT_EQ(int64_t(d["log_requests_level"]), 2);
    EXPECT_FALSE(bool(d["enable_trace"]));
    EXPECT_EQ(std::string_view(d["otlp_traces_endpoint"]), "localhost:4317");
    EXPECT_EQ(int64_t(d["port"]), server->port());
    EXPECT_EQ(std::string_view(d["served_model_name"]), "served");
  }
  auto models = SimGet(server->port(), "/v1/models");
  simdjson::dom::parser mp;
  simdjson::dom::element md = mp.parse(models.body);
  EXPECT_EQ(std::string_view(md["data"].at(0)["id"]), "served");
  EXPECT_EQ(std::string_view(md["data"].at(0)["root"]), "org/model-path");
  EXPECT_EQ(std::string_view(md["data"].at(0)["owned_by"]), "sglang");
  EXPECT_EQ(SimGet(server->port(), "/health").status, 200);
  EXPECT_EQ(SimGet(server->port(), "/health_generate").status, 200);
  EXPECT_EQ(SimGet(server->port(), "/version").status, 404);  // SGLang has no /version

  // Errors: SGLang's ErrorResponse at the top level.
  auto not_json = testing::SimDo(server->port(), boost::beast::http::verb::post,
                                 "/v1/chat/completions", "", {{"Content-Type", "text/plain"}});
  EXPECT_EQ(not_json.status, 400);
  simdjson::dom::parser ep;
  simdjson::dom::element e = ep.parse(not_json.body);
  EXPECT_EQ(Keys(e), (std::vector<std::string>{"object", "message", "type", "param", "code"}));
  EXPECT_EQ(std::string_view(e["object"]), "error");
  EXPECT_EQ(int64_t(e["code"]), 400);
  auto too_long = SimPost(server->port(), "/v1/completions",
                          R"({"model":"m","prompt":"x","max_tokens":100000})");
  EXPECT_EQ(too_long.status, 400);
  simdjson::dom::parser tp;
  simdjson::dom::element t = tp.parse(too_long.body);
  EXPECT_EQ(std::string_view(t["type"]), "BadRequestError");
  EXPECT_NE(std::string(std::string_view(t["message"])).find("maximum context length"),
            std::string::npos);
  EXPECT_EQ(
      SimPost(server->port(), "/v1/completions", R"({"model":"m","prompt":"x","max_tokens":0})")
          .status,
      400);
}

TEST(SglangSurface, ConfigureLoggingChangesTheRequestLog) {
  std::mutex mu;
  std::vector<std::string> lines;
  SimOptions o;
  o.log_sink = [&](const std::string& l) {
    std::lock_guard lk(mu);
    lines.push_back(l);
  };
  auto server = testing::StartSglang(o);
  ASSERT_TRUE(server);
  auto count = [&](const std::string& needle) {
    std::lock_guard lk(mu);
    int n = 0;
    for (const auto& l : lines) n += l.find(needle) != std::string::npos;
    return n;
  };
  const std::string body = std::string(kChat) + R"(,"max_tokens":2,"rid":"logged-1"})";
  SimPost(server->port(), "/v1/chat/completions", body);
  EXPECT_EQ(count("Receive: obj="), 0);  // off by default

  auto stats0 = SimGet(server->port(), "/_sim/stats");
  simdjson::dom::parser p0;
  EXPECT_FALSE(bool(p0.parse(stats0.body)["log_requests"]));

  auto cfg = SimPost(server->port(), "/configure_logging",
                     R"({"log_requests":true,"log_requests_level":1})");
  EXPECT_EQ(cfg.status, 200);
  EXPECT_EQ(
      count("Config logging: obj=ConfigureLoggingReq(log_requests=True, log_requests_level=1"), 1);
  auto stats1 = SimGet(server->port(), "/_sim/stats");
  simdjson::dom::parser p1;
  simdjson::dom::element s1 = p1.parse(stats1.body);
  EXPECT_TRUE(bool(s1["log_requests"]));
  EXPECT_EQ(int64_t(s1["log_requests_level"]), 1);
  EXPECT_EQ(int64_t(s1["trace_level"]), 3);
  // server_info keeps the start-up arguments.
  simdjson::dom::parser pi;
  EXPECT_FALSE(bool(pi.parse(SimGet(server->port(), "/server_info").body)["log_requests"]));

  SimPost(server->port(), "/v1/chat/completions", body);
  EXPECT_TRUE(WaitFor([&] { return count("Finish: obj=GenerateReqInput(") == 1; }));
  EXPECT_EQ(count("Receive: obj=GenerateReqInput(sampling_params={"), 1);  // level 1: no text
  EXPECT_EQ(count("rid='logged-1'"), 2);
  {
    std::lock_guard lk(mu);
    for (const auto& l : lines)
      EXPECT_TRUE(std::regex_search(l, std::regex(R"(^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] )"))) << l;
  }

  // Restored: no more request lines.
  EXPECT_EQ(SimPost(server->port(), "/configure_logging", R"({"log_requests":false})").status, 200);
  SimPost(server->port(), "/v1/chat/completions", body);
  EXPECT_EQ(count("Receive: obj="), 1);
  EXPECT_EQ(SimPost(server->port(), "/configure_logging", R"({"log_requests_level":7})").status,
            400);
}

TEST(SglangSurface, ClientDisconnectAbortsAfterTheDelay) {
  SimOptions o;
  o.sglang.stream_abort_delay_ms = 300;
  auto server = testing::StartSglang(o, {}, 5.0);
  ASSERT_TRUE(server);
  const auto t0 = std::chrono::steady_clock::now();
  testing::SimStreamThenDisconnect(
      server->port(),
      R"({"model":"m","messages":[{"role":"user","content":"go"}],"stream":true,"max_tokens":5000,"ignore_eos":true})");
  // Still running right after the disconnect: SGLang's abort task sleeps first.
  EXPECT_EQ(server->engine().Stats().aborted, 0u);
  ASSERT_TRUE(WaitFor([&] { return server->engine().Stats().aborted == 1; }));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(250));
  simdjson::dom::parser p;
  EXPECT_EQ(int64_t(p.parse(SimGet(server->port(), "/_sim/stats").body)["client_aborts"]), 1);

  // Non-streaming: noticed at the wait timeout.
  auto server2 = testing::StartSglang(o, {{"SGLANG_REQUEST_STATE_WAIT_TIMEOUT", "0.2"}}, 5.0);
  {
    namespace net = boost::asio;
    net::io_context ioc;
    net::ip::tcp::socket sock(ioc);
    sock.connect({net::ip::make_address("127.0.0.1"), server2->port()});
    boost::beast::http::write(
        sock,
        testing::MakeSimRequest(
            boost::beast::http::verb::post, "/v1/chat/completions",
            R"({"model":"m","messages":[{"role":"user","content":"go"}],"max_tokens":5000,"ignore_eos":true})"));
    ASSERT_TRUE(WaitFor([&] { return server2->engine().Stats().running == 1; }));
    sock.close();
  }
  EXPECT_TRUE(WaitFor([&] { return server2->engine().Stats().aborted == 1; }));
}

TEST(SglangSurface, RejectsBadOptions) {
  std::string error;
  SimOptions o;
  o.engine = "sglang";
  o.sglang.version = "0.4.3";
  o.sglang.enable_trace = true;
  EXPECT_EQ(SimServer::Start(o, &error), nullptr);
  EXPECT_NE(error.find("--enable-trace"), std::string::npos);
  o.sglang.version = "banana";
  EXPECT_EQ(SimServer::Start(o, &error), nullptr);
  o.sglang.version = "0.5.20";
  o.sglang.enable_trace = false;
  o.sglang.disaggregation_mode = "both";
  EXPECT_EQ(SimServer::Start(o, &error), nullptr);

  SglangVersion v;
  ASSERT_TRUE(ParseSglangVersion("0.5.21.dev889+gd8afe1af9", &v));
  EXPECT_EQ(v.patch, 21);
  ASSERT_TRUE(ParseSglangVersion("0.4.0.post2", &v));
  EXPECT_EQ(v.minor, 4);
  EXPECT_FALSE(ParseSglangVersion("x.y", &v));
}

}  // namespace
}  // namespace infertel::sim
