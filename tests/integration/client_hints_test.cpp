// Client hints through a real gateway (docs/configuration.md, "Client
// hints"): a request's x-slo-ttft-ms puts it ahead of its class's queue,
// its x-priority reaches the engine as vLLM `priority`, both bounded by its
// tenant's allowance; neither header is passed on; a malformed one is 400.
// The one backend slot is held by a slow first answer, so the order the
// fake engine receives the queued requests in is the gateway's.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <future>
#include <string>
#include <vector>

#include "support/harness.hpp"
#include "support/http_client.hpp"
#include "support/requests.hpp"

namespace arbiter::test {
namespace {

// A chat request marked by its max_tokens (the upstream tells them apart
// by it), with `hints` as extra headers, sent on its own thread.
std::future<HttpResponse> chat_async(uint16_t port, int marker, Headers hints = {}) {
  HttpRequest request = chat_request(chat_body(false, marker));
  for (auto& h : hints) request.headers.push_back(std::move(h));
  return std::async(std::launch::async,
                    [port, request] { return http_call(port, request, Millis(30'000)); });
}

TEST(ClientHints, AHintedRequestGoesAheadAndItsEngineGetsItsPriority) {
  // alpha may raise a request one step above its class and claim a TTFT
  // down to 100 ms; chat's own are priority 2 and 2 s.
  Harness h(GatewayConfig{.max_concurrency = 1,
                          .alpha_extra = ", max_priority_raise: 1, min_ttft_hint_ms: 100",
                          .backend_extra = ", priority_scheduling: true"});
  h.upstream().push(Respond{.body = chat_completion_body(), .header_delay = Millis(1'000)});
  auto running = chat_async(h.port(), 11);
  ASSERT_TRUE(h.upstream().wait_for_requests(1, Millis(5'000)));
  auto plain = chat_async(h.port(), 12);
  ASSERT_EQ(h.wait_for_metric("arbiter_queue_depth", 1, Millis(5'000), {{"class", "chat"}}), 1.0);
  // Asks priority 0, two above chat's: held to 1 (and told so).
  auto urgent = chat_async(h.port(), 13, {{"x-slo-ttft-ms", "300"}, {"x-priority", "0"}});
  ASSERT_EQ(h.wait_for_metric("arbiter_queue_depth", 2, Millis(5'000), {{"class", "chat"}}), 2.0);

  for (auto* call : {&running, &plain, &urgent}) ASSERT_EQ(call->get().status, 200);
  ASSERT_TRUE(h.upstream().wait_for_requests(3, Millis(5'000)));
  const auto received = h.upstream().requests();
  std::vector<int64_t> order, priorities;
  for (const RecordedRequest& r : received) {
    const auto body = boost::json::parse(r.body).as_object();
    order.push_back(body.at("max_tokens").as_int64());
    priorities.push_back(body.at("priority").as_int64());
    EXPECT_FALSE(r.header("x-slo-ttft-ms").has_value()) << "a hint was passed on";
    EXPECT_FALSE(r.header("x-priority").has_value()) << "a hint was passed on";
  }
  EXPECT_EQ(order,
            (std::vector<int64_t>{11, 13, 12}));  // the hinted one before the one queued first
  EXPECT_EQ(priorities, (std::vector<int64_t>{2, 1, 2}));
  EXPECT_EQ(h.metric("arbiter_client_hints_total", {{"hint", "ttft"}, {"outcome", "used"}}), 1.0);
  EXPECT_EQ(h.metric("arbiter_client_hints_total", {{"hint", "priority"}, {"outcome", "clamped"}}),
            1.0);
}

TEST(ClientHints, ByDefaultAHintCannotRaiseARequestAboveItsClass) {
  Harness h(GatewayConfig{.backend_extra = ", priority_scheduling: true"});
  const HttpResponse r =
      chat_async(h.port(), 10, {{"x-priority", "-5"}, {"x-slo-ttft-ms", "50"}}).get();
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("x-arbiter-hints-clamped").value_or("(none)"), "priority, ttft");
  ASSERT_EQ(h.upstream().request_count(), 1u);
  EXPECT_EQ(boost::json::parse(h.upstream().requests()[0].body).as_object().at("priority"), 2);
  // A request that lowers itself gets what it asked for, silently.
  const HttpResponse lower = chat_async(h.port(), 10, {{"x-priority", "7"}}).get();
  ASSERT_EQ(lower.status, 200) << lower.body;
  EXPECT_FALSE(lower.header("x-arbiter-hints-clamped").has_value());
  EXPECT_EQ(boost::json::parse(h.upstream().requests()[1].body).as_object().at("priority"), 7);
}

TEST(ClientHints, AMalformedHintIsA400ThatNamesTheHeader) {
  Harness h;
  for (const auto& [header, value] :
       {std::pair{"x-slo-ttft-ms", "soon"}, std::pair{"x-priority", "1.5"}}) {
    SCOPED_TRACE(header);
    const HttpResponse r = chat_async(h.port(), 10, {{header, value}}).get();
    ASSERT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(r.json().at("error").at("param"), header);
    EXPECT_EQ(r.json().at("error").at("type"), "invalid_request_error");
  }
  EXPECT_EQ(h.upstream().request_count(), 0u);
  EXPECT_EQ(h.metric("arbiter_client_hints_total", {{"hint", "ttft"}, {"outcome", "invalid"}}),
            1.0);
}

}  // namespace
}  // namespace arbiter::test
