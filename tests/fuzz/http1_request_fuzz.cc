// libFuzzer target for the HTTP/1 request path of the agent's servers: Beast's request parser
// with the servers' limits, fed in pieces, then the framing rules of http/framing.h and the
// hop-by-hop filter.
// Built and run by scripts/fuzz.sh (`make fuzz`), from the seeds in
// tests/fuzz/corpus/http1_request_fuzz/ (requests the end-to-end tests send, and the smuggling
// shapes of tests/e2e/http_framing.test.mjs).
//
// The first byte picks the size of the pieces the parser is given (as reads would split the
// bytes); the rest is the connection's bytes. Besides memory errors it checks that nothing the
// RFC 9112 rules refuse is accepted: an accepted request with a Transfer-Encoding is framed
// by chunked alone (exactly one coding, `chunked`) and has no Content-Length; an HTTP/1.1
// request has exactly one Host; and that the header and body stay within their limits.

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "http/framing.h"

// Boost's assertions, enabled in this target (tests/fuzz/CMakeLists.txt). Beast 1.74's chunk
// parser asserts `n >= 5` on re-entry after a final chunk, but when no CRLF is expected before
// it 3 bytes are valid (`0\r\n` given alone, then `\r`, then `\n`): the code after the assertion
// answers need_more correctly. Beast corrected the assertion in boostorg/beast#2861 (1.86); the
// agent's release build compiles assertions out, and the unit test
// FramingTest.FinalChunkGivenInPiecesIsRead checks that build reads such a body. Every other
// assertion aborts, as without a handler.
namespace boost {
void assertion_failed(char const* expr, char const* function, char const* file, long line) {
  const std::string_view f(file);
  if (std::string_view(expr) == "n >= 5" && f.ends_with("http/impl/basic_parser.ipp")) return;
  std::fprintf(stderr, "%s:%ld: %s: Assertion `%s' failed.\n", file, line, function, expr);
  std::abort();
}
void assertion_failed_msg(char const* expr, char const* msg, char const* function, char const* file,
                          long line) {
  std::fprintf(stderr, "%s:%ld: %s: Assertion `%s' failed: %s\n", file, line, function, expr, msg);
  std::abort();
}
}  // namespace boost

namespace {

namespace bhttp = boost::beast::http;
using infertel::http::FramingError;

constexpr std::size_t kHeaderLimit = 8 * 1024;  // the admin address's (ServerLimits)
constexpr std::size_t kBodyLimit = 64 * 1024;   // the admin address's PUT bodies

void Check(bool ok) {
  if (!ok) std::abort();
}

// An independent reading of the combined Transfer-Encoding: true only for exactly one
// coding, `chunked`, with empty list elements and whitespace around them ignored.
bool OnlyChunked(const infertel::http::RequestHeader& header) {
  std::string codings;
  for (const auto& f : header) {
    if (f.name() != bhttp::field::transfer_encoding) continue;
    codings += std::string(f.value()) + ",";
  }
  std::size_t count = 0;
  bool chunked = false;
  std::size_t start = 0;
  while (start < codings.size()) {
    const std::size_t end = codings.find(',', start);
    std::string_view element(codings.data() + start, end - start);
    while (!element.empty() && (element.front() == ' ' || element.front() == '\t'))
      element.remove_prefix(1);
    while (!element.empty() && (element.back() == ' ' || element.back() == '\t'))
      element.remove_suffix(1);
    if (!element.empty()) {
      ++count;
      chunked = boost::beast::iequals(element, "chunked");
    }
    start = end + 1;
  }
  return count == 1 && chunked;
}

std::size_t CountOf(const infertel::http::RequestHeader& header, bhttp::field name) {
  std::size_t n = 0;
  for (const auto& f : header) n += f.name() == name;
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t piece = 1 + data[0] % 64;
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);

  bhttp::request_parser<bhttp::string_body> parser;
  parser.header_limit(kHeaderLimit);
  parser.body_limit(kBodyLimit);
  parser.eager(true);
  std::string pending;  // bytes given but not yet consumed, as in a read buffer
  boost::system::error_code ec;
  bool checked = false;
  while (!rest.empty() && !parser.is_done()) {
    const std::size_t n = std::min(piece, rest.size());
    pending.append(rest.data(), n);
    rest.remove_prefix(n);
    for (;;) {
      const std::size_t used = parser.put(boost::asio::buffer(pending), ec);
      pending.erase(0, used);
      if (ec == bhttp::error::need_more) {
        ec = {};
        break;
      }
      if (ec) {
        // Whatever the parser refuses maps to a framing error or is a limit/the stream's end.
        (void)infertel::http::FramingErrorFromParse(ec);
        return 0;
      }
      if (parser.is_header_done() && !checked) {
        checked = true;
        const auto& header = parser.get().base();
        const FramingError e = infertel::http::CheckRequestFraming(header);
        if (e != FramingError::kNone) return 0;  // answered and closed: nothing more is read
        // Accepted: what the rules refuse is absent.
        const bool has_te = CountOf(header, bhttp::field::transfer_encoding) > 0;
        if (has_te) {
          Check(header.version() >= 11);
          Check(OnlyChunked(header));
          Check(parser.chunked());
          Check(CountOf(header, bhttp::field::content_length) == 0);
        }
        if (header.version() >= 11) Check(CountOf(header, bhttp::field::host) == 1);
        const infertel::http::HopByHop hop(header);
        for (const auto& f : header) (void)hop(f.name(), f.name_string());
      }
      if (parser.is_done() || pending.empty()) break;
    }
  }
  Check(parser.get().body().size() <= kBodyLimit);
  return 0;
}
