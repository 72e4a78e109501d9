// Cancel storms (issue 4): requests sharing a supersede key replace each
// other in the gateway's queue, so a burst of keystrokes reaches the engine
// as one request; the replaced clients get 409 `superseded` and are told not
// to retry.
#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <future>
#include <vector>

#include "support/harness.hpp"
#include "support/http_client.hpp"
#include "support/requests.hpp"

namespace arbiter::test {
namespace {

// A completion class whose debounce is long enough for a noisy machine to
// send the whole burst inside it.
GatewayConfig storm_config() {
  GatewayConfig c;
  c.extra =
      "classes:\n"
      "  - {name: completion, match: {routes: [/v1/completions]}, max_tokens_cap: 128,\n"
      "     debounce_ms: 1500, supersede_by_user: true}\n"
      "  - {name: chat, match: {routes: [/v1/chat/completions]}}\n";
  return c;
}

HttpRequest keyed(const std::string& key, int n) {
  HttpRequest r = completion_request(completion_body(16));
  r.headers.emplace_back("x-arbiter-supersede-key", key);
  r.headers.emplace_back("x-test-seq", std::to_string(n));
  return r;
}

TEST(Supersede, KeystrokeStormOfFiveReachesTheEngineAsOne) {
  Harness h(storm_config());
  std::vector<std::future<HttpResponse>> answers;
  for (int i = 0; i < 5; ++i) {
    answers.push_back(std::async(std::launch::async, [&h, i] {
      return http_call(h.port(), keyed("editor-7", i));
    }));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // typing, in order
  }
  int served = 0;
  int superseded = 0;
  for (auto& f : answers) {
    const HttpResponse r = f.get();
    if (r.status == 200) {
      ++served;
    } else {
      ASSERT_EQ(r.status, 409) << r.body;
      EXPECT_EQ(boost::json::parse(r.body).at("error").at("code"), "superseded");
      EXPECT_EQ(r.header("x-should-retry"), std::optional<std::string>("false"));
      ++superseded;
    }
  }
  EXPECT_EQ(served, 1);
  EXPECT_EQ(superseded, 4);
  ASSERT_EQ(h.upstream().request_count(), 1u) << h.upstream().describe();
  EXPECT_EQ(h.wait_for_metric("arbiter_scheduler_events_total", 4, Millis(2000),
                              {{"class", "completion"}, {"event", "superseded_queued"}}),
            4);
  EXPECT_EQ(h.wait_for_metric("arbiter_requests_in_flight", 0, Millis(2000)), 0);
}

TEST(Supersede, DifferentKeysDoNotReplaceEachOther) {
  Harness h(storm_config());
  auto a = std::async(std::launch::async, [&h] { return http_call(h.port(), keyed("editor-1", 0)); });
  auto b = std::async(std::launch::async, [&h] { return http_call(h.port(), keyed("editor-2", 1)); });
  EXPECT_EQ(a.get().status, 200);
  EXPECT_EQ(b.get().status, 200);
  EXPECT_EQ(h.upstream().request_count(), 2u);
}

}  // namespace
}  // namespace arbiter::test
