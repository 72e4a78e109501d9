// An engine's error answer as the client gets it (issue 40): OpenAI error
// objects as they are, every other shape wrapped (vLLM's flat one lifted),
// the type by status, the message bounded, valid UTF-8 and escaped.
#include "core/upstream_error.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>

#include "core/error.hpp"

namespace arbiter {
namespace {

// The error object of a wrapped body; fails the test unless the body is
// exactly {"error":{message, type, param, code}} with a string message and type.
boost::json::object error_of(const std::optional<std::string>& body) {
  if (!body) {
    ADD_FAILURE() << "passed through, not wrapped";
    return {};
  }
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(*body, ec);
  if (ec || !v.is_object() || v.as_object().size() != 1 || !v.as_object().contains("error")) {
    ADD_FAILURE() << "not an OpenAI error body: " << *body;
    return {};
  }
  const boost::json::object error = v.as_object().at("error").as_object();
  EXPECT_EQ(error.size(), 4u) << *body;
  EXPECT_TRUE(error.contains("message") && error.at("message").is_string()) << *body;
  EXPECT_TRUE(error.contains("type") && error.at("type").is_string()) << *body;
  EXPECT_TRUE(error.contains("param")) << *body;
  EXPECT_TRUE(error.contains("code")) << *body;
  return error;
}

std::string message_of(const std::optional<std::string>& body) {
  const auto error = error_of(body);
  const auto* message = error.if_contains("message");
  return message && message->is_string() ? std::string(message->get_string()) : "";
}

TEST(UpstreamError, AnOpenAiErrorObjectIsNotTouched) {
  for (
      const char* body : {
          R"({"error":{"message":"busy","type":"server_error","param":null,"code":null}})",
          // vLLM's newer shape: an integer code.
          R"({"error":{"message":"This model's maximum context length is 4096 tokens.","type":"BadRequestError","param":null,"code":400}})",
          // llama.cpp's, with members in its own order and none missing that matter.
          R"( {"error":{"code":503,"message":"Loading model","type":"unavailable_error"}} )",
      }) {
    EXPECT_TRUE(is_openai_error(body)) << body;
    EXPECT_EQ(openai_error_body(503, body), std::nullopt) << body;
  }
}

TEST(UpstreamError, WhatIsNotAnOpenAiErrorObject) {
  for (const char* body : {"", "   ", "Not Found", "<html><body>502</body></html>", "[]", "null",
                           R"({"error":"model not loaded"})", R"({"error":{"msg":"x"}})",
                           R"({"error":{"message":42}})", R"({"error":{"message":"x"})",
                           R"({"message":"x"})", R"({"detail":"Not Found"})", R"("error")"}) {
    EXPECT_FALSE(is_openai_error(body)) << body;
    EXPECT_NE(openai_error_body(404, body), std::nullopt) << body;
  }
}

TEST(UpstreamError, AnEmptyBodySaysSo) {
  const auto error = error_of(openai_error_body(404, ""));
  EXPECT_EQ(error.at("message"), "the backend answered HTTP 404 with an empty body");
  EXPECT_EQ(error.at("type"), "invalid_request_error");
  EXPECT_TRUE(error.at("param").is_null());
  EXPECT_EQ(error.at("code"), "upstream_error");
  EXPECT_EQ(message_of(openai_error_body(502, " \r\n")),
            "the backend answered HTTP 502 with an empty body");
}

TEST(UpstreamError, TheTypeFollowsTheStatusAsTheGatewaysOwnErrorsDo) {
  EXPECT_EQ(upstream_error_type(400), map_error(ErrorCode::kInvalidRequest).type);
  EXPECT_EQ(upstream_error_type(401), map_error(ErrorCode::kUnauthorized).type);
  EXPECT_EQ(upstream_error_type(403), map_error(ErrorCode::kForbidden).type);
  EXPECT_EQ(upstream_error_type(404), map_error(ErrorCode::kModelNotFound).type);
  EXPECT_EQ(upstream_error_type(409), map_error(ErrorCode::kSuperseded).type);
  EXPECT_EQ(upstream_error_type(413), map_error(ErrorCode::kPayloadTooLarge).type);
  EXPECT_EQ(upstream_error_type(429), map_error(ErrorCode::kRateLimited).type);
  EXPECT_EQ(upstream_error_type(500), map_error(ErrorCode::kInternal).type);
  EXPECT_EQ(upstream_error_type(503), map_error(ErrorCode::kNoBackend).type);
  EXPECT_EQ(upstream_error_type(422), "invalid_request_error");
  EXPECT_EQ(upstream_error_type(418), "invalid_request_error");
  EXPECT_EQ(upstream_error_type(599), "server_error");
  EXPECT_EQ(upstream_error_type(302), "server_error");  // an engine's redirect is no client error
}

TEST(UpstreamError, TextAndHtmlBecomeTheMessage) {
  const auto text = error_of(openai_error_body(500, "Internal Server Error\n"));
  EXPECT_EQ(text.at("message"), "Internal Server Error");
  EXPECT_EQ(text.at("type"), "server_error");
  const std::string html =
      "<html><head><title>503 Service Unavailable</title></head>\n<body>\"down\"</body></html>";
  EXPECT_EQ(message_of(openai_error_body(503, html)), html);
  // JSON of another shape: its text, whole.
  EXPECT_EQ(message_of(openai_error_body(400, R"({"errors":[1,2]})")), R"({"errors":[1,2]})");
  EXPECT_EQ(message_of(openai_error_body(422, R"({"detail":[{"loc":["body"]}]})")),
            R"({"detail":[{"loc":["body"]}]})");
}

TEST(UpstreamError, VllmsFlatShapeIsLiftedWithItsOwnFields) {
  const auto error = error_of(openai_error_body(
      400,
      R"({"object":"error","message":"This model's maximum context length is 4096 tokens.","type":"BadRequestError","param":"messages","code":400})"));
  EXPECT_EQ(error.at("message"), "This model's maximum context length is 4096 tokens.");
  EXPECT_EQ(error.at("type"), "BadRequestError");
  EXPECT_EQ(error.at("param"), "messages");
  EXPECT_EQ(error.at("code"), 400);
  // Fields missing or of another kind: the status's.
  const auto bare = error_of(
      openai_error_body(429, R"({"object":"error","message":"slow down","type":null,"code":[1]})"));
  EXPECT_EQ(bare.at("message"), "slow down");
  EXPECT_EQ(bare.at("type"), "rate_limit_error");
  EXPECT_TRUE(bare.at("param").is_null());
  EXPECT_EQ(bare.at("code"), "upstream_error");
  EXPECT_EQ(error_of(openai_error_body(404, R"({"message":"","code":"x"})")).at("message"),
            "the backend answered HTTP 404 with an empty message");
}

TEST(UpstreamError, AStringErrorOrDetailIsTheMessage) {
  // TGI's shape, FastAPI's own 404.
  EXPECT_EQ(message_of(openai_error_body(
                503, R"({"error":"Model is overloaded","error_type":"overloaded"})")),
            "Model is overloaded");
  EXPECT_EQ(message_of(openai_error_body(404, R"({"detail":"Not Found"})")), "Not Found");
}

TEST(UpstreamError, TheMessageIsBounded) {
  const std::string long_text(100'000, 'x');
  const std::string message = message_of(openai_error_body(500, long_text));
  EXPECT_EQ(message, std::string(kUpstreamErrorMessageBytes, 'x') + "...");
  // So is a flat shape's, and the fields lifted with it.
  const std::string flat =
      R"({"object":"error","message":")" + long_text + R"(","type":")" + long_text + R"("})";
  const auto error = error_of(openai_error_body(400, flat));
  EXPECT_EQ(error.at("message").as_string().size(), kUpstreamErrorMessageBytes + 3);
  EXPECT_LE(error.at("type").as_string().size(), 131u);
  // Exactly the bound: nothing cut.
  EXPECT_EQ(bounded_message(std::string(kUpstreamErrorMessageBytes, 'y')),
            std::string(kUpstreamErrorMessageBytes, 'y'));
  EXPECT_EQ(bounded_message("abcdef", 4), "abcd...");
}

TEST(UpstreamError, TheMessageIsValidUtf8CutAtACharacter) {
  // "é" is 2 bytes: a bound of 3 keeps one, not one and a half.
  EXPECT_EQ(bounded_message("\xC3\xA9\xC3\xA9", 3), "\xC3\xA9...");
  // Invalid bytes (a lone continuation, an overlong form, a surrogate, a
  // truncated sequence, 0xFF) become U+FFFD; valid 3- and 4-byte ones stay.
  EXPECT_EQ(bounded_message("a\x80"
                            "b\xC0\xAF"
                            "c\xED\xA0\x80"
                            "d\xE2\x82"
                            "e\xFF"
                            "\xE2\x82\xAC\xF0\x9F\x98\x80"),
            "a\xEF\xBF\xBD"
            "b\xEF\xBF\xBD\xEF\xBF\xBD"
            "c\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"
            "d\xEF\xBF\xBD\xEF\xBF\xBD"
            "e\xEF\xBF\xBD"
            "\xE2\x82\xAC\xF0\x9F\x98\x80");
  // An engine's body with bytes that are not UTF-8 still makes valid JSON.
  const auto body = openai_error_body(500, "bad \xFF\xFE bytes \"quoted\"\n\t\x01 tail");
  ASSERT_TRUE(body);
  boost::system::error_code ec;
  const auto v = boost::json::parse(*body, ec);  // Boost.JSON rejects invalid UTF-8
  ASSERT_FALSE(ec) << *body;
  EXPECT_EQ(v.at("error").at("message"),
            "bad \xEF\xBF\xBD\xEF\xBF\xBD bytes \"quoted\"\n\t\x01 tail");
}

}  // namespace
}  // namespace arbiter
