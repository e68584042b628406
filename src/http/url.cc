#include "http/url.h"

#include <charconv>

namespace infertel::http {
namespace {

bool ParsePort(std::string_view s, std::uint16_t* out) {
  unsigned v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v > 65535) return false;
  *out = static_cast<std::uint16_t>(v);
  return true;
}

// Splits "host:port" or "[v6]:port"; `default_port` when no port is given (or 0 = required).
bool SplitHostPort(std::string_view hp, std::string* host, std::uint16_t* port, int default_port) {
  std::string_view h, p;
  if (!hp.empty() && hp.front() == '[') {
    auto close = hp.find(']');
    if (close == std::string_view::npos) return false;
    h = hp.substr(1, close - 1);
    std::string_view rest = hp.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return false;
      p = rest.substr(1);
    }
  } else {
    auto colon = hp.rfind(':');
    if (colon == std::string_view::npos) {
      h = hp;
    } else {
      h = hp.substr(0, colon);
      p = hp.substr(colon + 1);
    }
  }
  if (h.empty()) return false;
  *host = std::string(h);
  if (p.empty()) {
    if (default_port < 0) return false;
    *port = static_cast<std::uint16_t>(default_port);
    return true;
  }
  return ParsePort(p, port);
}

}  // namespace

std::string Url::HostPort() const {
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return h + ":" + std::to_string(port);
}

std::string Url::ToString() const { return scheme + "://" + HostPort() + path; }

std::optional<Url> ParseUrl(std::string_view text) {
  Url url;
  std::string_view rest = text;
  if (auto pos = rest.find("://"); pos != std::string_view::npos) {
    url.scheme = std::string(rest.substr(0, pos));
    rest.remove_prefix(pos + 3);
    if (url.scheme != "http" && url.scheme != "https") return std::nullopt;
  }
  auto slash = rest.find('/');
  std::string_view hp = rest.substr(0, slash);
  url.path = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  if (!SplitHostPort(hp, &url.host, &url.port, url.scheme == "https" ? 443 : 80))
    return std::nullopt;
  return url;
}

std::optional<HostPort> ParseHostPort(std::string_view text) {
  HostPort hp;
  if (!SplitHostPort(text, &hp.host, &hp.port, -1)) return std::nullopt;
  return hp;
}

bool IsLoopbackHost(std::string_view host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

}  // namespace infertel::http
