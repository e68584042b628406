#pragma once
// The web UI's pages, embedded in the binary at build time from src/ui/assets
// (cmake/embed_assets.cmake): no file is read at run time, nothing is fetched from elsewhere.
//
//   GET /ui                      301 to /ui/
//   GET /ui/, /ui/traces, /ui/trace/{id}, /ui/config
//                                index.html: one shell, app.js draws the page the path names
//   GET /ui/assets/NAME          the file, with its Content-Type
//   anything else under /ui      404; a method other than GET or HEAD: 405
//
// Every answer carries a Content-Security-Policy that allows only the page's own script, style
// and connections (no inline script: the pages show text written by strangers), nosniff, no
// referrer and a Cache-Control. The pages hold no data, so they are served without the admin
// token; the JSON API they call (/api/v1, /api/config) asks for it.
//
// Thread-safety: ServeUi only reads constant data; call it from any thread.

#include <span>
#include <string_view>

#include "http/simple_server.h"

namespace infertel::ui {

inline constexpr std::string_view kUiPrefix = "/ui";
inline constexpr std::string_view kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

// One embedded file: its name in src/ui/assets and its bytes.
struct EmbeddedFile {
  std::string_view name;
  std::string_view bytes;
};

// Every file of src/ui/assets (defined in the generated embedded_assets.cc).
std::span<const EmbeddedFile> EmbeddedFiles();

// The Content-Type for a file name, from its extension.
std::string_view ContentTypeOf(std::string_view name);

// Answers a request whose target starts with kUiPrefix, as above.
http::StringResponse ServeUi(const http::StringRequest& req);

}  // namespace infertel::ui
