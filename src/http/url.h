#pragma once
// Minimal URL and address parsing for the addresses infertel is given on its command line.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace infertel::http {

struct Url {
  std::string scheme = "http";  // http | https (https is refused where TLS is unsupported)
  std::string host;
  std::uint16_t port = 80;
  std::string path = "/";  // path and query, always starting with '/'

  std::string HostPort() const;  // host:port, with [] around an IPv6 host
  std::string ToString() const;
};

// Parses "http://host:port/path", "host:port" and "host:port/path"; nullopt when malformed.
std::optional<Url> ParseUrl(std::string_view text);

// A listen address "HOST:PORT" (port 0 = any free port); nullopt when malformed.
struct HostPort {
  std::string host;
  std::uint16_t port = 0;
};
std::optional<HostPort> ParseHostPort(std::string_view text);

bool IsLoopbackHost(std::string_view host);

}  // namespace infertel::http
