#include "core/error.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

namespace arbiter {
namespace {

TEST(ErrorMapping, StatusAndTypeMatchOpenAiSdkClasses) {
  EXPECT_EQ(map_error(ErrorCode::kInvalidJson).status, 400);
  EXPECT_EQ(map_error(ErrorCode::kUnauthorized).status, 401);
  EXPECT_EQ(map_error(ErrorCode::kUnauthorized).type, "authentication_error");
  EXPECT_EQ(map_error(ErrorCode::kForbidden).status, 403);
  EXPECT_EQ(map_error(ErrorCode::kModelNotFound).status, 404);
  EXPECT_EQ(map_error(ErrorCode::kModelNotFound).code, "model_not_found");
  EXPECT_EQ(map_error(ErrorCode::kPayloadTooLarge).status, 413);
  EXPECT_EQ(map_error(ErrorCode::kRateLimited).status, 429);
  EXPECT_EQ(map_error(ErrorCode::kRateLimited).type, "rate_limit_error");
  EXPECT_EQ(map_error(ErrorCode::kUpstreamFailed).status, 502);
  EXPECT_EQ(map_error(ErrorCode::kNoBackend).status, 503);
  EXPECT_EQ(map_error(ErrorCode::kShuttingDown).status, 503);
  EXPECT_EQ(map_error(ErrorCode::kUpstreamTimeout).status, 504);
}

TEST(ErrorMapping, OnlyRetryableErrorsCarryRetryAfter) {
  const ApiError bad_json{ErrorCode::kInvalidJson, "x", {}, {}};
  const ApiError unauthorized{ErrorCode::kUnauthorized, "x", {}, std::chrono::milliseconds(5)};
  const ApiError no_backend{ErrorCode::kNoBackend, "x", {}, {}};
  const ApiError limited{ErrorCode::kRateLimited, "x", {}, std::chrono::milliseconds(2500)};
  EXPECT_FALSE(bad_json.effective_retry_after());
  EXPECT_FALSE(unauthorized.effective_retry_after());
  EXPECT_EQ(no_backend.effective_retry_after(), kDefaultRetryAfter);
  EXPECT_EQ(limited.effective_retry_after(), std::chrono::milliseconds(2500));
}

TEST(ErrorMapping, RetryAfterSecondsRoundsUp) {
  EXPECT_EQ(retry_after_seconds(std::chrono::milliseconds(0)), "0");
  EXPECT_EQ(retry_after_seconds(std::chrono::milliseconds(1)), "1");
  EXPECT_EQ(retry_after_seconds(std::chrono::milliseconds(1000)), "1");
  EXPECT_EQ(retry_after_seconds(std::chrono::milliseconds(1001)), "2");
}

TEST(ErrorBody, HasTheOpenAiShape) {
  const auto body = error_body({ErrorCode::kModelNotFound, "no \"such\" model", "model", {}});
  const auto v = boost::json::parse(body);
  const auto& e = v.at("error");
  EXPECT_EQ(e.at("message").as_string(), "no \"such\" model");
  EXPECT_EQ(e.at("type").as_string(), "invalid_request_error");
  EXPECT_EQ(e.at("param").as_string(), "model");
  EXPECT_EQ(e.at("code").as_string(), "model_not_found");
  const auto no_param = boost::json::parse(error_body({ErrorCode::kInternal, "x", {}, {}}));
  EXPECT_TRUE(no_param.at("error").at("param").is_null());
}

}  // namespace
}  // namespace arbiter
