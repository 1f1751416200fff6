#include "console/assets.h"

#include <gtest/gtest.h>

#include <regex>
#include <string>

namespace cairva::console {
namespace {

constexpr Audience audiences[] = {Audience::operators, Audience::buyers};

TEST(ConsoleAssets, EachListenerServesItsIndexAtRoot) {
  for (Audience a : audiences) {
    const Asset* index = find_asset(a, "/");
    ASSERT_NE(index, nullptr);
    EXPECT_EQ(index->content_type, "text/html; charset=utf-8");
    EXPECT_EQ(index->cache_control, "no-cache");
    EXPECT_EQ(find_asset(a, "/?from=link"), index) << "a query string does not change the file";
  }
  EXPECT_NE(find_asset(Audience::operators, "/")->body, find_asset(Audience::buyers, "/")->body);
}

// Every script, stylesheet and icon an index names is served, under an immutable name.
TEST(ConsoleAssets, IndexNamesOnlyServedImmutableAssets) {
  const std::regex ref(R"re((?:src|href)="([^"]+)")re");
  for (Audience a : audiences) {
    const std::string html(find_asset(a, "/")->body);
    int refs = 0;
    for (auto it = std::sregex_iterator(html.begin(), html.end(), ref);
         it != std::sregex_iterator(); ++it) {
      const std::string url = (*it)[1];
      if (url.starts_with("#")) continue;  // a page of the console itself
      const Asset* asset = find_asset(a, url);
      ASSERT_NE(asset, nullptr) << url;
      EXPECT_TRUE(url.starts_with("/console/")) << url;
      EXPECT_EQ(asset->cache_control, "public, max-age=31536000, immutable") << url;
      ++refs;
    }
    EXPECT_GE(refs, 3) << "a script, a stylesheet and an icon";
  }
}

// The CSP allows no inline script or style: the index must carry none.
TEST(ConsoleAssets, IndexHasNoInlineScriptOrStyle) {
  for (Audience a : audiences) {
    const std::string html(find_asset(a, "/")->body);
    EXPECT_FALSE(std::regex_search(html, std::regex(R"(<script(?![^>]*\bsrc=))")))
        << "inline script";
    EXPECT_EQ(html.find("<style"), std::string::npos);
    EXPECT_EQ(html.find("style="), std::string::npos);
    EXPECT_EQ(html.find("http://"), std::string::npos) << "nothing from elsewhere";
    EXPECT_EQ(html.find("https://"), std::string::npos) << "nothing from elsewhere";
  }
}

TEST(ConsoleAssets, UnknownFilesAreNotFound) {
  for (Audience a : audiences) {
    EXPECT_EQ(find_asset(a, "/console/nope.js"), nullptr);
    EXPECT_EQ(find_asset(a, "/console/"), nullptr);
    EXPECT_EQ(find_asset(a, "/index.html"), nullptr);
    EXPECT_EQ(find_asset(a, "/console/../admin/index.html"), nullptr);
  }
  // The operators' script is not served to buyers.
  for (const Asset& asset : assets(Audience::operators)) {
    if (asset.content_type.starts_with("text/javascript")) {
      EXPECT_EQ(find_asset(Audience::buyers, asset.path), nullptr);
    }
  }
}

TEST(ConsoleAssets, ConsolePathsAreRootAndUnderConsole) {
  EXPECT_TRUE(is_console_path("/"));
  EXPECT_TRUE(is_console_path("/?x=1"));
  EXPECT_TRUE(is_console_path("/console/app.js"));
  EXPECT_TRUE(is_console_path("/console/nope"));
  EXPECT_FALSE(is_console_path("/console"));
  EXPECT_FALSE(is_console_path("/v1/chat/completions"));
  EXPECT_FALSE(is_console_path("/admin/v1/allocations"));
  EXPECT_FALSE(is_console_path("/healthz"));
  EXPECT_FALSE(is_console_path("/metrics"));
}

TEST(ConsoleAssets, PolicyForbidsInlineCodeAndFraming) {
  EXPECT_EQ(content_security_policy.find("unsafe"), std::string_view::npos);
  EXPECT_NE(content_security_policy.find("frame-ancestors 'none'"), std::string_view::npos);
  EXPECT_NE(content_security_policy.find("script-src 'self'"), std::string_view::npos);
}

}  // namespace
}  // namespace cairva::console
