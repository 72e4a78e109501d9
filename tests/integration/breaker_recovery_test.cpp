// A model whose only engine fails every request, then comes back (issue 40
// defect 5): the breaker opens, its back-off here a minute; the gateway
// probes the model's backends while it is open, and the first probe that
// succeeds ends the opening into half-open trials. On 0807ff3 the model
// answered no 200 until the back-off ran out (15 s in the drill with the
// defaults; here 60 s, past the test's wait).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "support/harness.hpp"
#include "support/http_client.hpp"
#include "support/requests.hpp"

namespace arbiter::test {
namespace {

TEST(BreakerRecovery, AProbeThatSucceedsEndsTheModelsOpening) {
  GatewayConfig cfg;
  cfg.extra = "model_breaker: {base_open_ms: 60000}\noutlier_detection: {enabled: false}\nretries: {max_retries: 0}\n";
  Harness h(cfg);
  std::atomic<bool> failing{true};
  h.upstream().set_handler([&](const RecordedRequest&) -> Behaviour {
    if (failing) return Respond{.status = 500, .body = R"({"error":{"message":"engine crashed"}})"};
    return Respond{.status = 200, .body = chat_completion_body()};
  });
  int isolated_at = -1;
  for (int i = 0; i < 40 && isolated_at < 0; ++i) {
    const HttpResponse r = http_call(h.port(), chat_request(chat_body()));
    ASSERT_GE(r.status, 500) << r.body;
    if (r.status == 503 && r.body.find("isolated") != std::string::npos) isolated_at = i;
  }
  ASSERT_GE(isolated_at, 0) << "the breaker did not isolate the model\n" << describe_output(h.gateway());
  EXPECT_EQ(h.metric("arbiter_model_breaker_stage", {{"model", "m1"}, {"stage", "isolated"}}), 1);

  failing = false;  // the engine is restarted, healthy
  const auto deadline = Clock::now() + Millis(20'000);
  int status = 0;
  while (status != 200 && Clock::now() < deadline) {
    status = http_call(h.port(), chat_request(chat_body())).status;
    if (status != 200) std::this_thread::sleep_for(Millis(100));
  }
  EXPECT_EQ(status, 200) << "the model stayed open though its engine answered probes\n"
                         << describe_output(h.gateway());
  EXPECT_NE(h.gateway().stderr_text().find("\"half_open\":true"), std::string::npos);
}

}  // namespace
}  // namespace arbiter::test
