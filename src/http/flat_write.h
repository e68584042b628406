#pragma once
// A message of known length written as two buffers, its head and its body, in one write.
//
// Why: Beast's serializer hands the socket a view that concatenates the start line, every
// field and the body, and walks it through nested buffer adaptors on each write; at saturation
// that walk was about a twentieth of the gateway thread's CPU per request, for the request to
// the upstream and the answer to the client together (docs/performance-history.md). The head
// here is the same bytes Beast writes (a test compares them): the start line, each field as
// "Name: value" in the message's order, an empty line.

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include <array>
#include <string>

namespace infertel::http {

void AppendHead(const boost::beast::http::request_header<>& h, std::string* out);
void AppendHead(const boost::beast::http::response_header<>& h, std::string* out);

// `m`'s head into `head` (cleared first) and the two buffers to write: the head and the body.
// Only for a message that is not chunked (its body goes as it is).
template <bool isRequest>
std::array<boost::asio::const_buffer, 2> HeadAndBody(
    const boost::beast::http::message<isRequest, boost::beast::http::string_body>& m,
    std::string* head) {
  head->clear();
  AppendHead(m.base(), head);
  return {boost::asio::buffer(*head), boost::asio::buffer(m.body())};
}

}  // namespace infertel::http
