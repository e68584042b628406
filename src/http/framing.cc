#include "http/framing.h"

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>

#include <fmt/format.h>

#include "core/stats.h"

namespace infertel::http {
namespace bhttp = boost::beast::http;
using boost::beast::iequals;

namespace {

struct FramingRow {
  std::string_view reason;
  unsigned status;
  std::string_view message;
};

// Indexed by FramingError.
constexpr std::array<FramingRow, kFramingErrorCount> kRows{{
    {"", 200, ""},
    {"bad_transfer_encoding", 400, "Transfer-Encoding must end with a single chunked coding"},
    {"unsupported_transfer_coding", 501, "only the chunked transfer coding is supported"},
    {"transfer_encoding_with_content_length", 400,
     "Transfer-Encoding and Content-Length in one request"},
    {"transfer_encoding_in_http10", 400, "Transfer-Encoding in an HTTP/1.0 request"},
    {"bad_content_length", 400, "invalid Content-Length, or several that differ"},
    {"missing_host", 400, "HTTP/1.1 request without Host"},
    {"duplicate_host", 400, "more than one Host header"},
    {"malformed", 400, "malformed request line or header field"},
}};

constexpr bool IsOws(char c) { return c == ' ' || c == '\t'; }

std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && IsOws(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsOws(s.back())) s.remove_suffix(1);
  return s;
}

// Calls `f(element)` for each non-empty element of a comma-separated field value (RFC 9110
// §5.6.1: empty elements are ignored), trimmed of surrounding whitespace.
// The fields named `name`, in order: Beast gives a pair of iterators, not a range.
template <typename F>
void ForEachField(const RequestHeader& header, bhttp::field name, F&& f) {
  const auto [first, last] = header.equal_range(name);
  for (auto it = first; it != last; ++it) f(it->value());
}

template <typename F>
void ForEachElement(std::string_view value, F&& f) {
  while (!value.empty()) {
    const std::size_t comma = value.find(',');
    const std::string_view element = TrimOws(value.substr(0, comma));
    if (!element.empty()) f(element);
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
}

// Transfer-Encoding over all its fields, in order: chunked exactly once and last, else a
// framing error.
FramingError CheckTransferEncoding(const RequestHeader& header) {
  std::size_t codings = 0, chunked = 0;
  bool last_is_chunked = false;
  ForEachField(header, bhttp::field::transfer_encoding, [&](std::string_view value) {
    ForEachElement(value, [&](std::string_view coding) {
      ++codings;
      // A coding with parameters ("chunked;x=1") is not the chunked coding.
      last_is_chunked = iequals(coding, "chunked");
      if (last_is_chunked) ++chunked;
    });
  });
  if (codings == 0 || !last_is_chunked || chunked > 1) return FramingError::kBadTransferEncoding;
  if (codings > 1) return FramingError::kUnsupportedTransferCoding;
  return FramingError::kNone;
}

}  // namespace

std::string_view FramingReason(FramingError error) {
  return kRows[static_cast<std::size_t>(error)].reason;
}

unsigned FramingStatus(FramingError error) { return kRows[static_cast<std::size_t>(error)].status; }

std::string_view FramingMessage(FramingError error) {
  return kRows[static_cast<std::size_t>(error)].message;
}

FramingError CheckRequestFraming(const RequestHeader& header) {
  const bool has_te = header.find(bhttp::field::transfer_encoding) != header.end();
  if (has_te) {
    if (header.version() < 11) return FramingError::kTransferEncodingInHttp10;
    if (header.find(bhttp::field::content_length) != header.end())
      return FramingError::kTransferEncodingWithContentLength;
    if (const FramingError e = CheckTransferEncoding(header); e != FramingError::kNone) return e;
  }
  const auto hosts = header.equal_range(bhttp::field::host);
  const auto host_count = std::distance(hosts.first, hosts.second);
  if (host_count > 1) return FramingError::kDuplicateHost;
  if (host_count == 0 && header.version() >= 11) return FramingError::kMissingHost;
  return FramingError::kNone;
}

FramingError FramingErrorFromParse(const boost::system::error_code& ec) {
  if (ec.category() != bhttp::make_error_code(bhttp::error::bad_method).category())
    return FramingError::kNone;
  switch (static_cast<bhttp::error>(ec.value())) {
    case bhttp::error::bad_content_length:
      return FramingError::kBadContentLength;
    case bhttp::error::bad_transfer_encoding:
      return FramingError::kBadTransferEncoding;
    case bhttp::error::bad_line_ending:
    case bhttp::error::bad_method:
    case bhttp::error::bad_target:
    case bhttp::error::bad_version:
    case bhttp::error::bad_status:
    case bhttp::error::bad_reason:
    case bhttp::error::bad_field:
    case bhttp::error::bad_value:
    case bhttp::error::bad_chunk:
    case bhttp::error::bad_chunk_extension:
    case bhttp::error::bad_obs_fold:
      return FramingError::kMalformed;
    default:
      return FramingError::kNone;
  }
}

HopByHop::HopByHop(const RequestHeader& header) {
  ForEachField(header, bhttp::field::connection, [this](std::string_view value) {
    ForEachElement(value, [this](std::string_view name) { named_.push_back(name); });
  });
}

bool IsFixedHopByHop(bhttp::field field, std::string_view name) {
  switch (field) {
    case bhttp::field::connection:
    case bhttp::field::keep_alive:
    case bhttp::field::proxy_authenticate:
    case bhttp::field::proxy_authorization:
    case bhttp::field::proxy_connection:
    case bhttp::field::te:
    case bhttp::field::trailer:
    case bhttp::field::transfer_encoding:
    case bhttp::field::upgrade:
      return true;
    default:
      return iequals(name, "keep-alive");
  }
}

bool HopByHop::operator()(bhttp::field field, std::string_view name) const {
  if (IsFixedHopByHop(field, name)) return true;
  for (std::string_view named : named_)
    if (iequals(name, named)) return true;
  return false;
}

void FramingStats::Register(StatsRegistry* registry, std::string_view family, std::string_view help,
                            std::string_view labels) const {
  for (std::size_t i = 1; i < kFramingErrorCount; ++i) {
    registry->Add(
        std::string(family), std::string(help), StatsRegistry::Type::kCounter,
        fmt::format(R"({}{}reason="{}")", labels, labels.empty() ? "" : ",", kRows[i].reason),
        &refused[i]);
  }
}

}  // namespace infertel::http
