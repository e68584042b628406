#include "console/document.h"
#include "engines/sglang/sglang_keys.h"
#include "engines/vllm/vllm_keys.h"

#include <gtest/gtest.h>

#include <chrono>

namespace infertel::console {
namespace {

using config::Key;
using config::Value;

ConsoleValues Ok(std::string_view text) {
  auto r = ParseConsoleDocument(text);
  if (auto* err = std::get_if<DocumentError>(&r)) {
    ADD_FAILURE() << "unexpected error: " << err->message;
    return {};
  }
  return std::get<ConsoleValues>(r);
}

DocumentError Refused(std::string_view text) {
  auto r = ParseConsoleDocument(text);
  if (std::holds_alternative<ConsoleValues>(r)) {
    ADD_FAILURE() << "accepted: " << text.substr(0, 200);
    return {};
  }
  return std::get<DocumentError>(r);
}

std::string Err(std::string_view text) { return Refused(text).message; }

// A "billion laughs" of nested mappings: `levels` anchors, each a mapping of ten aliases of
// the one before, 10^levels leaves in under a kilobyte.
std::string AliasBomb(int levels) {
  std::string doc =
      "l0: &l0 {k0: 1, k1: 1, k2: 1, k3: 1, k4: 1, k5: 1, k6: 1, k7: 1, k8: 1, k9: 1}\n";
  for (int i = 1; i < levels; ++i) {
    const std::string prev = "*l" + std::to_string(i - 1);
    doc += "l" + std::to_string(i) + ": &l" + std::to_string(i) + " {";
    for (int k = 0; k < 10; ++k) doc += (k ? ", k" : "k") + std::to_string(k) + ": " + prev;
    doc += "}\n";
  }
  return doc;
}

TEST(ConsoleDocumentTest, FlatYamlIsTyped) {
  auto v =
      Ok("otel.instrumentation.vllm.tracing.level: 2\n"
         "otel.instrumentation.genai.capture-message-content: off\n"
         "apsara.apm.inference.sglang.logging.level: debug\n"
         "otel.instrumentation.genai.message-content.capture-strategy: SPAN_AND_EVENT\n");
  ASSERT_EQ(v.size(), 4u);
  EXPECT_EQ(v[engines::vllm::keys().tracing_level], Value{std::int64_t{2}});
  EXPECT_EQ(v[Key::kCaptureMessageContent], Value{false});
  EXPECT_EQ(v[engines::sglang::keys().logging_level], Value{std::string("DEBUG")});
  EXPECT_EQ(v[Key::kMessageContentCaptureStrategy], Value{std::string("span_and_event")});
}

TEST(ConsoleDocumentTest, NestedYamlIsJoinedWithDots) {
  auto v =
      Ok("otel:\n"
         "  instrumentation:\n"
         "    vllm:\n"
         "      enabled: false\n"
         "      tracing.level: 0\n"
         "    genai:\n"
         "      message-content:\n"
         "        max-length: 100\n");
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[engines::vllm::keys().enabled], Value{false});
  EXPECT_EQ(v[engines::vllm::keys().tracing_level], Value{std::int64_t{0}});
  EXPECT_EQ(v[Key::kMessageContentMaxLength], Value{std::int64_t{100}});
}

TEST(ConsoleDocumentTest, JsonWithTabsAndNestedObjects) {
  auto v =
      Ok("{\n\t\"otel.instrumentation.sglang.tracing.level\": 1,\n"
         "\t\"apsara.apm.inference.sglang\": {\"log_requests.enabled\": true,"
         " \"log_requests.level\": \"3\"}\n}");
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[engines::sglang::keys().tracing_level], Value{std::int64_t{1}});
  EXPECT_EQ(v[engines::sglang::keys().log_requests], Value{true});
  EXPECT_EQ(v[engines::sglang::keys().log_requests_level], Value{std::int64_t{3}});
}

