#include "ui/static_assets.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace infertel::ui {
namespace {

namespace bhttp = boost::beast::http;

http::StringResponse Serve(std::string target, bhttp::verb method = bhttp::verb::get) {
  http::StringRequest req{method, target, 11};
  return ServeUi(req);
}

std::string Header(const http::StringResponse& res, std::string_view name) {
  auto it = res.find(name);
  return it == res.end() ? "" : std::string(it->value());
}

const EmbeddedFile* File(std::string_view name) {
  for (const EmbeddedFile& f : EmbeddedFiles())
    if (f.name == name) return &f;
  return nullptr;
}

TEST(UiStaticAssets, EmbedsThePagesFiles) {
  for (const char* name : {"index.html", "app.js", "style.css"}) {
    const EmbeddedFile* f = File(name);
    ASSERT_NE(f, nullptr) << name;
    EXPECT_GT(f->bytes.size(), 100u) << name;
  }
  // The shell loads its script and style from the assets, never inline.
  const std::string_view html = File("index.html")->bytes;
  EXPECT_NE(html.find("src=\"/ui/assets/app.js\""), std::string_view::npos);
  EXPECT_NE(html.find("href=\"/ui/assets/style.css\""), std::string_view::npos);
  EXPECT_EQ(html.find("<script>"), std::string_view::npos);
  EXPECT_EQ(html.find("style=\""), std::string_view::npos);
}

TEST(UiStaticAssets, EveryPageIsTheShellAndEveryAssetIsServed) {
  const std::string shell(File("index.html")->bytes);
  for (const char* page : {"/ui/", "/ui/traces", "/ui/traces?model=m&q=x", "/ui/config",
                           "/ui/trace/0123456789abcdef0123456789abcdef"}) {
    auto res = Serve(page);
    EXPECT_EQ(res.result_int(), 200u) << page;
    EXPECT_EQ(res.body(), shell) << page;
    EXPECT_EQ(Header(res, "Content-Type"), "text/html; charset=utf-8") << page;
  }
  std::set<std::string> types;
  for (const EmbeddedFile& f : EmbeddedFiles()) {
    auto res = Serve("/ui/assets/" + std::string(f.name));
    EXPECT_EQ(res.result_int(), 200u) << f.name;
    EXPECT_EQ(res.body(), f.bytes) << f.name;
    types.insert(Header(res, "Content-Type"));
  }
  EXPECT_TRUE(types.contains("text/javascript; charset=utf-8"));
  EXPECT_TRUE(types.contains("text/css; charset=utf-8"));
}

TEST(UiStaticAssets, RedirectsTheBareUiAndRefusesTheRest) {
  auto res = Serve("/ui");
  EXPECT_EQ(res.result_int(), 301u);
  EXPECT_EQ(Header(res, "Location"), "/ui/");
  for (const char* missing : {"/ui/nothing", "/ui/assets/", "/ui/assets/none.js", "/ui/trace/",
                              "/ui/trace/a/b", "/ui/assets/../index.html", "/uix", "/ui/tracesx"})
    EXPECT_EQ(Serve(missing).result_int(), 404u) << missing;
  for (auto verb : {bhttp::verb::post, bhttp::verb::put, bhttp::verb::delete_}) {
    auto r = Serve("/ui/", verb);
    EXPECT_EQ(r.result_int(), 405u);
    EXPECT_EQ(Header(r, "Allow"), "GET, HEAD");
  }
  auto head = Serve("/ui/assets/app.js", bhttp::verb::head);
  EXPECT_EQ(head.result_int(), 200u);
  EXPECT_TRUE(head.body().empty());
}

TEST(UiStaticAssets, EveryAnswerCarriesTheSecurityHeaders) {
  for (const char* target : {"/ui", "/ui/", "/ui/assets/app.js", "/ui/nothing"}) {
    for (auto verb : {bhttp::verb::get, bhttp::verb::post}) {
      auto res = Serve(target, verb);
      EXPECT_EQ(Header(res, "Content-Security-Policy"), kContentSecurityPolicy) << target;
      EXPECT_EQ(Header(res, "X-Content-Type-Options"), "nosniff") << target;
      EXPECT_EQ(Header(res, "Referrer-Policy"), "no-referrer") << target;
      EXPECT_FALSE(Header(res, "Cache-Control").empty()) << target;
    }
  }
  EXPECT_NE(std::string(kContentSecurityPolicy).find("script-src 'self';"), std::string::npos);
}

}  // namespace
}  // namespace infertel::ui
