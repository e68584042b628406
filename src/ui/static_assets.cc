#include "ui/static_assets.h"

#include <optional>
#include <string>

namespace infertel::ui {
namespace {

namespace bhttp = boost::beast::http;

// The pages app.js draws; each is index.html, the same shell.
bool IsPage(std::string_view path) {
  if (path == "/ui/" || path == "/ui/traces" || path == "/ui/config") return true;
  constexpr std::string_view kTrace = "/ui/trace/";
  return path.starts_with(kTrace) && path.size() > kTrace.size() &&
         path.find('/', kTrace.size()) == std::string_view::npos;
}

std::optional<EmbeddedFile> Find(std::string_view name) {
  for (const EmbeddedFile& f : EmbeddedFiles())
    if (f.name == name) return f;
  return std::nullopt;
}

http::StringResponse WithHeaders(http::StringResponse res) {
  res.set("Content-Security-Policy", kContentSecurityPolicy);
  res.set("X-Content-Type-Options", "nosniff");
  res.set("Referrer-Policy", "no-referrer");
  // The files have no version in their names: the browser asks again after an upgrade.
  res.set(bhttp::field::cache_control, "no-cache");
  return res;
}

http::StringResponse Answer(unsigned status, std::string_view body, std::string_view type) {
  return WithHeaders(http::MakeResponse(status, std::string(body), type));
}

// The answer for a GET of `path` (the target without its query).
http::StringResponse Get(std::string_view path) {
  if (path == kUiPrefix) {
    auto res = Answer(301, "moved to /ui/\n", "text/plain; charset=utf-8");
    res.set(bhttp::field::location, "/ui/");
    return res;
  }
  if (IsPage(path)) {
    if (auto f = Find("index.html")) return Answer(200, f->bytes, ContentTypeOf(f->name));
  }
  constexpr std::string_view kAssets = "/ui/assets/";
  if (path.starts_with(kAssets)) {
    if (auto f = Find(path.substr(kAssets.size())))
      return Answer(200, f->bytes, ContentTypeOf(f->name));
  }
  return Answer(404, "no such page\n", "text/plain; charset=utf-8");
}

}  // namespace

std::string_view ContentTypeOf(std::string_view name) {
  if (name.ends_with(".html")) return "text/html; charset=utf-8";
  if (name.ends_with(".js")) return "text/javascript; charset=utf-8";
  if (name.ends_with(".css")) return "text/css; charset=utf-8";
  if (name.ends_with(".svg")) return "image/svg+xml";
  if (name.ends_with(".png")) return "image/png";
  return "application/octet-stream";
}

http::StringResponse ServeUi(const http::StringRequest& req) {
  if (req.method() != bhttp::verb::get && req.method() != bhttp::verb::head) {
    auto res = Answer(405, "only GET and HEAD\n", "text/plain; charset=utf-8");
    res.set(bhttp::field::allow, "GET, HEAD");
    return res;
  }
  std::string_view target = req.target();
  const auto path = target.substr(0, target.find('?'));
  auto res = Get(path);
  // HEAD: the same header, no body (the server then says Content-Length: 0).
  if (req.method() == bhttp::verb::head) res.body().clear();
  return res;
}

}  // namespace infertel::ui
