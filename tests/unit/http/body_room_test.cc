// The read-room policy of http/body_room.h: how much room a body read gets, and that giving
// it back keeps the bytes already read.

#include "http/body_room.h"

#include <gtest/gtest.h>

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/http.hpp>

#include <string>

namespace infertel::http {
namespace {

namespace beast = boost::beast;
namespace bhttp = beast::http;

// Puts `bytes` into `buffer` and parses a request header from it, as a read would.
void HeaderFrom(const std::string& bytes, beast::flat_buffer& buffer,
                bhttp::request_parser<bhttp::string_body>& parser) {
  auto room = buffer.prepare(bytes.size());
  boost::asio::buffer_copy(room, boost::asio::buffer(bytes));
  buffer.commit(bytes.size());
  parser.eager(false);
  boost::system::error_code ec;
  while (!parser.is_header_done()) {
    const std::size_t used = parser.put(buffer.data(), ec);
    ASSERT_FALSE(ec) << ec.message();
    buffer.consume(used);
  }
}

std::string Header(const std::string& length_field) {
  return "POST /v1/traces HTTP/1.1\r\nHost: t\r\n" + length_field + "\r\n\r\n";
}

TEST(BodyRoomTest, ALargeBodyGetsTheWholeRoomAfterItsHeader) {
  beast::flat_buffer buffer;
  bhttp::request_parser<bhttp::string_body> parser;
  HeaderFrom(Header("Content-Length: 300000") + std::string(100, 'x'), buffer, parser);
  ASSERT_EQ(buffer.size(), 100u);  // the start of the body, read with the header
  MakeRoomForBody(buffer, parser);
  EXPECT_GE(buffer.capacity() - buffer.size(), kBodyReadRoom);
}

TEST(BodyRoomTest, ASmallBodyGetsOnlyWhatItStillNeeds) {
  beast::flat_buffer buffer;
  bhttp::request_parser<bhttp::string_body> parser;
  HeaderFrom(Header("Content-Length: 3000") + std::string(1000, 'x'), buffer, parser);
  MakeRoomForBody(buffer, parser);
  EXPECT_GE(buffer.capacity() - buffer.size(), 2000u);
  EXPECT_LT(buffer.capacity(), 8192u);
}

TEST(BodyRoomTest, ABodyAlreadyReadGetsNoRoom) {
  beast::flat_buffer buffer;
  buffer.reserve(2048);
  bhttp::request_parser<bhttp::string_body> parser;
  HeaderFrom(Header("Content-Length: 500") + std::string(500, 'x'), buffer, parser);
  const std::size_t before = buffer.capacity();
  MakeRoomForBody(buffer, parser);
  EXPECT_EQ(buffer.capacity(), before);  // no reallocation for a typical request
}

TEST(BodyRoomTest, AChunkedBodyGetsTheWholeRoom) {
  beast::flat_buffer buffer;
  bhttp::request_parser<bhttp::string_body> parser;
  HeaderFrom(Header("Transfer-Encoding: chunked"), buffer, parser);
  MakeRoomForBody(buffer, parser);
  EXPECT_GE(buffer.capacity() - buffer.size(), kBodyReadRoom);
}

TEST(BodyRoomTest, GivingTheRoomBackKeepsTheBytesReadAhead) {
  beast::flat_buffer buffer;
  buffer.reserve(kBodyReadRoom);
  const std::string next = "POST /v1/traces HTTP/1.1\r\n";  // a pipelined request's start
  auto room = buffer.prepare(next.size());
  boost::asio::buffer_copy(room, boost::asio::buffer(next));
  buffer.commit(next.size());
  ReleaseBodyRoom(buffer, 2048);
  EXPECT_EQ(beast::buffers_to_string(buffer.data()), next);
  EXPECT_GE(buffer.capacity() - buffer.size(), 2048u);
  EXPECT_LT(buffer.capacity(), 8192u);

  beast::flat_buffer small;
  small.reserve(2048);
  ReleaseBodyRoom(small, 2048);  // never grown: left as it is
  EXPECT_EQ(small.capacity(), 2048u);
}

}  // namespace
}  // namespace infertel::http