TEST(ConsoleDocumentTest, NullLeavesTheKeyUnsetAndEmptyIsNoValues) {
  auto v =
      Ok("otel.instrumentation.vllm.tracing.level: ~\n"
         "otel.instrumentation.vllm.metrics.enabled: false\n");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v.count(engines::vllm::keys().tracing_level), 0u);
  EXPECT_TRUE(Ok("").empty());
  EXPECT_TRUE(Ok("# only a comment\n").empty());
  EXPECT_TRUE(Ok("{}").empty());
}

TEST(ConsoleDocumentTest, UnknownKeyRejectsTheWholeDocument) {
  std::string e =
      Err("otel.instrumentation.vllm.tracing.level: 2\n"
          "otel.instrumentation.vllm.nope: 1\n");
  EXPECT_NE(e.find("unknown key 'otel.instrumentation.vllm.nope'"), std::string::npos) << e;
}

TEST(ConsoleDocumentTest, BadValueNamesTheKeyAndTheAcceptedValues) {
  std::string e = Err("otel.instrumentation.vllm.tracing.level: 7\n");
  EXPECT_NE(e.find("otel.instrumentation.vllm.tracing.level"), std::string::npos) << e;
  EXPECT_NE(e.find("an integer from 0 to 2"), std::string::npos) << e;
  e = Err("{\"apsara.apm.inference.sglang.logging.level\": \"LOUD\"}");
  EXPECT_NE(e.find("one of DEBUG,INFO,WARNING,ERROR,CRITICAL"), std::string::npos) << e;
  e = Err("{\"otel.instrumentation.genai.message-content.max-length\": 1.5}");
  EXPECT_NE(e.find("max-length"), std::string::npos) << e;
}

TEST(ConsoleDocumentTest, SyntaxAndShapeErrors) {
  EXPECT_NE(Err("a: [1, 2").find("invalid YAML"), std::string::npos);
  EXPECT_NE(Err("{\"a\": }").find("invalid JSON"), std::string::npos);
  EXPECT_NE(Err("- 1\n- 2\n").find("expected a mapping"), std::string::npos);
  EXPECT_NE(Err("otel.instrumentation.vllm.tracing.level: [1]\n").find("got a list"),
            std::string::npos);
  EXPECT_NE(Err(std::string(kMaxDocumentBytes + 1, ' ')).find("larger than"), std::string::npos);
  EXPECT_EQ(Refused(std::string(kMaxDocumentBytes + 1, ' ')).reason, Refusal::kTooLarge);
  EXPECT_EQ(Refused("a: [1, 2").reason, Refusal::kSyntax);
  EXPECT_EQ(Refused("nope: 1\n").reason, Refusal::kInvalid);
}

// 10^9 leaves in 970 bytes: refused at once, before anything is expanded (it used to grow the
// agent by about 1 GB/s).
TEST(ConsoleDocumentTest, AliasBombIsRefusedBeforeExpanding) {
  const std::string bomb = AliasBomb(9);
  ASSERT_LT(bomb.size(), 1024u);
  const auto start = std::chrono::steady_clock::now();
  const DocumentError e = Refused(bomb);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  EXPECT_EQ(e.reason, Refusal::kTooManyNodes);
  EXPECT_NE(e.message.find("aliases expanded"), std::string::npos) << e.message;
  // Of lists too, and of an alias used many times over.
  EXPECT_EQ(Refused("a: &a [x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n"
                    "c: &c [*b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c]\n")
                .reason,
            Refusal::kTooManyNodes);
}

// Found by tests/fuzz/console_document_fuzz.cc: an alias inside its own anchor is a cycle
// that yaml-cpp builds as one; flattening it went on to the depth limit, 10^16 leaves.
TEST(ConsoleDocumentTest, AliasCycleIsRefused) {
  const DocumentError e =
      Refused("l0: &l0 {k0: *l0, k1: *l0, k2: *l0, k3: *l0, k4: *l0, k5: *l0, k6: *l0, k7: *l0}\n");
  EXPECT_EQ(e.reason, Refusal::kTooManyNodes);
  EXPECT_NE(e.message.find("cycle"), std::string::npos) << e.message;
  EXPECT_EQ(Refused("a: &a [x, *a]\n").reason, Refusal::kTooManyNodes);
}

