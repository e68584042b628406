#pragma once
// The framing rules of HTTP/1.1 requests (RFC 9112 §3.2, §6.1, §6.3) that Beast's parser leaves
// to its user, applied by every HTTP/1 server of the agent (the gateway, the OTLP/HTTP receiver,
// the admin address) once a request's header has been read and before its body is.
//
// Beast refuses a Content-Length that is not a number, several that differ, and a
// Transfer-Encoding after a Content-Length or twice `chunked`. It accepts a Transfer-Encoding
// whose last coding is not `chunked` and then reads the request as having no body: the body
// becomes the next request on the connection (request smuggling). It does not look at Host.
// A request refused here is answered and its connection closed: its framing cannot be trusted,
// so neither can anything after it on the connection.

#include <boost/beast/http/field.hpp>
#include <boost/beast/http/fields.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/system/error_code.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace infertel {
class StatsRegistry;
}

namespace infertel::http {

enum class FramingError : std::uint8_t {
  kNone,
  // Transfer-Encoding whose last coding is not `chunked` (`gzip`, `identity`,
  // `chunked, identity`, `xchunked`…), or with `chunked` twice: 400 (RFC 9112 §6.3 item 4).
  kBadTransferEncoding,
  // `chunked` last but another coding before it (`gzip, chunked`): 501 (RFC 9112 §6.1), since
  // no server of the agent decodes transfer codings other than chunked.
  kUnsupportedTransferCoding,
  // Transfer-Encoding and Content-Length together: 400 (RFC 9112 §6.1 lets a server refuse it,
  // §6.3 item 3 calls it a likely smuggling attempt to be handled as an error).
  kTransferEncodingWithContentLength,
  // Transfer-Encoding in an HTTP/1.0 request: its framing is faulty (RFC 9112 §6.1).
  kTransferEncodingInHttp10,
  // A Content-Length that is not a number, or several values that differ (RFC 9112 §6.3
  // item 5), as Beast's parser reports it.
  kBadContentLength,
  // An HTTP/1.1 request without Host, or with more than one (RFC 9112 §3.2).
  kMissingHost,
  kDuplicateHost,
  // Any other malformed request line or field that the parser refused.
  kMalformed,
};
inline constexpr std::size_t kFramingErrorCount = 9;  // kNone included

// The `reason` label of a refusal ("bad_transfer_encoding"…); empty for kNone.
std::string_view FramingReason(FramingError error);
// The status the sender gets: 400, or 501 for kUnsupportedTransferCoding.
unsigned FramingStatus(FramingError error);
// A short sentence for the answer's body.
std::string_view FramingMessage(FramingError error);

using RequestHeader = boost::beast::http::request_header<boost::beast::http::fields>;

// The rules above, for a header Beast's parser accepted. Allocates nothing.
FramingError CheckRequestFraming(const RequestHeader& header);

// The framing error behind a parse failure of Beast's request parser, or kNone when `ec` is
// not about the request's syntax (end of stream, timeouts, cancellation, body and header
// limits, which each server answers itself).
FramingError FramingErrorFromParse(const boost::system::error_code& ec);

// Whether a field is in the fixed hop-by-hop list of RFC 9110 §7.6.1 (Connection, Keep-Alive,
// Proxy-*, TE, Trailer, Transfer-Encoding, Upgrade), on a request or a response.
bool IsFixedHopByHop(boost::beast::http::field field, std::string_view name);

// Whether a request field is hop-by-hop (RFC 9110 §7.6.1): the fixed list (Connection,
// Keep-Alive, Proxy-*, TE, Trailer, Transfer-Encoding, Upgrade) and every field that the
// request's Connection header names. A proxy does not forward them.
class HopByHop {
 public:
  explicit HopByHop(const RequestHeader& header);
  bool operator()(boost::beast::http::field field, std::string_view name) const;

 private:
  std::vector<std::string_view> named_;  // points into the header's Connection values
};

// Requests refused by framing, by reason; one per server.
struct FramingStats {
  std::array<std::atomic<std::uint64_t>, kFramingErrorCount> refused{};
  void Count(FramingError error) {
    refused[static_cast<std::size_t>(error)].fetch_add(1, std::memory_order_relaxed);
  }
  std::uint64_t Get(FramingError error) const {
    return refused[static_cast<std::size_t>(error)].load(std::memory_order_relaxed);
  }
  // `family`{`labels`,reason="…"} for each reason. `this` must outlive the registry's use.
  void Register(StatsRegistry* registry, std::string_view family, std::string_view help,
                std::string_view labels = {}) const;
};

}  // namespace infertel::http
