// A request for n answers runs n sequences on its engine, so it holds n of its
// backend's slots (docs/scheduler.md, "Requests for several answers"): with
// max_concurrency 2, one request with n = 2 leaves no room, and the next one
// waits in the gateway's queue until it ends instead of going to the engine.
#include <gtest/gtest.h>

#include "support/harness.hpp"
#include "support/http_client.hpp"
#include "support/requests.hpp"

namespace arbiter::test {
namespace {

std::string chat_body_n(int n) {
  return R"({"model":"m1","n":)" + std::to_string(n) +
         R"(,"messages":[{"role":"user","content":"hi"}]})";
}

TEST(Sequences, ARequestForNAnswersHoldsNSlotsAndTheNextOneQueues) {
  Harness h(GatewayConfig{.max_concurrency = 2});
  h.upstream().push(Hang{});
  HttpConnection first(h.port());
  first.send(chat_request(chat_body_n(2)));
  ASSERT_TRUE(h.upstream().wait_for_requests(1, Millis(5'000)));
  ASSERT_EQ(h.wait_for_metric("arbiter_backend_in_flight", 2, Millis(5'000)), 2.0)
      << describe_output(h.gateway());

  HttpConnection second(h.port());
  second.send(chat_request(chat_body()));
  ASSERT_EQ(h.wait_for_metric("arbiter_queue_depth", 1, Millis(5'000), {{"class", "chat"}}), 1.0)
      << "the second request should wait in the gateway: " << h.upstream().describe();
  EXPECT_EQ(h.upstream().request_count(), 1u);

  // The first one's client leaves: its two slots come back, the second runs.
  first.close_abruptly();
  ASSERT_TRUE(h.upstream().wait_for_requests(2, Millis(5'000))) << describe_output(h.gateway());
  EXPECT_EQ(second.read_head().status, 200);
  second.read_rest();
  EXPECT_EQ(h.wait_for_metric("arbiter_backend_in_flight", 0, Millis(5'000)), 0.0);
}

// The control: with n = 1 the first request leaves a slot, and the second
// goes to the engine at once.
TEST(Sequences, WithOneAnswerTheSecondRequestRunsAtOnce) {
  Harness h(GatewayConfig{.max_concurrency = 2});
  h.upstream().push(Hang{});
  HttpConnection first(h.port());
  first.send(chat_request(chat_body_n(1)));
  ASSERT_TRUE(h.upstream().wait_for_requests(1, Millis(5'000)));
  HttpConnection second(h.port());
  second.send(chat_request(chat_body()));
  ASSERT_TRUE(h.upstream().wait_for_requests(2, Millis(5'000))) << describe_output(h.gateway());
  EXPECT_EQ(second.read_head().status, 200);
  first.close_abruptly();
}

}  // namespace
}  // namespace arbiter::test
