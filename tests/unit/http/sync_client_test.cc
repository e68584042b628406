// The synchronous client's typed errors: a body past the caller's limit is kBodyTooLarge
// (reading stopped there), a refused connection kConnect, a success kNone.

#include "http/sync_client.h"

#include <gtest/gtest.h>

#include "http/simple_server.h"

namespace infertel::http {
namespace {

TEST(SyncClientTest, ErrorsAreTyped) {
  std::string error;
  auto server = SimpleServer::Start(
      {"127.0.0.1", 0},
      [](const StringRequest& req) {
        return MakeResponse(200, std::string(req.target() == "/big" ? 2u << 20 : 10u, 'x'));
      },
      &error);
  ASSERT_NE(server, nullptr) << error;
  const std::string base = "http://127.0.0.1:" + std::to_string(server->port());
  SyncClient client;
  SyncResponse res;
  EXPECT_FALSE(client.Send("GET", *ParseUrl(base + "/big"), {}, "", "", &res, &error, 1u << 20));
  EXPECT_EQ(client.last_error(), SyncError::kBodyTooLarge) << error;
  EXPECT_TRUE(client.Send("GET", *ParseUrl(base + "/small"), {}, "", "", &res, &error, 1u << 20))
      << error;
  EXPECT_EQ(client.last_error(), SyncError::kNone);
  const std::uint16_t port = server->port();
  server->Stop();
  server.reset();
  SyncClient fresh(SyncTimeouts{std::chrono::milliseconds(500), std::chrono::milliseconds(500),
                                std::chrono::milliseconds(500)});
  EXPECT_FALSE(fresh.Send("GET", *ParseUrl("http://127.0.0.1:" + std::to_string(port) + "/"), {},
                          "", "", &res, &error));
  EXPECT_EQ(fresh.last_error(), SyncError::kConnect) << error;
}

}  // namespace
}  // namespace infertel::http
