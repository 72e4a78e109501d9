#include "core/bearer_token.hpp"

#include <gtest/gtest.h>

namespace arbiter {
namespace {

TEST(BearerToken, MatchesTheExactTokenWithTheSchemeInAnyCase) {
  EXPECT_TRUE(bearer_matches("Bearer s3cret", "s3cret"));
  EXPECT_TRUE(bearer_matches("bearer s3cret", "s3cret"));
  EXPECT_TRUE(bearer_matches("BEARER s3cret", "s3cret"));
}

TEST(BearerToken, CredentialIsWhatFollowsTheScheme) {
  EXPECT_EQ(bearer_credential("Bearer sk-1"), "sk-1");
  EXPECT_EQ(bearer_credential("bEaReR sk-1"), "sk-1");
  EXPECT_EQ(bearer_credential("Bearer "), "");
  EXPECT_EQ(bearer_credential("Basic sk-1"), "");
  EXPECT_EQ(bearer_credential("Bearersk-1x"), "");
}

TEST(BearerToken, RefusesEverythingElse) {
  EXPECT_FALSE(bearer_matches("", "s3cret"));
  EXPECT_FALSE(bearer_matches("Bearer", "s3cret"));
  EXPECT_FALSE(bearer_matches("Bearer ", "s3cret"));
  EXPECT_FALSE(bearer_matches("Bearer s3cre", "s3cret"));
  EXPECT_FALSE(bearer_matches("Bearer s3cretX", "s3cret"));
  EXPECT_FALSE(bearer_matches("Bearer S3CRET", "s3cret"));  // the token itself is case-sensitive
  EXPECT_FALSE(bearer_matches("Basic s3cret", "s3cret"));
  EXPECT_FALSE(bearer_matches("Bearers3cret", "s3cret"));
  EXPECT_FALSE(bearer_matches("Bearer  s3cret", "s3cret"));
  // No token configured matches nothing, not even an empty credential.
  EXPECT_FALSE(bearer_matches("Bearer ", ""));
}

}  // namespace
}  // namespace arbiter
