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
