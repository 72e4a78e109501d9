// An engine's error answer reaches the client as an OpenAI error object
// (issue 40, defect 9): an empty 404, a text/plain 500, an HTML 503, vLLM's
// flat error object, each with the engine's status kept and its text as the
// message, streamed request or not, sent at once or held for a retry that
// never came; an engine's proper OpenAI error passes through byte for byte.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "core/upstream_error.hpp"
#include "support/harness.hpp"
#include "support/http_client.hpp"
#include "support/requests.hpp"

namespace arbiter::test {
namespace {

// One backend, no retries: each engine answer is the client's at once.
GatewayConfig no_retries() {
  GatewayConfig cfg;
  cfg.extra = "retries: {max_retries: 0}\n";
  return cfg;
}

// A member of the error object; null when missing.
boost::json::value field(const boost::json::object& error, std::string_view name) {
  const auto* value = error.if_contains(name);
  return value ? *value : boost::json::value();
}
boost::json::value message(const boost::json::object& error) { return field(error, "message"); }

// The answer's error object, checked to be the OpenAI shape with `status`
// and `type`; empty (and a failure) when it is not.
boost::json::object openai_error(const HttpResponse& res, int status, std::string_view type) {
  EXPECT_EQ(res.status, status) << res.body;
  EXPECT_EQ(res.header("content-type").value_or("(none)"), "application/json") << res.body;
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(res.body, ec);
  if (ec || !v.is_object() || !v.as_object().contains("error") || !v.at("error").is_object()) {
    ADD_FAILURE() << "HTTP " << res.status << " without an OpenAI error object: [" << res.body
                  << "]";
    return {};
  }
  const boost::json::object error = v.at("error").as_object();
  EXPECT_TRUE(error.contains("message") && error.at("message").is_string()) << res.body;
  EXPECT_EQ(field(error, "type"), boost::json::value(type)) << res.body;
  EXPECT_TRUE(error.contains("param")) << res.body;
  EXPECT_TRUE(error.contains("code")) << res.body;
  return error;
}

TEST(UpstreamErrorShape, AnEmptyNotFoundBecomesAnOpenAiError) {
  Harness h(no_retries());
  h.upstream().push(Respond{.status = 404, .body = ""});
  const auto error =
      openai_error(http_call(h.port(), chat_request(chat_body())), 404, "invalid_request_error");
  EXPECT_EQ(message(error), "the backend answered HTTP 404 with an empty body");
}

TEST(UpstreamErrorShape, PlainTextAndHtmlServerErrorsBecomeOpenAiErrors) {
  Harness h(no_retries());
  h.upstream().push(
      Respond{.status = 500, .body = "Internal Server Error\n", .content_type = "text/plain"});
  const std::string html =
      "<html><head><title>503 Service Temporarily Unavailable</title></head></html>";
  h.upstream().push(
      Respond{.status = 503, .body = html, .content_type = "text/html; charset=utf-8"});

  const auto text =
      openai_error(http_call(h.port(), chat_request(chat_body())), 500, "server_error");
  EXPECT_EQ(message(text), "Internal Server Error");
  const auto page =
      openai_error(http_call(h.port(), chat_request(chat_body())), 503, "server_error");
  EXPECT_EQ(message(page), boost::json::value(html));
}

TEST(UpstreamErrorShape, TheEnginesTextIsBounded) {
  Harness h(no_retries());
  h.upstream().push(
      Respond{.status = 502, .body = std::string(64 * 1024, 'z'), .content_type = "text/plain"});
  const auto error =
      openai_error(http_call(h.port(), chat_request(chat_body())), 502, "server_error");
  EXPECT_EQ(message(error),
            boost::json::value(std::string(kUpstreamErrorMessageBytes, 'z') + "..."));
}

TEST(UpstreamErrorShape, AProperOpenAiErrorPassesThroughByteForByte) {
  Harness h(no_retries());
  const std::string body =
      R"({"error":{"message":"This model's maximum context length is 4096 tokens.","type":"BadRequestError","param":null,"code":400}})";
  h.upstream().push(Respond{.status = 400, .body = body});
  const auto res = http_call(h.port(), chat_request(chat_body()));
  EXPECT_EQ(res.status, 400);
  EXPECT_EQ(res.body, body);
  EXPECT_EQ(res.header("content-type").value_or("(none)"), "application/json");
}

// vLLM's and SGLang's older shape: the SDKs read body.error, and openai-node
// shows "400 status code (no body)" without it.
TEST(UpstreamErrorShape, VllmsFlatErrorObjectIsLifted) {
  Harness h(no_retries());
  h.upstream().push(Respond{
      .status = 400,
      .body =
          R"({"object":"error","message":"max_tokens must be at least 1","type":"BadRequestError","param":"max_tokens","code":400})"});
  const auto error =
      openai_error(http_call(h.port(), chat_request(chat_body())), 400, "BadRequestError");
  EXPECT_EQ(message(error), "max_tokens must be at least 1");
  EXPECT_EQ(field(error, "param"), "max_tokens");
  EXPECT_EQ(field(error, "code"), 400);
}

// A stream request that the engine refuses with a plain answer: the same.
TEST(UpstreamErrorShape, AStreamRequestsErrorAnswerIsWrappedToo) {
  Harness h(no_retries());
  h.upstream().push(
      Respond{.status = 400, .body = "prompt too long", .content_type = "text/plain"});
  h.upstream().push(
      Respond{.status = 503, .body = "data: overloaded\n\n", .content_type = "text/event-stream"});
  const std::string proper =
      R"({"error":{"message":"no","type":"invalid_request_error","param":null,"code":null}})";
  h.upstream().push(Respond{.status = 422, .body = proper});

  const auto text = openai_error(http_call(h.port(), chat_request(chat_body(true))), 400,
                                 "invalid_request_error");
  EXPECT_EQ(message(text), "prompt too long");
  const auto sse =
      openai_error(http_call(h.port(), chat_request(chat_body(true))), 503, "server_error");
  EXPECT_EQ(message(sse), "data: overloaded");
  const auto res = http_call(h.port(), chat_request(chat_body(true)));
  EXPECT_EQ(res.status, 422);
  EXPECT_EQ(res.body, proper);
}

// With retries left the relay holds an engine's 5xx; once they run out the
// held answer goes to the client, wrapped as a direct one is.
TEST(UpstreamErrorShape, AHeldFailureIsWrappedWhenTheRetriesRunOut) {
  Harness h;  // max_retries 2
  for (int i = 0; i < 3; ++i) {
    h.upstream().push(Respond{.status = 500,
                              .body = "engine failure " + std::to_string(i),
                              .content_type = "text/plain"});
  }
  const auto res = http_call(h.port(), chat_request(chat_body()));
  ASSERT_EQ(h.upstream().request_count(), 3u) << h.upstream().describe();
  EXPECT_EQ(res.header("x-arbiter-retries").value_or("(none)"), "2");
  const auto error = openai_error(res, 500, "server_error");
  EXPECT_EQ(message(error), "engine failure 2");
}

// An engine's 429 keeps its status and its Retry-After: only the body changes.
TEST(UpstreamErrorShape, ARateLimitKeepsItsHeaders) {
  Harness h(no_retries());
  h.upstream().push(
      Respond{.status = 429,
              .body = "Too Many Requests",
              .content_type = "text/plain",
              .headers = {{"Retry-After", "3"}, {"x-ratelimit-remaining-requests", "0"}}});
  const auto res = http_call(h.port(), chat_request(chat_body()));
  const auto error = openai_error(res, 429, "rate_limit_error");
  EXPECT_EQ(message(error), "Too Many Requests");
  EXPECT_EQ(res.header("retry-after").value_or("(none)"), "3");
  EXPECT_EQ(res.header("x-ratelimit-remaining-requests").value_or("(none)"), "0");
}

}  // namespace
}  // namespace arbiter::test