TEST(ConsoleDocumentTest, SmallAliasesAreStillRead) {
  auto v =
      Ok("otel.instrumentation.vllm.tracing.level: &lvl 1\n"
         "otel.instrumentation.sglang.tracing.level: *lvl\n");
  EXPECT_EQ(v[engines::vllm::keys().tracing_level], Value{std::int64_t{1}});
  EXPECT_EQ(v[engines::sglang::keys().tracing_level], Value{std::int64_t{1}});
  // Three levels of ten: 1,000 leaves with the aliases expanded, within the bound (all unknown).
  EXPECT_EQ(Refused(AliasBomb(3)).reason, Refusal::kInvalid);
}

TEST(ConsoleDocumentTest, DeepNestingIsRefused) {
  std::string yaml, json;
  for (int i = 0; i < 1000; ++i) yaml += "[", json += "{\"a\":";
  EXPECT_EQ(Refused(yaml).reason, Refusal::kTooDeep);
  json += "1";
  for (int i = 0; i < 1000; ++i) json += "}";
  EXPECT_EQ(Refused(json).reason, Refusal::kTooDeep);
  std::string nested;
  for (int i = 0; i < 20; ++i) nested += std::string(static_cast<std::size_t>(i) * 2, ' ') + "k:\n";
  EXPECT_EQ(Refused(nested).reason, Refusal::kTooDeep);
}

TEST(ConsoleDocumentTest, EchoedKeysAreCutAndEscaped) {
  const std::string e = Err(std::string(5000, 'k') + "\x1b]0;x: 1\n");
  EXPECT_LT(e.size(), 300u) << e;
  EXPECT_EQ(e.find('\x1b'), std::string::npos) << e;
  const std::string v = Err("otel.instrumentation.vllm.tracing.level: \"\\e]0;owned\\a" +
                            std::string(5000, '9') + "\"\n");
  EXPECT_LT(v.size(), 300u) << v;
  EXPECT_EQ(v.find('\x1b'), std::string::npos) << v;
  EXPECT_NE(v.find("\\x1b]0;owned\\x07"), std::string::npos) << v;
}

TEST(ConsoleDocumentTest, ErrorListIsBounded) {
  std::string doc;
  for (int i = 0; i < 30; ++i) doc += "unknown.key" + std::to_string(i) + ": 1\n";
  std::string e = Err(doc);
  EXPECT_NE(e.find("and 22 more"), std::string::npos) << e;
}

TEST(ConsoleDocumentTest, ATableKeyTakesTheWholeMappingBelowIt) {
  const char* yaml =
      "infertel:\n"
      "  slo:\n"
      "    ttft-ms: 800\n"
      "    models:\n"
      "      meta-llama/Llama-3.1-8B-Instruct: {ttft-ms: 500, tpot-ms: 50}\n"
      "      qwen2.5.7b:\n"
      "        e2e-ms: 30000\n"
      "  tenant.from: header:x-tenant-id,user\n";
  ConsoleValues v = Ok(yaml);
  EXPECT_EQ(config::FormatValue(v[Key::kSloModels]),
            R"({"meta-llama/Llama-3.1-8B-Instruct":{"ttft-ms":500,"tpot-ms":50},)"
            R"("qwen2.5.7b":{"e2e-ms":30000}})");
  EXPECT_EQ(v[Key::kSloTtftMs], Value{std::int64_t{800}});
  EXPECT_EQ(config::FormatValue(v[Key::kTenantFrom]), "header:x-tenant-id,user");
  // The same in JSON.
  v = Ok(R"({"infertel.slo.models": {"qwen2.5.7b": {"e2e-ms": 30000}}})");
  EXPECT_EQ(config::FormatValue(v[Key::kSloModels]), R"({"qwen2.5.7b":{"e2e-ms":30000}})");
  // A bad field or value refuses the document, naming the key.
  EXPECT_NE(Err("infertel.slo.models: {m: {ttft: 5}}\n").find("infertel.slo.models"),
            std::string::npos);
  EXPECT_NE(Err("infertel.slo.models: {m: {ttft-ms: fast}}\n").find("infertel.slo.models"),
            std::string::npos);
}

}  // namespace
}  // namespace infertel::console
