// Graceful shutdown: SIGTERM stops new work and reports not-ready, lets live
// streams finish (up to drain_ms), then the process exits 0.
#include <optional>
#include <thread>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "support/harness.hpp"
#include "support/http_client.hpp"
#include "support/requests.hpp"

namespace arbiter::test::shutdown_test {
namespace {

bool has_status(const boost::json::object& line, int64_t status) {
  const auto* s = line.if_contains("status");
  return s && s->is_int64() && s->as_int64() == status;
}

// GET /readyz on an existing keep-alive connection, else a new one; the
// status, or nullopt when neither could get an answer (both are fair ways
// for a draining gateway to behave, but then /readyz tells nobody anything).
// `how` says what each attempt saw.
std::optional<int> readyz_during_drain(HttpConnection& kept, uint16_t port, std::string& how) {
  HttpRequest get;
  get.target = "/readyz";
  try {
    return kept.request(get, Millis(2'000)).status;
  } catch (const std::exception& e) {
    how += std::string("kept-alive connection: ") + e.what() + "; ";
  }
  try {
    return http_call(port, get, Millis(2'000)).status;
  } catch (const std::exception& e) {
    how += std::string("new connection: ") + e.what();
  }
  return std::nullopt;
}

TEST(Shutdown, SigtermDrainsLiveStreamThenExitsZero) {
  GatewayConfig cfg;
  cfg.drain_ms = 30'000;
  Harness h(cfg);
  Stream s;
  // ~6 s, well inside the drain deadline, and long enough for /readyz to be
  // polled while the stream is still live on a loaded machine.
  s.payloads = chat_chunks(60);
  s.interval = Millis(100);
  h.upstream().push(s);

  HttpConnection probe(h.port());
  HttpRequest readyz;
  readyz.target = "/readyz";
  ASSERT_EQ(probe.request(readyz).status, 200);

  HttpConnection stream(h.port());
  stream.send(chat_request(chat_body(true)));
  ASSERT_EQ(stream.read_head().status, 200);
  ASSERT_GE(stream.read_events(2).size(), 2u);

  h.gateway().terminate();
  // Polled until the signal has landed: 200 before, 503 once draining.
  std::string how;
  std::optional<int> ready;
  const auto deadline = Clock::now() + Millis(5'000);
  for (;;) {
    how.clear();
    ready = readyz_during_drain(probe, h.port(), how);
    if (ready != 200 || Clock::now() >= deadline) break;
    std::this_thread::sleep_for(Millis(20));
  }
  ASSERT_TRUE(h.gateway().running()) << "the gateway exited with a stream still live";
  EXPECT_EQ(ready, std::optional<int>(503)) << "/readyz must say 503 while draining; " << how;

  const auto body = stream.read_rest(Millis(30'000));
  EXPECT_FALSE(stream.error()) << *stream.error();
  EXPECT_TRUE(stream.complete());
  EXPECT_EQ(body, s.wire()) << "the live stream was cut by the drain";

  EXPECT_EQ(h.gateway().wait_exit(Millis(30'000)), 0);
}

TEST(Shutdown, IdleGatewayExitsZeroPromptly) {
  Harness h;
  ASSERT_EQ(http_get(h.port(), "/healthz").status, 200);
  h.gateway().terminate();
  EXPECT_EQ(h.gateway().wait_exit(Millis(5'000)), 0);
}

TEST(Shutdown, DrainDeadlineEndsStreamsThatRunTooLong) {
  GatewayConfig cfg;
  cfg.drain_ms = 1'000;
  Harness h(cfg);
  Stream s;
  s.payloads = chat_chunks(300);
  s.interval = Millis(100);  // 30 s: far past the deadline
  h.upstream().push(s);

  HttpConnection stream(h.port());
  stream.send(chat_request(chat_body(true)));
  ASSERT_EQ(stream.read_head().status, 200);
  ASSERT_GE(stream.read_events(1).size(), 1u);

  const auto sent_at = Clock::now();
  h.gateway().terminate();
  const auto code = h.gateway().wait_exit(Millis(6'000));
  ASSERT_TRUE(code.has_value()) << "still running 6 s after SIGTERM with drain_ms 1000";
  EXPECT_EQ(*code, 0);
  EXPECT_GT(ms_between(sent_at, Clock::now()), 500.0) << "exited without draining at all";
}

bool has_error(const boost::json::object& line, std::string_view code) {
  const auto* e = line.if_contains("error");
  return e && e->is_string() && e->as_string() == code;
}

// Issue 16, edge item 4: requests still queued when draining starts get 503
// shutting_down with Retry-After at once (before, they waited and ran, or
// got nothing at the deadline); the running stream is not disturbed.
TEST(Shutdown, QueuedRequestsGet503ShuttingDownWhenDrainingStarts) {
  GatewayConfig cfg;
  cfg.drain_ms = 10'000;
  cfg.max_concurrency = 1;
  Harness h(cfg);
  Stream s;
  s.payloads = chat_chunks(20);
  s.interval = Millis(100);  // ~2 s: the one slot stays busy
  h.upstream().push(s);

  HttpConnection stream(h.port());
  stream.send(chat_request(chat_body(true)));
  ASSERT_EQ(stream.read_head().status, 200);
  ASSERT_GE(stream.read_events(1).size(), 1u);
  HttpConnection queued(h.port());
  queued.send(chat_request(chat_body()));
  ASSERT_EQ(h.wait_for_metric("arbiter_queue_depth", 1, Millis(5'000), {{"class", "chat"}}), 1.0);

  h.gateway().terminate();
  const auto res = queued.read_head(Millis(5'000));
  queued.read_rest();
  EXPECT_EQ(res.status, 503) << queued.body();
  EXPECT_NE(queued.body().find("shutting_down"), std::string::npos) << queued.body();
  EXPECT_TRUE(res.header("retry-after").has_value());

  EXPECT_EQ(stream.read_rest(Millis(10'000)), s.wire()) << "the live stream was cut by the drain";
  EXPECT_EQ(h.gateway().wait_exit(Millis(10'000)), 0);
  EXPECT_EQ(h.upstream().request_count(), 1u) << "the queued request ran during the drain";
  const auto logged = h.gateway().wait_for_log(
      [](const boost::json::object& l) { return has_status(l, 503) && has_error(l, "shutting_down"); }, Millis(1'000));
  EXPECT_TRUE(logged.has_value()) << "no 503 shutting_down access-log line";
}

// Issue 16, edge item 4: a stream still running at the drain deadline ends
// with a final error event (shutting_down) instead of being cut, and the
// access log says so instead of 499.
TEST(Shutdown, StreamsStillRunningAtTheDeadlineEndWithAnErrorEvent) {
  GatewayConfig cfg;
  cfg.drain_ms = 1'500;
  Harness h(cfg);
  Stream s;
  s.payloads = chat_chunks(300);
  s.interval = Millis(100);  // 30 s: far past the deadline
  h.upstream().push(s);

  HttpConnection stream(h.port());
  stream.send(chat_request(chat_body(true)));
  ASSERT_EQ(stream.read_head().status, 200);
  ASSERT_GE(stream.read_events(1).size(), 1u);

  h.gateway().terminate();
  const std::string body = stream.read_rest(Millis(10'000));
  EXPECT_TRUE(stream.complete()) << "the stream was cut: " << stream.error().value_or("");
  const auto events = split_sse_events(body);
  ASSERT_FALSE(events.empty());
  EXPECT_NE(events.back().find("\"error\""), std::string::npos) << events.back();
  EXPECT_NE(events.back().find("shutting_down"), std::string::npos) << events.back();
  EXPECT_EQ(h.gateway().wait_exit(Millis(10'000)), 0);
  const auto logged = h.gateway().wait_for_log(
      [](const boost::json::object& l) { return has_status(l, 200) && has_error(l, "shutting_down"); }, Millis(1'000));
  EXPECT_TRUE(logged.has_value()) << "the access log does not record shutting_down";
  for (const auto& line : h.gateway().access_log()) EXPECT_FALSE(has_status(line, 499));
}

}  // namespace
}  // namespace arbiter::test::shutdown_test
