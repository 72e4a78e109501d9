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
// send the whole burst inside it (and a queue deadline above that: the
// built-in completion class it starts from allows 1 s). The hold is fixed:
// the built-in's adaptive debounce would start a key's first requests at
// once, before it knows the key's rhythm.
GatewayConfig storm_config() {
  GatewayConfig c;
  c.extra =
      "classes:\n"
      "  - {name: completion, match: {routes: [/v1/completions]}, max_tokens_cap: 128,\n"
      "     debounce_ms: 1500, adaptive_debounce: false, max_queue_wait_ms: 5000, supersede_by_user: true}\n"
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
    // Typing, in order: each keystroke is in the gateway (queued, or
    // having replaced the one before) before the next is sent, so which is
    // the newest does not depend on how threads are scheduled. Each is held
    // for the 1.5 s debounce from its arrival, far longer than this takes.
    if (i == 0) {
      ASSERT_EQ(h.wait_for_metric("arbiter_queue_depth", 1, Millis(10'000), {{"class", "completion"}}), 1);
    } else {
      ASSERT_EQ(h.wait_for_metric("arbiter_scheduler_events_total", i, Millis(10'000),
                                  {{"class", "completion"}, {"event", "superseded_queued"}}),
                i);
    }
  }
  int served = 0;
  int superseded = 0;
  for (std::size_t i = 0; i < answers.size(); ++i) {
    const HttpResponse r = answers[i].get();
    if (r.status == 200) {
      ++served;
      EXPECT_EQ(i, answers.size() - 1) << "the newest keystroke is the one served, not keystroke " << i;
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
  // The engine got the newest keystroke (its x-test-seq, forwarded as sent).
  EXPECT_EQ(h.upstream().requests()[0].header("x-test-seq"), std::optional<std::string>("4"))
      << h.upstream().describe();
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

// A completion for `user` whose prompt is `prompt`.
HttpRequest for_user(const std::string& user, const std::string& prompt, int n) {
  HttpRequest r = completion_request(R"({"model":"m1","max_tokens":16,"user":")" + user + R"(","prompt":")" +
                                     prompt + R"("})");
  r.headers.emplace_back("x-test-seq", std::to_string(n));
  return r;
}

TEST(Supersede, OneUsersRequestsOnDifferentPromptsDoNotReplaceEachOther) {
  // A service account sends four different prompts with one `user`: all
  // four are answered (they replaced each other when `user` alone was the key).
  Harness h(storm_config());
  std::vector<std::future<HttpResponse>> answers;
  for (int i = 0; i < 4; ++i) {
    answers.push_back(std::async(std::launch::async, [&h, i] {
      return http_call(h.port(), for_user("svc", "Summarise ticket " + std::to_string(i) + std::string(600, '.'), i));
    }));
  }
  for (auto& f : answers) EXPECT_EQ(f.get().status, 200);
  EXPECT_EQ(h.upstream().request_count(), 4u);
}

TEST(Supersede, OneUsersKeystrokesInOneFileStillReplaceEachOther) {
  Harness h(storm_config());
  const std::string file = "def main():\\n" + std::string(600, 'x');
  auto first = std::async(std::launch::async, [&] { return http_call(h.port(), for_user("dev-1", file + "pri", 0)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const HttpResponse second = http_call(h.port(), for_user("dev-1", file + "print(", 1));
  EXPECT_EQ(second.status, 200);
  EXPECT_EQ(first.get().status, 409);
  EXPECT_EQ(h.upstream().request_count(), 1u);
}

TEST(Supersede, AnonymousClientsCannotReplaceEachOthersRequests) {
  // Auth off: every keyless client is the same (anonymous) tenant. Another
  // client (another address) with the same key, or the same `user`, must
  // not cancel this one; the same client still replaces its own.
  GatewayConfig config = storm_config();
  config.auth = false;
  Harness h(config);
  const auto send = [&](const std::string& source, HttpRequest req) {
    std::erase_if(req.headers, [](const auto& f) { return f.first == "authorization"; });  // keyless
    auto conn = std::make_shared<HttpConnection>(h.port(), source);
    conn->send(req);
    return conn;
  };
  auto mine = send("127.0.0.1", keyed("editor-7", 0));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto other = send("127.0.0.2", keyed("editor-7", 1));
  auto other_user = send("127.0.0.2", for_user("anyone", "same prompt" + std::string(600, '.'), 2));
  auto mine_user = send("127.0.0.1", for_user("anyone", "same prompt" + std::string(600, '.'), 3));
  EXPECT_EQ(other->read_head(Millis(10'000)).status, 200);
  EXPECT_EQ(mine->read_head(Millis(10'000)).status, 200) << "another client's key replaced this request";
  EXPECT_EQ(other_user->read_head(Millis(10'000)).status, 200);
  EXPECT_EQ(mine_user->read_head(Millis(10'000)).status, 200) << "`user` replaced an anonymous request";

  auto again = send("127.0.0.1", keyed("editor-7", 4));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto newer = send("127.0.0.1", keyed("editor-7", 5));
  EXPECT_EQ(again->read_head(Millis(10'000)).status, 409);
  EXPECT_EQ(newer->read_head(Millis(10'000)).status, 200);
}

}  // namespace
}  // namespace arbiter::test
