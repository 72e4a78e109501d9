// What a request's body costs while it is handled, against arbiter-sim: a
// queued request holds it (a retry or a preemption sends it again), a stream
// whose answer began lets go of it, unless a preemption may resume it. Read
// from arbiter_request_body_bytes, the gauge an operator sizes memory by.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "integration/sim_harness.hpp"
#include "support/gateway_config.hpp"
#include "support/gateway_process.hpp"
#include "support/harness.hpp"  // describe_output
#include "support/requests.hpp"

namespace arbiter::test::request_body_test {
namespace {

// One slot, so a second request queues; `batch` may be preempted and resumed.
GatewayConfig one_slot(uint16_t sim_port) {
  GatewayConfig c;
  c.backend_ports = {sim_port};
  c.max_concurrency = 1;
  c.backend_extra = ", continue_final_message: true";
  c.alpha_classes = "[batch, chat]";
  c.extra =
      "classes:\n"
      "  - {name: chat}\n"
      "  - {name: batch, preemptible: true, max_queue_wait_ms: 600000}\n"
      "default_class: chat\n";
  return c;
}

// A long streamed chat whose prompt is ~16 KiB of words.
std::string long_stream() {
  std::string prompt;
  while (prompt.size() < 16 * 1024) prompt += "context ";
  return sim_chat(R"("max_tokens":3000,"min_tokens":3000,"stream":true)", prompt, "m1");
}

std::optional<double> body_bytes(const GatewayProcess& gateway) {
  return metric_value(http_get(gateway.admin_port(), "/metrics").body, "arbiter_request_body_bytes");
}

TEST(RequestBody, AStreamLetsGoOfItsBodyWhenItsAnswerBeginsAndAQueuedOneHoldsItsOwn) {
  SimProcess sim({"--profile", "llama-8b-a100", "--model", "m1"});
  GatewayProcess gateway(one_slot(sim.port()).to_yaml());
  const std::string body = long_stream();
  const auto size = static_cast<double>(body.size());

  HttpConnection running(gateway.port());
  running.send(gateway_post("/v1/chat/completions", body, kAlphaKey, "chat"));
  ASSERT_EQ(running.read_head(Millis(10'000)).status, 200) << describe_output(gateway);
  ASSERT_GE(running.read_events(3, Millis(10'000)).size(), 3u);
  EXPECT_EQ(body_bytes(gateway), 0) << "an open stream that nothing sends again holds no body";

  // The slot is taken: this one waits, with its body.
  HttpConnection queued(gateway.port());
  queued.send(gateway_post("/v1/chat/completions", body, kAlphaKey, "chat"));
  EXPECT_EQ(gateway.wait_for_metric("arbiter_request_body_bytes", [&](double v) { return v == size; }, Millis(5'000)),
            size);

  running.close_abruptly();
  queued.close_abruptly();
  EXPECT_EQ(gateway.wait_for_metric("arbiter_request_body_bytes", [](double v) { return v == 0; }, Millis(10'000)), 0);
}

TEST(RequestBody, AStreamAPreemptionMayResumeKeepsItsBodyToItsEnd) {
  SimProcess sim({"--profile", "llama-8b-a100", "--model", "m1"});
  GatewayProcess gateway(one_slot(sim.port()).to_yaml());
  const std::string body = long_stream();

  HttpConnection batch(gateway.port());
  batch.send(gateway_post("/v1/chat/completions", body, kAlphaKey, "batch"));
  ASSERT_EQ(batch.read_head(Millis(10'000)).status, 200) << describe_output(gateway);
  ASSERT_GE(batch.read_events(3, Millis(10'000)).size(), 3u);
  EXPECT_EQ(body_bytes(gateway), static_cast<double>(body.size())) << "a resumed run sends it again";

  batch.close_abruptly();
  EXPECT_EQ(gateway.wait_for_metric("arbiter_request_body_bytes", [](double v) { return v == 0; }, Millis(10'000)), 0);
}

}  // namespace
}  // namespace arbiter::test::request_body_test
