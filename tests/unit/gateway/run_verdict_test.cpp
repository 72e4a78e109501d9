// What a run tells outlier detection about its backend (judge), and what a
// request's end tells its model's breaker (backends_failed).
#include <gtest/gtest.h>

#include "gateway/stages/breaker/breaker_observer.hpp"
#include "gateway/resilience/run_verdict.hpp"
#include "relay_outcomes.hpp"

namespace arbiter {
namespace {

using testing::answered;
using testing::failed;

TEST(RunVerdict, FiveHundredsConnectsAndTimeoutsAreFailures) {
  EXPECT_EQ(judge(answered(500)), RunVerdict::kFailure);
  EXPECT_EQ(judge(answered(503)), RunVerdict::kFailure);
  EXPECT_EQ(judge(failed("connect", ErrorCode::kUpstreamFailed)), RunVerdict::kFailure);
  EXPECT_EQ(judge(failed("timeout", ErrorCode::kUpstreamTimeout)), RunVerdict::kFailure);
  EXPECT_EQ(judge(failed("reset", ErrorCode::kUpstreamFailed)), RunVerdict::kFailure);
  // A stream that broke after its header: status 200, the error recorded.
  RelayOutcome broken = failed("reset", ErrorCode::kUpstreamFailed);
  broken.upstream_status = 200;
  broken.status = 200;
  EXPECT_EQ(judge(broken), RunVerdict::kFailure);
}

TEST(RunVerdict, ClientsAndTheGatewaysOwnStopsSayNothing) {
  EXPECT_EQ(judge(answered(200)), RunVerdict::kSuccess);
  EXPECT_EQ(judge(answered(400)), RunVerdict::kSuccess) << "a bad request is the client's fault";
  EXPECT_EQ(judge(answered(429)), RunVerdict::kOverloaded);
  RelayOutcome gone = answered(200);
  gone.status = 499;
  EXPECT_EQ(judge(gone), RunVerdict::kNeutral);
  RelayOutcome preempted = answered(200);
  preempted.preempted = true;
  EXPECT_EQ(judge(preempted), RunVerdict::kNeutral);
  RelayOutcome superseded;
  superseded.interrupted = true;
  EXPECT_EQ(judge(superseded), RunVerdict::kNeutral);
  EXPECT_EQ(judge(failed("too_large", ErrorCode::kUpstreamFailed)), RunVerdict::kNeutral);
  RelayOutcome before_any_run;
  before_any_run.status = 499;
  EXPECT_EQ(judge(before_any_run), RunVerdict::kNeutral);
}

TEST(BreakerFailure, OnlyTheBackendsFaultsCount) {
  EXPECT_TRUE(backends_failed(answered(502)));
  EXPECT_TRUE(backends_failed(failed("timeout", ErrorCode::kUpstreamTimeout)));
  RelayOutcome down;
  down.error = ApiError{ErrorCode::kBackendsDown, "x", {}, {}};
  EXPECT_TRUE(backends_failed(down));
  EXPECT_FALSE(backends_failed(answered(200)));
  RelayOutcome cut = failed("reset", ErrorCode::kUpstreamFailed);  // a stream cut after it began
  cut.stream = true;
  cut.status = 200;
  EXPECT_FALSE(backends_failed(cut)) << "its backend's failure, not the model's";
  EXPECT_FALSE(backends_failed(answered(429)));
  EXPECT_FALSE(backends_failed(answered(404)));
  RelayOutcome waited;  // a deadline spent waiting for capacity: load, not failure
  waited.error = ApiError{ErrorCode::kNoBackend, "x", {}, {}};
  EXPECT_FALSE(backends_failed(waited));
  RelayOutcome full;
  full.error = ApiError{ErrorCode::kRateLimited, "x", {}, {}};
  EXPECT_FALSE(backends_failed(full));
}

TEST(RetryAfter, SecondsOrMillisecondsNeverADate) {
  EXPECT_EQ(parse_retry_after("2", ""), std::chrono::milliseconds(2000));
  EXPECT_EQ(parse_retry_after("0.5", ""), std::chrono::milliseconds(500));
  EXPECT_EQ(parse_retry_after("2", "150"), std::chrono::milliseconds(150)) << "the finer one wins";
  EXPECT_EQ(parse_retry_after("Wed, 21 Oct 2026 07:28:00 GMT", ""), std::nullopt);
  EXPECT_EQ(parse_retry_after("-1", ""), std::nullopt);
  EXPECT_EQ(parse_retry_after("", ""), std::nullopt);
}

}  // namespace
}  // namespace arbiter
