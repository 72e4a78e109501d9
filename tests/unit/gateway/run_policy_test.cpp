// What follows an upstream run (gateway/handler/run_policy): from outcomes
// written by hand, and from the relay's own outcomes against a fake upstream
// into a recording sink, with failures held as the handler holds them while
// it has attempts left.
#include "gateway/handler/run_policy.hpp"

#include <gtest/gtest.h>

#include "recording_sink.hpp"
#include "relay_outcomes.hpp"
#include "support/fake_upstream.hpp"

namespace arbiter {
namespace {

using testing::answered;
using testing::failed;

AfterRun next(const RelayOutcome& o, std::size_t backends = 2) { return after_run(o, judge(o), backends); }

TEST(RunPolicy, AnAnswerTheClientHasIsFinished) {
  EXPECT_EQ(next(answered(200)), AfterRun::kFinish);
  EXPECT_EQ(next(answered(400)), AfterRun::kFinish) << "the request's fault: not run again";
  // A 5xx already sent (no attempts were left to hold it): finished too.
  EXPECT_EQ(next(answered(503)), AfterRun::kFinish);
  RelayOutcome gone = answered(200);
  gone.status = 499;
  EXPECT_EQ(next(gone), AfterRun::kFinish);
}

TEST(RunPolicy, AHeldFailureRunsAgainAndAHeldRefusalOnlyWithAnotherBackend) {
  RelayOutcome failed;
  failed.upstream_status = 502;
  failed.held = HeldResponse{.status = 502};
  EXPECT_EQ(next(failed, 1), AfterRun::kRunAgain);
  RelayOutcome refused;
  refused.upstream_status = 429;
  refused.held = HeldResponse{.status = 429};
  EXPECT_EQ(next(refused, 2), AfterRun::kRunAgain);
  EXPECT_EQ(next(refused, 1), AfterRun::kGiveUp) << "never back to the engine that refused for load";
}

TEST(RunPolicy, AConnectionThatFailedBeforeAnyByteRunsAgain) {
  RelayOutcome refused_connect = failed("connect", ErrorCode::kUpstreamFailed);
  EXPECT_TRUE(run_unsent(refused_connect));
  EXPECT_EQ(next(refused_connect, 1), AfterRun::kRunAgain);
  // The same error after the client had the answer's head: nothing to redo.
  refused_connect.status = 200;
  EXPECT_FALSE(run_unsent(refused_connect));
  EXPECT_EQ(next(refused_connect), AfterRun::kFinish);
}

TEST(RunPolicy, ABrokenResumableStreamFailsOverAndATooLargeAnswerGivesUp) {
  RelayOutcome broken = failed("reset", ErrorCode::kUpstreamFailed);
  broken.upstream_status = 200;
  broken.status = 200;
  broken.stream_open = true;
  EXPECT_EQ(next(broken), AfterRun::kRunAgain);
  EXPECT_EQ(next(failed("too_large", ErrorCode::kUpstreamFailed)), AfterRun::kGiveUp) << "says nothing about the backend: the same answer elsewhere";
}

TEST(RunPolicy, APreemptedRunQueuesAgainWhateverElseItSays) {
  RelayOutcome preempted = answered(200);
  preempted.preempted = true;
  preempted.stream_open = true;
  EXPECT_EQ(next(preempted), AfterRun::kRequeue);
  preempted.held = HeldResponse{.status = 503};
  EXPECT_EQ(next(preempted, 1), AfterRun::kRequeue);
}

// The relay's outcome of one run against `respond`, failures held.
RelayOutcome run_against(const test::Respond& respond) {
  test::FakeUpstream upstream;
  upstream.push(respond);
  net::io_context ioc;
  UpstreamPool pool("127.0.0.1", upstream.port(), 4);
  testing::RecordingSink sink;
  Deadline deadline;
  Interrupt interrupt;
  const TimeoutsConfig timeouts;
  const LimitsConfig limits;
  const std::vector<std::pair<std::string, std::string>> headers{{"x-request-id", "r1"}};
  const UpstreamRequest up{.target = "/v1/chat/completions", .host = "127.0.0.1", .request_id = "r1",
                           .accept = {}, .body = R"({"model":"m1"})"};
  const RelayRequest request{.pool = pool, .upstream_request = up, .sink = sink, .deadline = deadline,
                             .timeouts = timeouts, .limits = limits, .response_headers = headers,
                             .interrupt = interrupt, .resume = nullptr, .hold_failures = true};
  RelayOutcome outcome;
  net::co_spawn(ioc, relay(request, outcome), net::detached);
  ioc.run_for(std::chrono::seconds(10));
  EXPECT_EQ(sink.status == 0, run_unsent(outcome)) << "unsent exactly when the sink got nothing";
  return outcome;
}

TEST(RunPolicy, TheRelaysOutcomesAgainstAFakeUpstream) {
  EXPECT_EQ(next(run_against({.status = 200, .body = test::chat_completion_body()}), 1), AfterRun::kFinish);
  EXPECT_EQ(next(run_against({.status = 503, .body = R"({"error":"down"})"}), 1), AfterRun::kRunAgain);
  EXPECT_EQ(next(run_against({.status = 429, .body = R"({"error":"busy"})"}), 1), AfterRun::kGiveUp);
  EXPECT_EQ(next(run_against({.status = 429, .body = R"({"error":"busy"})"}), 3), AfterRun::kRunAgain);
  EXPECT_EQ(next(run_against({.status = 404, .body = R"({"error":"no"})"}), 3), AfterRun::kFinish);
}

}  // namespace
}  // namespace arbiter
