// The gateway's own requests to a backend (http/outbound_connection): a
// response read whole, the connection kept alive and reused, one reopen of
// a connection the engine closed while idle, and each way a request fails
// named: the deadline, a refused connection, close() from outside.
#include "http/outbound_connection.hpp"

#include <gtest/gtest.h>

#include "support/fake_upstream.hpp"

namespace arbiter {
namespace {

using Millis = std::chrono::milliseconds;

http::request<http::empty_body> get_metrics() {
  http::request<http::empty_body> req{http::verb::get, "/metrics", 11};
  req.set(http::field::host, "127.0.0.1");
  return req;
}

// Runs `requests` requests on one connection to 127.0.0.1:`port`, `timeout`
// each; their responses.
std::vector<OutboundResponse> run(uint16_t port, int requests, Millis timeout = Millis(5'000)) {
  net::io_context ioc;
  const auto connection = std::make_shared<OutboundConnection>(ioc.get_executor(), "127.0.0.1", port, nullptr);
  std::vector<OutboundResponse> out;
  net::co_spawn(
      ioc,
      [&]() -> Task<void> {
        for (int i = 0; i < requests; ++i) out.push_back(co_await connection->request(get_metrics(), timeout, 1 << 20));
        connection->close();
      },
      net::detached);
  ioc.run_for(std::chrono::seconds(20));
  return out;
}

TEST(OutboundConnection, ReadsAResponseAndKeepsTheConnection) {
  test::FakeUpstream upstream;
  upstream.set_handler([](const test::RecordedRequest&) -> test::Behaviour {
    return test::Respond{.body = "vllm:num_requests_running 3\n", .content_type = "text/plain"};
  });
  const auto answers = run(upstream.port(), 3);
  ASSERT_EQ(answers.size(), 3u);
  for (const auto& a : answers) {
    EXPECT_EQ(a.failure, OutboundFailure::kNone) << outbound_failure_name(a.failure);
    EXPECT_EQ(a.response.result_int(), 200u);
    EXPECT_EQ(a.response.body(), "vllm:num_requests_running 3\n");
  }
  EXPECT_TRUE(answers[0].connected);
  EXPECT_FALSE(answers[1].connected) << "kept alive";
  EXPECT_FALSE(answers[2].connected);
  EXPECT_EQ(upstream.total_connections(), 1u) << upstream.describe();
  ASSERT_TRUE(upstream.wait_for_requests(3, Millis(1'000)));
  EXPECT_EQ(upstream.requests()[0].target, "/metrics");
}

TEST(OutboundConnection, ARequestOnAConnectionTheEngineDroppedIsSentAgainOnANewOne) {
  test::FakeUpstream upstream;
  upstream.push(test::Respond{.body = "a"});
  upstream.push(test::CloseImmediately{});  // the kept connection: closed with no answer
  upstream.push(test::Respond{.body = "b"});
  const auto answers = run(upstream.port(), 2);
  ASSERT_EQ(answers.size(), 2u);
  EXPECT_EQ(answers[1].failure, OutboundFailure::kNone) << outbound_failure_name(answers[1].failure);
  EXPECT_EQ(answers[1].response.body(), "b");
  EXPECT_TRUE(answers[1].connected) << "a new connection for the second request";
  EXPECT_EQ(upstream.total_connections(), 2u) << upstream.describe();
}

TEST(OutboundConnection, ConnectionCloseIsHonoured) {
  test::FakeUpstream upstream;
  upstream.push(test::Respond{.body = "a", .close_after = true});
  upstream.push(test::Respond{.body = "b"});
  const auto answers = run(upstream.port(), 2);
  ASSERT_EQ(answers.size(), 2u);
  EXPECT_EQ(answers[0].response.body(), "a");
  EXPECT_EQ(answers[1].response.body(), "b");
  EXPECT_TRUE(answers[1].connected);
  EXPECT_EQ(upstream.total_connections(), 2u) << upstream.describe();
}

TEST(OutboundConnection, ASlowAnswerIsATimeout) {
  test::FakeUpstream upstream;
  upstream.push(test::Respond{.body = "late", .header_delay = Millis(2'000)});
  const auto answers = run(upstream.port(), 1, Millis(100));
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].failure, OutboundFailure::kTimeout) << outbound_failure_name(answers[0].failure);
  EXPECT_EQ(outbound_failure_name(answers[0].failure), "timeout");
}

TEST(OutboundConnection, ARefusedConnectionSaysSo) {
  uint16_t port = 0;
  {
    net::io_context ioc;
    tcp::acceptor acceptor(ioc, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
    port = acceptor.local_endpoint().port();
  }  // closed: nothing listens there now
  const auto answers = run(port, 1);
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].failure, OutboundFailure::kConnect) << outbound_failure_name(answers[0].failure);
  EXPECT_FALSE(answers[0].connected);
}

TEST(OutboundConnection, CloseEndsAHungRequestAtOnce) {
  test::FakeUpstream upstream;
  upstream.push(test::Hang{});
  net::io_context ioc;
  const auto connection =
      std::make_shared<OutboundConnection>(ioc.get_executor(), "127.0.0.1", upstream.port(), nullptr);
  std::optional<OutboundResponse> answer;
  net::co_spawn(
      ioc, [&]() -> Task<void> { answer = co_await connection->request(get_metrics(), Millis(60'000), 1 << 20); },
      net::detached);
  // Once the engine has the request, close from the connection's executor.
  for (int i = 0; i < 1'000 && !upstream.wait_for_requests(1, Millis(10)); ++i) ioc.run_for(Millis(10));
  net::post(ioc, [&] { connection->close(); });
  ioc.run_for(std::chrono::seconds(10));
  ASSERT_TRUE(answer.has_value()) << "the request ended";
  EXPECT_EQ(answer->failure, OutboundFailure::kClosed) << outbound_failure_name(answer->failure);
}

TEST(OutboundConnection, IpLiteralsNeedNoResolving) {
  EXPECT_EQ(literal_endpoint("127.0.0.1", 8000), tcp::endpoint(net::ip::make_address("127.0.0.1"), 8000));
  // As a URL's host comes (boost::urls: "[::1]" for http://[::1]:8000), and bare.
  EXPECT_EQ(literal_endpoint("[::1]", 8000), tcp::endpoint(net::ip::make_address("::1"), 8000));
  EXPECT_EQ(literal_endpoint("::1", 8000), tcp::endpoint(net::ip::make_address("::1"), 8000));
  EXPECT_FALSE(literal_endpoint("engine.internal", 8000));
  EXPECT_FALSE(literal_endpoint("[]", 8000));
}

TEST(OutboundConnection, FailureNames) {
  EXPECT_EQ(outbound_failure_name(OutboundFailure::kNone), "");
  EXPECT_EQ(outbound_failure_name(OutboundFailure::kResolve), "resolve");
  EXPECT_EQ(outbound_failure_name(OutboundFailure::kTls), "tls");
  EXPECT_EQ(outbound_failure_name(OutboundFailure::kRead), "read");
}

}  // namespace
}  // namespace arbiter
