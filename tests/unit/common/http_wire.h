#pragma once
// HTTP/1.1 requests as bytes on the wire, for tests that write several at once (pipelined)
// and so need them serialized rather than sent one by one.

#include <boost/beast/http.hpp>

#include <sstream>
#include <string>
#include <string_view>

namespace infertel::testing {

// A POST of `body` to `target`: with a Content-Length, or chunked.
inline std::string PostBytes(std::string_view target, std::string_view content_type,
                             std::string body, bool chunked) {
  namespace bhttp = boost::beast::http;
  bhttp::request<bhttp::string_body> req{bhttp::verb::post, target, 11};
  req.set(bhttp::field::host, "127.0.0.1");
  req.set(bhttp::field::content_type, content_type);
  req.body() = std::move(body);
  if (chunked) {
    req.chunked(true);
  } else {
    req.prepare_payload();
  }
  std::ostringstream out;
  out << req;
  return out.str();
}

}  // namespace infertel::testing
