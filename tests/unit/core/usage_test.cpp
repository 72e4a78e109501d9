#include "core/usage.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <random>

namespace arbiter {
namespace {

TEST(Usage, FoundInAWholeChatResponse) {
  const auto u = find_usage(
      R"({"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}],)"
      R"("usage":{"prompt_tokens":12,"completion_tokens":7,"total_tokens":19}})");
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(u->prompt_tokens, 12);
  EXPECT_EQ(u->completion_tokens, 7);
}

TEST(Usage, GeneratedTextThatMentionsUsageIsNotMistakenForIt) {
  // The answer's text holds "usage":{...} escaped, after the real object.
  const auto u = find_usage(
      R"({"usage":{"prompt_tokens":3,"completion_tokens":4},"choices":[{"text":"say \"usage\":{\"prompt_tokens\":99}"}]})");
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(u->prompt_tokens, 3);
  EXPECT_EQ(u->completion_tokens, 4);
}

TEST(Usage, NestedDetailsAndSpacesAreRead) {
  const auto u = find_usage(
      R"({"usage": {"prompt_tokens_details": {"cached_tokens": 5}, "prompt_tokens": 40, "completion_tokens": 2}})");
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(u->prompt_tokens, 40);
  EXPECT_EQ(u->completion_tokens, 2);
}

TEST(Usage, CachedTokensAreReadFromThePromptDetails) {
  // vLLM with prefix caching and --enable-prompt-tokens-details.
  const auto u = find_usage(
      R"({"choices":[],"usage":{"prompt_tokens":40,"total_tokens":42,"completion_tokens":2,)"
      R"("prompt_tokens_details":{"cached_tokens":32}}})");
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(u->prompt_tokens, 40);
  EXPECT_EQ(u->completion_tokens, 2);
  EXPECT_EQ(u->cached_tokens, 32);
  // With spaces and newlines, and another details object first.
  const auto spaced = find_usage(
      "{\"usage\": {\"completion_tokens_details\": {\"reasoning_tokens\": 1}, \"prompt_tokens\": 9,\n"
      " \"prompt_tokens_details\":\t{\"audio_tokens\": 0, \"cached_tokens\": 8\n}, \"completion_tokens\": 3}}");
  ASSERT_TRUE(spaced.has_value());
  EXPECT_EQ(spaced->cached_tokens, 8);
  EXPECT_EQ(spaced->completion_tokens, 3);
}

TEST(Usage, CachedTokensAreZeroWhenNotReportedOrNotPlausible) {
  auto cached = [](std::string_view body) {
    const auto u = find_usage(body);
    EXPECT_TRUE(u.has_value()) << body;
    return u ? u->cached_tokens : -1;
  };
  EXPECT_EQ(cached(R"({"usage":{"prompt_tokens":4,"completion_tokens":2}})"), 0);
  EXPECT_EQ(cached(R"({"usage":{"prompt_tokens":4,"completion_tokens":2,"prompt_tokens_details":null}})"), 0);
  EXPECT_EQ(cached(R"({"usage":{"prompt_tokens":4,"completion_tokens":2,"prompt_tokens_details":{}}})"), 0);
  // Only inside the prompt's details: not a cached_tokens of another object.
  EXPECT_EQ(cached(R"({"usage":{"prompt_tokens":4,"completion_tokens":2,"x_details":{"cached_tokens":3}}})"), 0);
  EXPECT_EQ(cached(R"({"usage":{"prompt_tokens":4,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":1.5}}})"), 0);
  EXPECT_EQ(cached(R"({"usage":{"prompt_tokens":4,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":-1}}})"), 0);
  // More cached than the whole prompt is not believed.
  EXPECT_EQ(cached(R"({"usage":{"prompt_tokens":4,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":5}}})"), 0);
}

