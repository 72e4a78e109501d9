#include "core/usage.hpp"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace arbiter
