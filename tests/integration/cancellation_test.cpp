// Cancellation: a client that goes away must free the engine at once (the
// gateway closes its upstream connection, which is how vLLM and llama.cpp
// learn to abort), be logged as 499 and leave nothing in flight.
#include <thread>

#include <gtest/gtest.h>

#include "support/harness.hpp"
#include "support/http_client.hpp"
#include "support/requests.hpp"

namespace arbiter::test {
namespace {

constexpr Millis kPrompt{2'000};  // generous: machines are noisy

bool has_status(const boost::json::object& line, int64_t status) {
  const auto* s = line.if_contains("status");
  return s && s->is_int64() && s->as_int64() == status;
}

void expect_cleaned_up(Harness& h) {
  EXPECT_EQ(h.wait_for_metric("arbiter_requests_in_flight", 0, kPrompt), 0.0);
  const auto line = h.gateway().wait_for_log(
      [](const boost::json::object& l) { return has_status(l, 499); }, kPrompt);
  EXPECT_TRUE(line.has_value()) << "no access-log line with status 499";
  const auto cancelled = h.metric("arbiter_requests_cancelled_total");
  EXPECT_GE(cancelled.value_or(0), 1.0);
}

TEST(Cancellation, ClientDisconnectMidStreamClosesUpstream) {
  Harness h;
  Stream s;
  s.payloads = chat_chunks(200);
  s.interval = Millis(50);  // 10 s in all: it must not run to the end
  h.upstream().push(s);

  HttpConnection conn(h.port());
  conn.send(chat_request(chat_body(true)));
  ASSERT_EQ(conn.read_head().status, 200);
  ASSERT_GE(conn.read_events(3).size(), 3u);
  EXPECT_EQ(h.metric("arbiter_requests_in_flight"), 1.0);

  const auto gone_at = Clock::now();
  conn.close_abruptly();
  ASSERT_EQ(h.upstream().request_count(), 1u);
  const auto id = h.upstream().requests()[0].connection_id;
  const auto closed_at = h.upstream().wait_for_peer_close(id, kPrompt);
  ASSERT_TRUE(closed_at.has_value()) << "upstream connection still open 2 s after the client left";
  EXPECT_LT(ms_between(gone_at, *closed_at), 2'000.0);
  expect_cleaned_up(h);
}

TEST(Cancellation, ClientDisconnectBeforeUpstreamAnswersClosesUpstream) {
  Harness h;
  h.upstream().push(Hang{});

  HttpConnection conn(h.port());
  conn.send(chat_request(chat_body()));
  ASSERT_TRUE(h.upstream().wait_for_requests(1, Millis(5'000)));
  std::this_thread::sleep_for(Millis(100));  // the request is now waiting on the engine

  const auto gone_at = Clock::now();
  conn.close_abruptly();
  const auto id = h.upstream().requests()[0].connection_id;
  const auto closed_at = h.upstream().wait_for_peer_close(id, kPrompt);
  ASSERT_TRUE(closed_at.has_value()) << "upstream connection still open 2 s after the client left";
  EXPECT_LT(ms_between(gone_at, *closed_at), 2'000.0);
  expect_cleaned_up(h);
}

TEST(Cancellation, StreamingClientDisconnectBeforeFirstEventClosesUpstream) {
  Harness h;
  Stream s;
  s.payloads = chat_chunks(3);
  s.header_delay = Millis(10'000);
  h.upstream().push(s);

  HttpConnection conn(h.port());
  conn.send(chat_request(chat_body(true)));
  ASSERT_TRUE(h.upstream().wait_for_requests(1, Millis(5'000)));
  std::this_thread::sleep_for(Millis(100));

  const auto gone_at = Clock::now();
  conn.close_abruptly();
  const auto id = h.upstream().requests()[0].connection_id;
  const auto closed_at = h.upstream().wait_for_peer_close(id, kPrompt);
  ASSERT_TRUE(closed_at.has_value()) << "upstream connection still open 2 s after the client left";
  EXPECT_LT(ms_between(gone_at, *closed_at), 2'000.0);
  expect_cleaned_up(h);
}

}  // namespace
}  // namespace arbiter::test
