// Upstream failures become OpenAI-shaped errors: 502 for a refused or reset
// connection, 504 when no header comes in time, and a final error event
// when the engine dies after the stream began. Never a hang.
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "support/harness.hpp"
#include "support/http_client.hpp"
#include "support/raw_socket.hpp"
#include "support/requests.hpp"

namespace arbiter::test {
namespace {

void expect_error_body(const HttpResponse& res, int status) {
  EXPECT_EQ(res.status, status) << res.body;
  const auto body = boost::json::parse(res.body);
  const auto& err = body.at("error").as_object();
  EXPECT_TRUE(err.at("message").is_string());
  EXPECT_TRUE(err.contains("type"));
  EXPECT_TRUE(err.contains("param"));
  EXPECT_TRUE(err.contains("code"));
}

void expect_retry_after(const HttpResponse& res) {
  EXPECT_TRUE(res.header("retry-after").has_value()) << "retryable error without Retry-After";
  EXPECT_TRUE(res.header("retry-after-ms").has_value()) << "retryable error without retry-after-ms";
}

TEST(UpstreamFailure, CrashMidStreamEndsWithErrorEvent) {
  Harness h;
  Stream s;
  s.payloads = chat_chunks(10);
  s.interval = Millis(20);
  s.crash_after = 3;
  h.upstream().push(s);

  HttpConnection conn(h.port());
  conn.send(chat_request(chat_body(true)));
  ASSERT_EQ(conn.read_head().status, 200);
  const auto body = conn.read_rest(Millis(5'000));  // TimeoutError here = a hang
  const auto relayed = s.wire_prefix(3);
  ASSERT_EQ(body.substr(0, relayed.size()), relayed) << "events before the crash must be relayed";
  const auto rest = split_sse_events(body.substr(relayed.size()));
  ASSERT_EQ(rest.size(), 1u) << "expected exactly one final error event, got: " << body.substr(relayed.size());
  ASSERT_TRUE(rest[0].starts_with("data: {")) << rest[0];
  const auto event = boost::json::parse(rest[0].substr(6));
  EXPECT_TRUE(event.as_object().contains("error")) << rest[0];
  EXPECT_EQ(body.find("[DONE]"), std::string::npos);
  EXPECT_EQ(h.wait_for_metric("arbiter_requests_in_flight", 0, Millis(2'000)), 0.0);
}

TEST(UpstreamFailure, NoResponseHeaderInTimeGives504) {
  GatewayConfig cfg;
  cfg.upstream_first_byte_ms = 500;
  cfg.extra = "retries: {max_retries: 0}\n";  // the one backend's time-out itself, not a retry's answer
  Harness h(cfg);
  Respond late;
  late.header_delay = Millis(4'000);  // long after the gateway's 500 ms
  late.body = chat_completion_body();
  h.upstream().push(late);

  const auto start = Clock::now();
  const auto res = http_call(h.port(), chat_request(chat_body()));
  const auto took = ms_between(start, Clock::now());
  expect_error_body(res, 504);
  expect_retry_after(res);
  EXPECT_LT(took, 3'000.0) << "the 504 came only when the upstream finally answered";
  // The timed-out upstream request is abandoned: its connection is closed.
  EXPECT_TRUE(h.upstream().wait_for_peer_close(0, Millis(2'000)).has_value());
}

TEST(UpstreamFailure, HangingUpstreamGives504) {
  GatewayConfig cfg;
  cfg.upstream_first_byte_ms = 500;
  cfg.extra = "retries: {max_retries: 0}\n";
  Harness h(cfg);
  h.upstream().push(Hang{});
  HttpConnection conn(h.port());
  conn.send(chat_request(chat_body(true)));
  const auto head = conn.read_head(Millis(5'000));
  EXPECT_EQ(head.status, 504);
  conn.read_rest(Millis(5'000));
  EXPECT_EQ(boost::json::parse(conn.body()).at("error").at("code"), "upstream_timeout")
      << conn.body();
}

TEST(UpstreamFailure, ResetBeforeHeaderGives502) {
  Harness h;
  h.upstream().set_handler([](const RecordedRequest&) -> Behaviour { return CloseImmediately{}; });
  const auto res = http_call(h.port(), chat_request(chat_body()));
  expect_error_body(res, 502);
  expect_retry_after(res);
  EXPECT_GE(h.gateway()
                .wait_for_metric("arbiter_upstream_errors_total", [](double v) { return v >= 1; }, Millis(5'000))
                .value_or(0),
            1.0);
}

TEST(UpstreamFailure, ConnectionRefusedGives502) {
  // Nothing listens there, and the port stays ours for the whole test.
  const ClosedPort dead;
  GatewayConfig cfg;
  cfg.backend_ports = {dead.port()};
  GatewayProcess gw(cfg.to_yaml());
  const auto res = http_call(gw.port(), chat_request(chat_body()));
  expect_error_body(res, 502);
  expect_retry_after(res);
  if (::testing::Test::HasFailure()) std::fprintf(stderr, "%s\n", describe_output(gw).c_str());
}

}  // namespace
}  // namespace arbiter::test