TEST(Usage, MissingOrMalformedIsNone) {
  EXPECT_FALSE(find_usage(R"({"usage":{"prompt_tokens":1.5,"completion_tokens":2}})").has_value());
  EXPECT_FALSE(find_usage(R"({"choices":[]})").has_value());
  EXPECT_FALSE(find_usage(R"({"usage":null})").has_value());
  EXPECT_FALSE(find_usage(R"({"usage":{"prompt_tokens":1}})").has_value());
  EXPECT_FALSE(find_usage(R"({"usage":{"prompt_tokens":-1,"completion_tokens":2}})").has_value());
  EXPECT_FALSE(find_usage(R"({"usage":{"prompt_tokens":1,"completion_tokens":2)").has_value());  // cut
  EXPECT_FALSE(find_usage("").has_value());
}

// Randomised answers against Boost.JSON's reading of them: usage anywhere
// among the top-level keys (keys with a 'u' after it: the reverse search's
// false starts), its keys in any order with any spacing, nested details
// (brace matching), text with braces and escaped quotes before it.
TEST(Usage, RandomAnswersReadAsADocumentParserReadsThem) {
  std::mt19937 rng(42);
  const auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  const auto space = [&] { return std::string(static_cast<std::size_t>(pick(3)), ' '); };
  for (int round = 0; round < 2000; ++round) {
    const int prompt = pick(100000), completion = pick(5000), cached = pick(120000);
    std::vector<std::string> usage_fields = {"\"prompt_tokens\":" + space() + std::to_string(prompt),
                                             "\"completion_tokens\":" + space() + std::to_string(completion),
                                             "\"total_tokens\":" + space() + std::to_string(prompt + completion)};
    if (pick(2)) {
      usage_fields.push_back("\"prompt_tokens_details\":" + space() + "{\"cached_tokens\":" + space() +
                             std::to_string(cached) + (pick(2) ? ",\"audio_tokens\":{\"n\":1}" : "") + "}");
    }
    if (pick(2))
      usage_fields.push_back("\"completion_tokens_details\":{\"reasoning_tokens\":" + std::to_string(pick(9)) + "}");
    std::shuffle(usage_fields.begin(), usage_fields.end(), rng);
    std::string usage = "{";
    for (std::size_t i = 0; i < usage_fields.size(); ++i) usage += (i ? "," + space() : space()) + usage_fields[i];
    usage += space() + "}";
    std::vector<std::string> top = {
        "\"id\":\"chatcmpl-\"", "\"choices\":[{\"message\":{\"content\":\"a {brace} and \\\"usage\\\": {} sub\"}}]",
        "\"usage\":" + space() + usage, "\"service_tier\":\"auto\"", "\"system_fingerprint\":\"fp_u1\""};
    std::shuffle(top.begin(), top.end(), rng);
    std::string body = "{";
    for (std::size_t i = 0; i < top.size(); ++i) body += (i ? "," : "") + top[i];
    body += "}";
    SCOPED_TRACE(body);
    const boost::json::object doc = boost::json::parse(body).as_object();
    const boost::json::object& u = doc.at("usage").as_object();
    const auto found = find_usage(body);
    ASSERT_TRUE(found.has_value());
    EXPECT_EQ(found->prompt_tokens, u.at("prompt_tokens").as_int64());
    EXPECT_EQ(found->completion_tokens, u.at("completion_tokens").as_int64());
    int64_t expected_cached = 0;
    if (const auto* details = u.if_contains("prompt_tokens_details")) {
      const int64_t c = details->at("cached_tokens").as_int64();
      expected_cached = c <= prompt ? c : 0;
    }
    EXPECT_EQ(found->cached_tokens, expected_cached);
  }
}

TEST(Usage, FoundInAResponsesAnswerAndItsCompletedEvent) {
  const auto u = find_usage(
      R"({"id":"resp_1","object":"response","output":[],"usage":{"input_tokens":12,)"
      R"("input_tokens_details":{"cached_tokens":5},"output_tokens":7,"output_tokens_details":{"reasoning_tokens":0},)"
      R"("total_tokens":19}})");
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(u->prompt_tokens, 12);
  EXPECT_EQ(u->completion_tokens, 7);
  EXPECT_EQ(u->cached_tokens, 5);
  EXPECT_FALSE(find_usage(R"({"type":"response.created","response":{"usage":null}})").has_value());
}

}  // namespace
}  // namespace arbiter
