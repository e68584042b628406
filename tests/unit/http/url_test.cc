#include <gtest/gtest.h>

#include "http/simple_server.h"
#include "http/url.h"

namespace infertel::http {
namespace {

TEST(UrlTest, ParsesCommonForms) {
  auto u = ParseUrl("http://127.0.0.1:8000");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->host, "127.0.0.1");
  EXPECT_EQ(u->port, 8000);
  EXPECT_EQ(u->path, "/");
  u = ParseUrl("http://collector:4318/v1/traces");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->path, "/v1/traces");
  EXPECT_EQ(u->HostPort(), "collector:4318");
  u = ParseUrl("localhost:4317");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->port, 4317);
  u = ParseUrl("http://[::1]:9000/x");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->HostPort(), "[::1]:9000");
  EXPECT_EQ(ParseUrl("http://example")->port, 80);
  EXPECT_FALSE(ParseUrl("ftp://x:1"));
  EXPECT_FALSE(ParseUrl("http://:80"));
  EXPECT_FALSE(ParseUrl("http://h:99999"));
}

TEST(UrlTest, HostPortRequiresPort) {
  EXPECT_TRUE(ParseHostPort("0.0.0.0:0"));
  EXPECT_EQ(ParseHostPort("127.0.0.1:9464")->port, 9464);
  EXPECT_FALSE(ParseHostPort("127.0.0.1"));
  EXPECT_FALSE(ParseHostPort(":80"));
  EXPECT_TRUE(IsLoopbackHost("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackHost("localhost"));
  EXPECT_FALSE(IsLoopbackHost("0.0.0.0"));
}

TEST(JsonErrorTest, EscapesAndShapes) {
  EXPECT_EQ(
      JsonErrorBody(502, "BadGateway", "engine \"a\"\n down"),
      R"({"error":{"message":"engine \"a\"\n down","type":"BadGateway","param":null,"code":502}})");
}

}  // namespace
}  // namespace infertel::http
