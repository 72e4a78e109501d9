// Cross-origin requests from browser apps (gateway/cors.hpp): which origins
// get the CORS headers, what a preflight answers, and the config's checks.
#include "gateway/cors.hpp"

#include <gtest/gtest.h>

#include <map>

#include "gateway/config_print.hpp"
#include "gateway/config_yaml.hpp"

namespace arbiter::test {
namespace {

CorsConfig config(std::vector<std::string> origins, bool credentials = false) {
  CorsConfig c;
  c.allowed_origins = std::move(origins);
  c.allow_credentials = credentials;
  return c;
}

std::map<std::string, std::string> as_map(const Cors::Headers& headers) {
  std::map<std::string, std::string> out;
  for (const auto& [name, value] : headers) {
    EXPECT_TRUE(out.emplace(name, value).second) << "twice: " << name;
  }
  return out;
}

TEST(Cors, OffAddsNothing) {
  const Cors cors(CorsConfig{});
  EXPECT_FALSE(cors.enabled());
  Cors::Headers headers;
  cors.add_answer_headers("https://chat.example.com", headers);
  EXPECT_TRUE(headers.empty());
}

TEST(Cors, AnAllowedOriginIsNamedBackAndCachesAreTold) {
  const Cors cors(config({"https://Chat.Example.com", "http://localhost:3000"}));
  Cors::Headers headers;
  cors.add_answer_headers("https://chat.example.com", headers);
  const auto h = as_map(headers);
  EXPECT_EQ(h.at("access-control-allow-origin"), "https://chat.example.com");
  EXPECT_EQ(h.at("vary"), "Origin");
  EXPECT_NE(h.at("access-control-expose-headers").find("x-request-id"), std::string::npos);
  EXPECT_NE(h.at("access-control-expose-headers").find("retry-after"), std::string::npos);
  EXPECT_FALSE(h.contains("access-control-allow-credentials"));
}

TEST(Cors, OtherOriginsAndRequestsWithoutAnOriginGetNothing) {
  const Cors cors(config({"https://chat.example.com"}));
  for (const char* origin :
       {"https://evil.example.com", "https://chat.example.com.evil.net", "http://chat.example.com",
        "https://chat.example.com:8443", "null", ""}) {
    Cors::Headers headers;
    cors.add_answer_headers(origin, headers);
    EXPECT_TRUE(headers.empty()) << origin;
    EXPECT_FALSE(cors.preflight(origin, "POST", "authorization", "POST").has_value()) << origin;
  }
}

TEST(Cors, AnyOriginIsAStarWithoutVary) {
  const Cors cors(config({"*"}));
  Cors::Headers headers;
  cors.add_answer_headers("https://anything.example", headers);
  const auto h = as_map(headers);
  EXPECT_EQ(h.at("access-control-allow-origin"), "*");
  EXPECT_FALSE(h.contains("vary"));
}

TEST(Cors, APreflightAllowsTheMethodAndTheHeadersAsked) {
  const Cors cors(config({"https://chat.example.com"}, true));
  const auto answer = cors.preflight(
      "https://chat.example.com", "POST",
      "authorization, content-type, x-stainless-os, x-stainless-retry-count", "POST");
  ASSERT_TRUE(answer);
  const auto h = as_map(*answer);
  EXPECT_EQ(h.at("access-control-allow-origin"), "https://chat.example.com");
  EXPECT_EQ(h.at("access-control-allow-methods"), "POST");
  EXPECT_EQ(h.at("access-control-allow-headers"),
            "authorization, content-type, x-stainless-os, x-stainless-retry-count");
  EXPECT_EQ(h.at("access-control-allow-credentials"), "true");
  EXPECT_EQ(h.at("access-control-max-age"), "600");
  EXPECT_EQ(h.at("vary"), "Origin");
}

TEST(Cors, APreflightWithoutAMethodOrWithOddHeaderNamesIsRefused) {
  const Cors cors(config({"https://chat.example.com"}));
  const auto no_method = cors.preflight("https://chat.example.com", "", "authorization", "POST");
  ASSERT_FALSE(no_method.has_value());
  EXPECT_NE(no_method.error().find("Access-Control-Request-Method"), std::string::npos);
  const auto odd =
      cors.preflight("https://chat.example.com", "POST", "authorization\r\nset-cookie: x", "POST");
  ASSERT_FALSE(odd.has_value());
  EXPECT_NE(odd.error().find("field names"), std::string::npos) << odd.error();
  EXPECT_FALSE(cors.preflight("https://chat.example.com", "POST", std::string(4096, 'a'), "POST")
                   .has_value());
  const auto stranger = cors.preflight("https://evil.example.com", "POST", "", "POST");
  ASSERT_FALSE(stranger.has_value());
  EXPECT_NE(stranger.error().find("'https://evil.example.com' is not in cors.allowed_origins"),
            std::string::npos);
  EXPECT_FALSE(cors.preflight("", "POST", "", "POST").has_value());
  const auto no_headers = cors.preflight("https://chat.example.com", "POST", "", "POST");
  ASSERT_TRUE(no_headers);
  EXPECT_FALSE(as_map(*no_headers).contains("access-control-allow-headers"));
}

std::string with_cors(const std::string& cors) {
  return "cors: " + cors + "\nmodels: [{name: m1, backends: [{url: \"http://127.0.0.1:8000\"}]}]\n";
}

TEST(CorsConfig, OriginsMustBeWhatBrowsersSend) {
  const auto ok = parse_config(
      with_cors("{allowed_origins: [\"https://chat.example.com\", \"http://localhost:3000\", "
                "\"HTTPS://Chat.Example.com:8443\", \"http://[::1]:3000\"], max_age_s: 60}"));
  ASSERT_TRUE(ok) << (ok ? "" : ok.error().front());
  EXPECT_EQ(ok->cors.allowed_origins.size(), 4u);
  EXPECT_EQ(ok->cors.max_age, std::chrono::seconds(60));
  // --print-config writes it back as it was read.
  const auto again = parse_config(config_to_yaml(*ok));
  ASSERT_TRUE(again) << config_to_yaml(*ok);
  EXPECT_EQ(again->cors.allowed_origins, ok->cors.allowed_origins);
  EXPECT_EQ(again->cors.max_age, ok->cors.max_age);
  for (const char* bad :
       {"chat.example.com", "https://chat.example.com/", "https://chat.example.com/app",
        "ftp://chat.example.com", "https://*.example.com", "https://", "https://chat.example.com?x",
        "https://chat.example.com#top", "https://:8443", "https://chat.example.com:abc"}) {
    const auto refused =
        parse_config(with_cors(std::string("{allowed_origins: [\"") + bad + "\"]}"));
    ASSERT_FALSE(refused) << bad;
    EXPECT_NE(refused.error().front().find("cors.allowed_origins[0]"), std::string::npos)
        << refused.error().front();
  }
}

// Forms a URL allows but no browser sends as an Origin: each would be a
// listed origin that never matches, so it is refused with the reason.
TEST(CorsConfig, OriginsNoBrowserSendsAreRefusedWithTheReason) {
  const std::pair<const char*, const char*> cases[] = {
      {"https://user@chat.example.com", "user part"},
      {"https://user:secret@chat.example.com", "user part"},
      {"https://chat.example.com:443", "write https://chat.example.com instead"},
      {"http://localhost:80", "write http://localhost instead"},
      {"https://chat.example.com:99999", "no valid port"},
      {"https://chat.example.com:0", "no valid port"},
  };
  for (const auto& [origin, reason] : cases) {
    const auto refused = parse_config(with_cors(std::string("{allowed_origins: [\"") + origin + "\"]}"));
    ASSERT_FALSE(refused) << origin;
    EXPECT_NE(refused.error().front().find("cors.allowed_origins[0]"), std::string::npos) << refused.error().front();
    EXPECT_NE(refused.error().front().find(reason), std::string::npos) << refused.error().front();
  }
  // A port that is not the scheme's default is part of the origin.
  EXPECT_TRUE(parse_config(with_cors("{allowed_origins: [\"http://chat.example.com:443\"]}")));
}

TEST(CorsConfig, AStarCannotGoWithCredentials) {
  const auto refused =
      parse_config(with_cors("{allowed_origins: [\"*\"], allow_credentials: true}"));
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().front().find("allow_credentials"), std::string::npos)
      << refused.error().front();
}

}  // namespace
}  // namespace arbiter::test
