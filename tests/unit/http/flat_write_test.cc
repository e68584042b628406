#include "http/flat_write.h"

#include <gtest/gtest.h>
#include <boost/beast/http/write.hpp>

#include <sstream>

namespace infertel::http {
namespace {

namespace bhttp = boost::beast::http;

// What Beast's own serializer writes for `m`.
template <bool isRequest>
std::string BeastBytes(const bhttp::message<isRequest, bhttp::string_body>& m) {
  std::ostringstream out;
  out << m;
  return out.str();
}

template <bool isRequest>
std::string FlatBytes(const bhttp::message<isRequest, bhttp::string_body>& m) {
  std::string head;
  std::string out;
  for (const auto& b : HeadAndBody(m, &head))
    out.append(static_cast<const char*>(b.data()), b.size());
  return out;
}

TEST(FlatWrite, ARequestIsTheBytesBeastWrites) {
  bhttp::request<bhttp::string_body> req{bhttp::verb::post, "/v1/chat/completions?x=1", 11};
  req.set(bhttp::field::host, "127.0.0.1:8000");
  req.set(bhttp::field::content_type, "application/json");
  req.insert("X-Custom-Header", "a");
  req.insert("x-custom-header", "b");  // repeated, kept in order
  req.set("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
  req.body() = R"({"model":"m","messages":[]})";
  req.prepare_payload();
  EXPECT_EQ(FlatBytes(req), BeastBytes(req));
  EXPECT_TRUE(FlatBytes(req).starts_with("POST /v1/chat/completions?x=1 HTTP/1.1\r\n"));

  bhttp::request<bhttp::string_body> other{bhttp::verb::unknown, "/", 10};
  other.method_string("PURGE");  // a method Beast does not know
  EXPECT_EQ(FlatBytes(other), BeastBytes(other));
  EXPECT_TRUE(FlatBytes(other).starts_with("PURGE / HTTP/1.0\r\n"));
}

TEST(FlatWrite, AResponseIsTheBytesBeastWrites) {
  bhttp::response<bhttp::string_body> res{bhttp::status::ok, 11};
  res.reason("Fine");  // an upstream's own reason phrase, as the parser keeps it
  res.set(bhttp::field::content_type, "application/json");
  res.set("x-request-id", "chatcmpl-1");
  res.body() = R"({"id":"chatcmpl-1"})";
  res.prepare_payload();
  EXPECT_EQ(FlatBytes(res), BeastBytes(res));
  EXPECT_TRUE(FlatBytes(res).starts_with("HTTP/1.1 200 Fine\r\n"));

  for (unsigned code : {201u, 404u, 418u, 503u, 599u}) {
    bhttp::response<bhttp::string_body> r;
    r.result(code);
    r.version(10);
    r.body() = "x";
    r.prepare_payload();
    EXPECT_EQ(FlatBytes(r), BeastBytes(r)) << code;  // Beast's reason for the code, or none
  }
}

}  // namespace
}  // namespace infertel::http
